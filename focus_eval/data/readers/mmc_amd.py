"""Reader for MMC-AMD (Wang et al., MICCAI 2019 and arXiv:2012.01879): colour fundus photographs and OCT B-scans
of eyes in four categories, normal, dry AMD, polypoidal choroidal vasculopathy (PCV) and wet AMD. The release
is a collection folder ``mmc-amd/ImageData/cfp-clahe-448x448/f-*.jpg`` and ``.../oct-median3x3-448x448/o-*.jpg``
beside one folder per split of one of two published splits, ``mmc-amd-splitAP-<train|val|test>/`` (no patient
in two splits) or ``mmc-amd-splitA-<...>/`` (no eye in two splits). A split folder lists its images per
modality in ``ImageSets/<cfp|oct>.txt`` (one image id per line, the file name without ``.jpg``) and their
categories in ``annotations/<cfp|oct>.txt`` (a line per image in the same order; its last token is the
category: 0 normal, 1 dry AMD, 2 PCV, 3 wet AMD). ``EyeSets`` and ``SubjectSets`` list the split's eye and
subject ids as sets, not per image, so they are not read.

An image id is ``<f|o>-<h|d|p|w>-<eye>_<n>``: the modality, the category letter (checked against the
annotation) and the eye. The eye (letter and number) is the group id: subject ids are not linked to images.
The splitAP split is read where present (it keeps patients apart), else splitA, with a warning.

Labels: ``conditions`` is the category (normal, dry_amd, pcv, wet_amd), ``abnormal`` 0 for normal and 1
otherwise; ``modality`` is cfp or oct per image. There is no screening target.
"""

from __future__ import annotations

from pathlib import Path

from focus_eval.data.files import find_dirs
from focus_eval.data.matching import add_image, usable_file
from focus_eval.data.records import NORMAL, DatasetLoad, Skipped
from focus_eval.data.spec import ReaderSpec
from focus_eval.errors import DataError

SPEC = ReaderSpec(
    name="mmc_amd",
    targets=(),
    group_key="eye (from the image id; the release's subject ids are not linked to images)",
    official_split=True,
    # the splitAP test set as the release counts it: 80 colour fundus photographs and 131 OCT B-scans
    documented_counts={"test": {"n": 211}},
    label_rules={
        "conditions": "annotation category 0 -> normal, 1 -> dry_amd, 2 -> pcv, 3 -> wet_amd",
        "abnormal": "category 0 -> 0; 1, 2, 3 -> 1",
        "modality": "ImageSets/cfp.txt -> cfp, ImageSets/oct.txt -> oct",
    },
)

CATEGORIES = ("normal", "dry_amd", "pcv", "wet_amd")  # annotation 0..3
LETTERS = {"h": 0, "d": 1, "p": 2, "w": 3}  # the category letter of an image id
MODALITY_FOLDERS = {"cfp": "cfp-clahe-448x448", "oct": "oct-median3x3-448x448"}
SPLITS = ("train", "val", "test")
SPLIT_VERSIONS = ("mmc-amd-splitAP", "mmc-amd-splitA")


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    version, warnings = _version(folder)
    load = SPEC.new_load(folder, warnings)
    images = {m: _image_folder(folder, name) for m, name in MODALITY_FOLDERS.items()}
    label_files = {}
    for split in SPLITS:
        split_dir = _split_folder(folder, f"{version}-{split}")
        for modality in MODALITY_FOLDERS:
            ids = _lines(split_dir / "ImageSets" / f"{modality}.txt")
            annotations = split_dir / "annotations" / f"{modality}.txt"
            categories = _categories(annotations, ids)
            label_files[f"{split}/{modality}"] = annotations.relative_to(folder).as_posix()
            for image_id, category in zip(ids, categories):
                _add(load, folder, images[modality], image_id, category, modality, split)
    if not load.records and not load.skipped:
        raise DataError(f"no images listed under {folder}/{version}-*/ImageSets/", file=str(folder))
    extra = {} if version == SPLIT_VERSIONS[0] else {"documented_counts": {}}  # splitA's figures are not published
    return SPEC.finish_load(load, label_files, split_version=version, **extra)


def _version(folder: Path) -> tuple[str, list[str]]:
    """The split to read: splitAP (patient-disjoint) if its test folder exists, else splitA."""
    for version in SPLIT_VERSIONS:
        if find_dirs(folder, [f"{version}-test"]):
            warnings = [] if version == SPLIT_VERSIONS[0] else [
                f"{SPLIT_VERSIONS[0]} not found; reading {version}, whose split keeps eyes but not patients apart"]
            return version, warnings
    raise DataError(f"no split folders found; expected {folder}/mmc-amd-splitAP-test/ (or mmc-amd-splitA-test/) "
                    "with ImageSets/ and annotations/", file=str(folder))


def _split_folder(folder: Path, name: str) -> Path:
    found = find_dirs(folder, [name])
    if not found:
        raise DataError(f"split folder {name}/ not found under {folder}", file=str(folder))
    return found[0]


def _image_folder(folder: Path, name: str) -> Path:
    """``mmc-amd/ImageData/<name>``, else the first folder of that name below ``folder``."""
    direct = folder / "mmc-amd" / "ImageData" / name
    found = [direct] if direct.is_dir() else find_dirs(folder, [name])
    if not found:
        raise DataError(f"image folder {name}/ not found; expected {direct}", file=str(folder))
    return found[0]


def _lines(path: Path) -> list[str]:
    if not path.is_file():
        raise DataError(f"list file not found: {path}", file=str(path))
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _categories(path: Path, ids: list[str]) -> list[int]:
    """The category of each listed image: the annotation line in the same place, its last token (a line that
    also names an image must name that one), checked against the letter in the image id."""
    lines = _lines(path)
    if len(lines) != len(ids):
        raise DataError(f"{len(lines)} annotation lines for {len(ids)} listed images", file=str(path))
    out = []
    for row, (line, image_id) in enumerate(zip(lines, ids), start=1):
        tokens = line.split()
        if len(tokens) > 1 and tokens[0] != image_id:
            raise DataError(f"annotation names {tokens[0]!r} where ImageSets lists {image_id!r}", file=str(path),
                            row=row)
        if tokens[-1] not in ("0", "1", "2", "3"):
            raise DataError(f"category {tokens[-1]!r} is not 0, 1, 2 or 3", file=str(path), row=row)
        category = int(tokens[-1])
        letter = image_id.split("-")[1] if image_id.count("-") >= 2 else None
        if letter in LETTERS and LETTERS[letter] != category:
            raise DataError(f"image {image_id} is category {category} but its id says {letter!r}", file=str(path),
                            row=row)
        out.append(category)
    return out


def _add(load: DatasetLoad, folder: Path, images: Path, image_id: str, category: int, modality: str,
         split: str) -> None:
    parts = image_id.split("-", 2)
    if len(parts) != 3 or parts[1] not in LETTERS:
        reason = f"image id {image_id} is not <f|o>-<h|d|p|w>-<eye>"
        load.skipped.append(Skipped(str(images), None, image_id, reason))
        return
    eye = f"{parts[1]}-{parts[2].split('_')[0]}"
    name = CATEGORIES[category]
    fields = {"patient_id": eye, "split": split, "abnormal": int(category != 0),
              "conditions": (NORMAL if category == 0 else name,), "modality": modality,
              "extra": {"category": name, "eye_id": eye}}
    path = images / f"{image_id}.jpg"
    if not path.is_file():
        load.skipped.append(Skipped(str(images), None, image_id, f"image file {path.name} not found"))
        return
    add_image(load, folder.resolve(), usable_file(folder, path, images, None, image_id), image_id, fields)

"""Reader for IDRiD part A (Segmentation): lesion and optic disc masks per image, official train/test split.
It reads the same DATA_ROOT/idrid/ folder as the part-B reader (one download holds parts A, B and C).

Raw layout, inside ``A. Segmentation/`` (found at any depth by its ground-truth folder)::

    1. Original Images/a. Training Set/IDRiD_01.jpg ... (54)    b. Testing Set/IDRiD_55.jpg ... (27)
    2. All Segmentation Groundtruths/a. Training Set/1. Microaneurysms/IDRiD_01_MA.tif
                                                    2. Haemorrhages/IDRiD_01_HE.tif
                                                    3. Hard Exudates/IDRiD_01_EX.tif
                                                    4. Soft Exudates/IDRiD_01_SE.tif
                                                    5. Optic Disc/IDRiD_01_OD.tif
                                     b. Testing Set/...

The release leaves out the mask of a lesion an image does not have (soft exudates and haemorrhages are
missing for many images): a missing file in a present lesion folder means the lesion is absent; a missing
lesion folder leaves that lesion unannotated (with a warning). Fields from ``focus_eval.data.lesion_geometry``:
findings, lesion_size and lesion_count per lesion (microaneurysm, hemorrhage, hard_exudate, cotton_wool_spot)
and, where the optic disc mask gives a disc centre, lesion_quadrants (no fovea in part A: the nasal side is
the side of the disc away from the image centre). No binary target.
"""

from __future__ import annotations

from pathlib import Path

from focus_eval.data.files import admitted, find_dirs, image_files, is_image_name, relative_to
from focus_eval.data.lesion_geometry import centroid, image_lesion_fields, image_shape, read_masks
from focus_eval.data.matching import add_image, usable_file
from focus_eval.data.records import DatasetLoad
from focus_eval.data.spec import ReaderSpec
from focus_eval.errors import DataError

PART = "A. Segmentation"
SPEC = ReaderSpec(
    name="idrid_seg",
    targets=(),
    official_split=True,
    group_key="image (no patient id; official train/test split)",
    documented_counts={"train": {"n": 54}, "test": {"n": 27}},
    folder="idrid",
    part=PART,
)

ORIGINALS = "1. Original Images"
TRUTHS = "2. All Segmentation Groundtruths"
SPLIT_DIRS = {"train": "a. Training Set", "test": "b. Testing Set"}
# lesion (the project's finding name) -> (mask folder, file-name suffix)
LESIONS = {"microaneurysm": ("1. Microaneurysms", "MA"), "hemorrhage": ("2. Haemorrhages", "HE"),
           "hard_exudate": ("3. Hard Exudates", "EX"), "cotton_wool_spot": ("4. Soft Exudates", "SE")}
DISC = ("5. Optic Disc", "OD")


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    truths = find_dirs(folder, (TRUTHS,))
    if not truths:
        raise DataError(f"no IDRiD segmentation ground truths found; expected {PART}/{TRUTHS}/ somewhere under "
                        f"{folder}", file=str(folder))
    part = truths[0].parent
    load = SPEC.new_load(folder)
    for split, split_dir in SPLIT_DIRS.items():
        image_dir = _one_dir(part / ORIGINALS, split_dir)
        _read_split(folder, split, image_dir, _one_dir(truths[0], split_dir), load)
    return SPEC.finish_load(load, relative_to(folder, truths[0]))


def _one_dir(parent: Path, name: str) -> Path:
    found = [p for p in (parent.iterdir() if parent.is_dir() else ()) if p.is_dir() and p.name.lower() == name.lower()]
    if not found:
        raise DataError(f"no folder {name!r} found in {parent}", file=str(parent))
    return found[0]


def _mask_files(truth_dir: Path, load: DatasetLoad) -> dict[str, dict[str, Path] | None]:
    """Lesion (and "disc") -> lower-cased image name -> mask file; None for a lesion whose folder is absent."""
    out: dict[str, dict[str, Path] | None] = {}
    for lesion, (name, suffix) in {**LESIONS, "disc": DISC}.items():
        folders = [p for p in truth_dir.iterdir() if p.is_dir() and p.name.lower() == name.lower()]
        if not folders:
            load.warnings.append(f"{truth_dir}: no {name!r} folder; {lesion} is not annotated for these images")
            out[lesion] = None
            continue
        tail = f"_{suffix.lower()}"
        out[lesion] = {p.stem.lower()[: -len(tail)]: p for p in admitted(folders[0].iterdir())
                       if is_image_name(p.name) and p.stem.lower().endswith(tail)}
    return out


def _read_split(folder: Path, split: str, image_dir: Path, truth_dir: Path, load: DatasetLoad) -> None:
    masks = _mask_files(truth_dir, load)
    images = sorted(image_files(image_dir)[0].values(), key=lambda p: p.name.lower())
    for path in images:
        stem, image_id = path.stem.lower(), f"{split}/{path.stem}"
        found = usable_file(folder, path, path, None, image_id)
        if not isinstance(found, Path):
            add_image(load, folder, found, image_id, {})
            continue
        disc_file = (masks["disc"] or {}).get(stem)
        # the disc mask must have its image's size too: its centre places every lesion
        disc = centroid(read_masks({"optic disc": disc_file}, image_shape(found))["optic disc"]) \
            if disc_file is not None else None
        paths = {lesion: masks[lesion].get(stem) for lesion in LESIONS if masks[lesion] is not None}
        fields = image_lesion_fields(found, paths, disc=disc)
        add_image(load, folder, found, image_id,
                  dict(split=split, modality="cfp", extra={"disc_centre": disc}, **fields), origin=str(path))
    known = {p.stem.lower() for p in images}
    stray = sorted({n for files in masks.values() if files for n in files} - known)
    if stray:
        load.warnings.append(f"{truth_dir}: {len(stray)} mask name(s) have no image in {image_dir} "
                             f"(e.g. {stray[0]}); not read")

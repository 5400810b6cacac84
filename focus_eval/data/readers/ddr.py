"""Reader for DDR (Li et al. 2019): its DR grading part and its lesion segmentation part, official
train/valid/test split (valid read as val).

Raw layout, inside ``DDR-dataset/`` (each part found at any depth by its folder name)::

    DR_grading/train.txt, valid.txt, test.txt      one "<image name> <grade>" line per image
    DR_grading/train/, valid/, test/               the images
    lesion_segmentation/<split>/image/<name>.jpg
    lesion_segmentation/<split>/label/EX|HE|MA|SE/<name>.tif   (valid: "segmentation label/" in the release)

Grading images (ids ``grading/<split folder>/<stem>``): grade 0-4 is the ICDR grade (dr_grade; dr = grade >= 1;
referable_dr by the shared rule without a macular-edema grade, so 1 for grade >= 2 and undefined below;
quality adequate); grade 5 is DDR's ungradable class: dr_grade 5 (the sixth class of the DDR grading task),
dr and referable_dr undefined, quality inadequate. Lesion images (ids ``lesion/<split folder>/<stem>``):
findings, lesion_size and lesion_count for microaneurysm (MA), hemorrhage (HE), hard_exudate (EX) and
cotton_wool_spot (SE, soft exudates) from ``focus_eval.data.lesion_geometry``; a mask file missing from a
present lesion folder means the lesion is absent, a missing lesion folder leaves the lesion unannotated. No
optic disc in DDR, so no lesion positions. No patient id: each image is its own group.
"""

from __future__ import annotations

from pathlib import Path

from focus_eval.data.cells import clean_id, dr_present, parse_grade, referable_dr
from focus_eval.data.files import admitted, find_dirs, image_files, is_image_name, relative_to
from focus_eval.data.lesion_geometry import image_lesion_fields
from focus_eval.data.matching import ImageMatcher, Listed, add_image, read_rows, usable_file
from focus_eval.data.records import DatasetLoad
from focus_eval.data.spec import ReaderSpec
from focus_eval.errors import DataError

SPEC = ReaderSpec(
    name="ddr",
    targets=("dr",),
    official_split=True,
    group_key="image (DDR publishes no patient id; official train/valid/test split)",
    # The release states totals only (13,673 grading images, 757 lesion images), not per split: no check here.
)

GRADING, LESIONS_PART = "DR_grading", "lesion_segmentation"
SPLITS = {"train": "train", "valid": "val", "test": "test"}  # release folder -> split
UNGRADABLE = 5
GRADES = (0, 1, 2, 3, 4, UNGRADABLE)
LABEL_DIRS = ("label", "segmentation label")
LESIONS = {"microaneurysm": "MA", "hemorrhage": "HE", "hard_exudate": "EX", "cotton_wool_spot": "SE"}


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    grading, lesions = find_dirs(folder, (GRADING,)), find_dirs(folder, (LESIONS_PART,))
    if not grading and not lesions:
        raise DataError(f"no DDR part found; expected DDR-dataset/{GRADING}/ (with train.txt) or "
                        f"DDR-dataset/{LESIONS_PART}/ somewhere under {folder}", file=str(folder))
    load = SPEC.new_load(folder)
    label_files = []
    for part, read_part in ((grading, _read_grading), (lesions, _read_lesions)):
        if not part:
            name = GRADING if read_part is _read_grading else LESIONS_PART
            load.warnings.append(f"no {name}/ folder under {folder}: that part of DDR is not read")
            continue
        for release_split, split in SPLITS.items():
            label_files += read_part(folder, part[0], release_split, split, load)
    return SPEC.finish_load(load, label_files)


def _child(parent: Path, names: tuple[str, ...]) -> Path | None:
    wanted = {n.lower() for n in names}
    return next((p for p in sorted(parent.iterdir()) if p.is_dir() and p.name.lower() in wanted), None) \
        if parent.is_dir() else None


def _read_grading(folder: Path, part: Path, release_split: str, split: str, load: DatasetLoad) -> list[str]:
    label_file = part / f"{release_split}.txt"
    image_dir = _child(part, (release_split,))
    if not label_file.is_file() or image_dir is None:
        raise DataError(f"DDR grading {release_split}: expected {GRADING}/{release_split}.txt and the image "
                        f"folder {GRADING}/{release_split}/", file=str(part))
    lines = label_file.read_text(encoding="utf-8-sig").splitlines()
    rows = [(n, line.split()) for n, line in enumerate(lines, start=1) if line.strip()]

    def listed(item: tuple[int, list[str]]) -> Listed:
        line, cells = item
        if len(cells) != 2:
            raise DataError(f"expected '<image name> <grade>', got {' '.join(cells)!r}", file=str(label_file),
                            row=line)
        name = clean_id(cells[0], label_file, line, "image name")
        grade = parse_grade(cells[1], GRADES, label_file, line, "grade")
        gradable = grade != UNGRADABLE
        return Listed(name, f"grading/{release_split}/{Path(name).stem}", line, dict(
            split=split, modality="cfp", dr_grade=grade, quality="adequate" if gradable else "inadequate",
            dr=dr_present(grade) if gradable else None, referable_dr=referable_dr(grade, None) if gradable else None,
            extra={"ddr_grade": grade}))

    read_rows(load, ImageMatcher(folder, label_file, image_dir), rows, listed)
    return [relative_to(folder, label_file)]


def _read_lesions(folder: Path, part: Path, release_split: str, split: str, load: DatasetLoad) -> list[str]:
    split_dir = _child(part, (release_split,))
    image_dir = _child(split_dir, ("image",)) if split_dir else None
    label_dir = _child(split_dir, LABEL_DIRS) if split_dir else None
    if image_dir is None or label_dir is None:
        raise DataError(f"DDR lesion segmentation {release_split}: expected {LESIONS_PART}/{release_split}/image/ "
                        f"and {LESIONS_PART}/{release_split}/label/", file=str(part))
    masks = {}
    for lesion, code in LESIONS.items():
        lesion_dir = _child(label_dir, (code,))
        if lesion_dir is None:
            load.warnings.append(f"{label_dir}: no {code}/ folder; {lesion} is not annotated for these images")
            continue
        masks[lesion] = {p.stem.lower(): p for p in admitted(lesion_dir.iterdir()) if is_image_name(p.name)}
    for path in sorted(image_files(image_dir)[0].values(), key=lambda p: p.name.lower()):
        image_id = f"lesion/{release_split}/{path.stem}"
        found = usable_file(folder, path, path, None, image_id)
        fields = {}
        if isinstance(found, Path):
            paths = {lesion: files.get(path.stem.lower()) for lesion, files in masks.items()}
            fields = dict(split=split, modality="cfp", **image_lesion_fields(found, paths))
        add_image(load, folder, found, image_id, fields, origin=str(path))
    return [relative_to(folder, label_dir)]

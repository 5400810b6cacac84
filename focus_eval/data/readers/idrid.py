"""Reader for IDRiD part B (Disease Grading): official train/test split, ICDR grade and macular-edema risk.
Image names restart per split, so each split's images come only from that split's own folder."""

from __future__ import annotations

from pathlib import Path

from focus_eval.data.cells import clean_id, dr_present, parse_grade, referable_dr
from focus_eval.data.files import find_dir_near, find_label_file, relative_to, with_extension
from focus_eval.data.matching import ImageMatcher, Listed, read_rows
from focus_eval.data.records import DatasetLoad
from focus_eval.data.spec import ReaderSpec
from focus_eval.data.tables import read_csv_rows, resolve_columns
from focus_eval.errors import DataError

SPEC = ReaderSpec(
    name="idrid",
    targets=("dr", "referable_dr"),
    official_split=True,
    group_key="image (no patient id; official train/test split, names restart per split)",
    documented_counts={
        "train": {"n": 413, "dr_pos": 279, "referable_dr_pos": 259},
        "test": {"n": 103, "dr_pos": 69, "referable_dr_pos": 64},
    },
)

# Per split: (label file names, image folder names) inside "B. Disease Grading/", found at any depth
# because copies add an outer "B.%20Disease%20Grading/" or a doubled folder.
SPLITS = {
    "train": (("a. IDRiD_Disease Grading_Training Labels.csv", "IDRiD_Disease Grading_Training Labels.csv"),
              ("a. Training Set",)),
    "test": (("b. IDRiD_Disease Grading_Testing Labels.csv", "IDRiD_Disease Grading_Testing Labels.csv"),
             ("b. Testing Set",)),
}
EXPECTED_PATH = "B. Disease Grading/2. Groundtruths/{}"
COLUMNS = {
    "image": ("Image name",),
    "grade": ("Retinopathy grade",),
    "edema": ("Risk of macular edema",),
}
ICDR_GRADES = (0, 1, 2, 3, 4)
EDEMA_RISKS = (0, 1, 2)


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    load = SPEC.new_load(folder)
    label_files = {}
    for split, (label_names, image_dir_names) in SPLITS.items():
        label_file = find_label_file(folder, label_names, f"IDRiD {split} label file "
                                     f"({EXPECTED_PATH.format(label_names[0])})", load.warnings)
        image_dir = find_dir_near(label_file, folder, image_dir_names)
        if image_dir is None:
            raise DataError(f"no image folder {image_dir_names[0]!r} found in the 'B. Disease Grading' folder "
                            f"of the {split} label file", file=str(label_file))
        label_files[split] = relative_to(folder, label_file)
        _read_split(folder, split, label_file, image_dir, load)
    return SPEC.finish_load(load, label_files)


def _read_split(folder: Path, split: str, label_file: Path, image_dir: Path, load: DatasetLoad) -> None:
    headers, rows = read_csv_rows(label_file)
    columns = resolve_columns(headers, COLUMNS, label_file)

    def listed(row: dict) -> Listed:
        line = row["__row__"]
        name = with_extension(clean_id(row[columns["image"]], label_file, line, columns["image"]), ".jpg")
        grade = parse_grade(row[columns["grade"]], ICDR_GRADES, label_file, line, columns["grade"])
        edema = parse_grade(row[columns["edema"]], EDEMA_RISKS, label_file, line, columns["edema"])
        return Listed(name, f"{split}/{Path(name).stem}", line, dict(
            split=split, dr=dr_present(grade), referable_dr=referable_dr(grade, edema), dr_grade=grade,
            extra={"retinopathy_grade": grade, "macular_edema_risk": edema}))

    read_rows(load, ImageMatcher(folder, label_file, image_dir), rows, listed)

"""Reader for IDRiD part B (Disease Grading): official train/test split, ICDR grade and macular-edema risk.
Image names restart per split, so each split's images come only from that split's own folder."""

from __future__ import annotations

from pathlib import Path

from focus_eval.data.common import (ImageMatcher, clean_id, count_warnings, find_dir_near, find_label_file,
                                    label_counts, parse_grade, read_csv_rows, referable_dr, relative_to,
                                    resolve_columns, with_extension)
from focus_eval.data.records import DatasetLoad, ImageRecord, Skipped
from focus_eval.errors import DataError

NAME = "idrid"
TARGETS = ("dr", "referable_dr")
COHORTS = {"all": lambda record: True}
DEFAULT_COHORT = "all"
OFFICIAL_SPLIT = True
GROUP_KEY = "image (no patient id; official train/test split, names restart per split)"

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
DOCUMENTED_COUNTS = {
    "train": {"n": 413, "dr_pos": 279, "referable_dr_pos": 259},
    "test": {"n": 103, "dr_pos": 69, "referable_dr_pos": 64},
}


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError("dataset folder not found", file=str(folder))
    load = DatasetLoad(name=NAME, root=folder, records=[])
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
    counts = label_counts(load.records, TARGETS)
    load.warnings.extend(count_warnings(NAME, counts, DOCUMENTED_COUNTS))
    load.metadata.update({"label_file": ", ".join(label_files.values()), "label_files": label_files,
                          "counts": counts})
    return load


def _read_split(folder: Path, split: str, label_file: Path, image_dir: Path, load: DatasetLoad) -> None:
    headers, rows = read_csv_rows(label_file)
    columns = resolve_columns(headers, COLUMNS, label_file)
    images = ImageMatcher(folder, label_file, image_dir)
    for row in rows:
        line = row["__row__"]
        source_name = clean_id(row[columns["image"]], label_file, line, columns["image"])
        name = with_extension(source_name, ".jpg")
        image_id = f"{split}/{Path(name).stem}"
        images.claim(name, line)
        path = images.match(name, line, image_id, f"image file {name} not found in {image_dir}")
        if isinstance(path, Skipped):
            load.skipped.append(path)
            continue
        grade = parse_grade(row[columns["grade"]], ICDR_GRADES, label_file, line, columns["grade"])
        edema = parse_grade(row[columns["edema"]], EDEMA_RISKS, label_file, line, columns["edema"])
        load.records.append(ImageRecord(
            dataset=NAME, image_id=image_id, patient_id=image_id, path=path,
            relpath=relative_to(folder, path), split=split,
            dr=None if grade is None else int(grade >= 1),
            referable_dr=referable_dr(grade, edema),
            extra={"retinopathy_grade": grade, "macular_edema_risk": edema},
        ))
    load.warnings.extend(images.unlabelled_warnings())

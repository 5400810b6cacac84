"""Reader for RFMiD 1.0: official train/val/test folders, binary DR, and the CME column as a flagged
referable-DR proxy (RFMiD has no DR grade)."""

from __future__ import annotations

from pathlib import Path

from focus_eval.data.common import (ImageMatcher, clean_id, count_warnings, find_dir_near, find_files,
                                    find_label_file, label_counts, parse_grade, read_csv_rows, relative_to,
                                    resolve_columns, with_extension)
from focus_eval.data.records import DatasetLoad, ImageRecord, Skipped
from focus_eval.errors import DataError

NAME = "rfmid"
TARGETS = ("dr", "referable_dr")
COHORTS = {"all": lambda record: True}
DEFAULT_COHORT = "all"
OFFICIAL_SPLIT = True
GROUP_KEY = "image (no patient id; official train/val/test split, IDs restart per split)"
REFERABLE_DR_COLUMN = "CME"

# Per layout and split: (label file names, image folder names). The official release prefixes both
# with "a. "/"b. "/"c. "; the Kaggle copy does not, so the names tell the layouts apart.
LAYOUTS = {
    "official": {
        "train": (("a. RFMiD_Training_Labels.csv",), ("a. Training Set",)),
        "val": (("b. RFMiD_Validation_Labels.csv",), ("b. Validation Set",)),
        "test": (("c. RFMiD_Testing_Labels.csv",), ("c. Testing Set",)),
    },
    "kaggle": {
        "train": (("RFMiD_Training_Labels.csv",), ("Training",)),
        "val": (("RFMiD_Validation_Labels.csv",), ("Validation",)),
        "test": (("RFMiD_Testing_Labels.csv",), ("Test",)),
    },
}
EXPECTED_PATHS = {
    "official": "A. RFMiD_All_Classes_Dataset/2. Groundtruths/a. RFMiD_Training_Labels.csv",
    "kaggle": "Training_Set/Training_Set/RFMiD_Training_Labels.csv",
}
COLUMNS = {"id": ("ID",), "dr": ("DR",), "referable_dr": (REFERABLE_DR_COLUMN,)}
DOCUMENTED_COUNTS = {
    "train": {"n": 1920, "dr_pos": 376, "referable_dr_pos": 4},
    "val": {"n": 640, "dr_pos": 132, "referable_dr_pos": 1},
    "test": {"n": 640, "dr_pos": 124, "referable_dr_pos": 2},
}


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    layout, warnings = _detect_layout(folder)
    load = DatasetLoad(name=NAME, root=folder, records=[], warnings=warnings)
    label_files = {}
    for split, (label_names, image_dir_names) in LAYOUTS[layout].items():
        label_file = find_label_file(folder, label_names, f"RFMiD {split} label file", load.warnings)
        image_dir = find_dir_near(label_file, folder, image_dir_names)
        if image_dir is None:
            raise DataError(f"no image folder {image_dir_names[0]!r} found next to the {split} label file",
                            file=str(label_file))
        label_files[split] = relative_to(folder, label_file)
        _read_split(folder, split, label_file, image_dir, load)
    counts = label_counts(load.records, TARGETS)
    load.warnings.extend(count_warnings(NAME, counts, DOCUMENTED_COUNTS))
    load.metadata.update({
        "layout": layout,
        "label_file": ", ".join(label_files.values()),
        "label_files": label_files,
        "referable_dr_column": REFERABLE_DR_COLUMN,
        "referable_dr_proxy": True,
        "counts": counts,
    })
    return load


def _detect_layout(folder: Path) -> tuple[str, list[str]]:
    """The layout whose label files are present; the official one when both are, with a warning."""
    if not folder.is_dir():
        raise DataError("dataset folder not found", file=str(folder))
    present = [name for name, splits in LAYOUTS.items()
               if find_files(folder, [n for names, _ in splits.values() for n in names])]
    if not present:
        expected = " or ".join(repr(p) for p in EXPECTED_PATHS.values())
        raise DataError(f"no RFMiD label files found; expected {expected} somewhere under {folder}",
                        file=str(folder))
    warnings = []
    if len(present) > 1:
        warnings.append(f"both the official and the Kaggle RFMiD layouts are under {folder}; "
                        "reading the official one only")
    return present[0], warnings


def _read_split(folder: Path, split: str, label_file: Path, image_dir: Path, load: DatasetLoad) -> None:
    headers, rows = read_csv_rows(label_file)
    columns = resolve_columns(headers, COLUMNS, label_file)
    images = ImageMatcher(folder, label_file, image_dir)
    for row in rows:
        line = row["__row__"]
        source_id = clean_id(row[columns["id"]], label_file, line, columns["id"])
        image_id = f"{split}/{source_id}"
        name = with_extension(source_id, ".png")
        images.claim(name, line)
        path = images.match(name, line, image_id, f"image file {name} not found in {image_dir}")
        if isinstance(path, Skipped):
            load.skipped.append(path)
            continue
        load.records.append(ImageRecord(
            dataset=NAME, image_id=image_id, patient_id=image_id, path=path,
            relpath=relative_to(folder, path), split=split,
            dr=parse_grade(row[columns["dr"]], (0, 1), label_file, line, columns["dr"]),
            referable_dr=parse_grade(row[columns["referable_dr"]], (0, 1), label_file, line,
                                     columns["referable_dr"]),
            extra={k: v for k, v in row.items() if k != "__row__" and v is not None},
        ))
    load.warnings.extend(images.unlabelled_warnings())

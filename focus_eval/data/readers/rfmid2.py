"""Reader for RFMiD 2.0: official train/val/test folders, latin-1 label files, binary DR, and the macular
edema column (ME) as a flagged referable-DR proxy (RFMiD 2.0 has no DR grade)."""

from __future__ import annotations

from pathlib import Path

from focus_eval.data.common import (ImageMatcher, clean_id, count_warnings, find_label_file, label_counts,
                                    parse_grade, read_csv_rows, relative_to, resolve_columns, with_extension)
from focus_eval.data.records import DatasetLoad, ImageRecord, Skipped
from focus_eval.errors import DataError

NAME = "rfmid2"
TARGETS = ("dr", "referable_dr")
COHORTS = {"all": lambda record: True}
DEFAULT_COHORT = "all"
OFFICIAL_SPLIT = True
GROUP_KEY = "image (no patient id; official train/val/test split)"
ENCODING = "latin-1"

# Each split folder (Training_set/ or Train/, ...) holds its images next to its label file.
LABEL_FILES = {
    "train": "RFMiD_2_Training_labels.csv",
    "val": "RFMiD_2_Validation_labels.csv",
    "test": "RFMiD_2_Testing_labels.csv",
}
LABEL_FILE_WHAT = "RFMiD 2.0 label file (e.g. Training_set/RFMiD_2_Training_labels.csv)"
COLUMNS = {
    "id": ("ID",),
    "dr": ("DR",),
    # Only spellings of the plain macular-edema column: CME (cystoid) is a different finding.
    "referable_dr": ("ME", "Macular_Edema", "Macular Edema"),
}
# The release's header spells ODPM as OPDM; extra uses the RFMiD 1.0 name.
COLUMN_FIXES = {"OPDM": "ODPM"}
DOCUMENTED_COUNTS = {
    "train": {"n": 507, "dr_pos": 42, "referable_dr_pos": 1},
    "val": {"n": 177, "dr_pos": 14, "referable_dr_pos": 1},
    "test": {"n": 170, "dr_pos": 14, "referable_dr_pos": 2},
}


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError("dataset folder not found", file=str(folder))
    load = DatasetLoad(name=NAME, root=folder, records=[])
    label_files, proxy_columns = {}, set()
    for split, name in LABEL_FILES.items():
        label_file = find_label_file(folder, [name], LABEL_FILE_WHAT, load.warnings)
        label_files[split] = relative_to(folder, label_file)
        proxy_columns.add(_read_split(folder, split, label_file, load))
    if len(proxy_columns) > 1:
        raise DataError(f"the splits name the macular-edema column differently ({sorted(proxy_columns)})",
                        file=str(folder))
    counts = label_counts(load.records, TARGETS)
    load.warnings.extend(count_warnings(NAME, counts, DOCUMENTED_COUNTS))
    load.metadata.update({
        "label_file": ", ".join(label_files.values()),
        "label_files": label_files,
        "encoding": ENCODING,
        "referable_dr_column": proxy_columns.pop(),
        "referable_dr_proxy": True,
        "counts": counts,
    })
    return load


def _read_split(folder: Path, split: str, label_file: Path, load: DatasetLoad) -> str:
    """Read one split's label file and the images beside it; returns the proxy column used."""
    headers, rows = read_csv_rows(label_file, encoding=ENCODING)
    columns = resolve_columns(headers, COLUMNS, label_file)
    image_dir = label_file.parent
    images = ImageMatcher(folder, label_file, image_dir)
    for row in rows:
        line = row["__row__"]
        source_id = clean_id(row[columns["id"]], label_file, line, columns["id"])
        image_id = f"{split}/{source_id}"
        name = with_extension(source_id, ".jpg")
        images.claim(name, line)
        path = images.match(name, line, image_id,
                            f"label row has no image: {name} (any case) not found in {image_dir}")
        if isinstance(path, Skipped):
            load.skipped.append(path)
            continue
        load.records.append(ImageRecord(
            dataset=NAME, image_id=image_id, patient_id=image_id, path=path,
            relpath=relative_to(folder, path), split=split,
            dr=parse_grade(row[columns["dr"]], (0, 1), label_file, line, columns["dr"]),
            referable_dr=parse_grade(row[columns["referable_dr"]], (0, 1), label_file, line,
                                     columns["referable_dr"]),
            extra=_extra(row),
        ))
    if images.missing:
        load.warnings.append(f"{label_file.name}: {images.missing} label rows have no image file and were skipped")
    load.warnings.extend(images.unlabelled_warnings())
    return columns["referable_dr"]


def _extra(row: dict) -> dict:
    """Source columns kept for reference, without the empty trailing 'Unnamed' columns of some copies."""
    return {COLUMN_FIXES.get(k, k): v for k, v in row.items()
            if k != "__row__" and v is not None and not k.lower().startswith("unnamed")}

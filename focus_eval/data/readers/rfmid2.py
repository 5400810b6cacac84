"""Reader for RFMiD 2.0: official train/val/test folders, latin-1 label files, binary DR, and the macular
edema column (ME) as a flagged referable-DR proxy (RFMiD 2.0 has no DR grade)."""

from __future__ import annotations

from pathlib import Path

from focus_eval.data.files import find_label_file, relative_to
from focus_eval.data.readers.rfmid import read_split
from focus_eval.data.records import DatasetLoad
from focus_eval.data.spec import ReaderSpec
from focus_eval.errors import DataError

SPEC = ReaderSpec(
    name="rfmid2",
    targets=("dr", "referable_dr"),
    official_split=True,
    group_key="image (no patient id; official train/val/test split)",
    documented_counts={
        "train": {"n": 507, "dr_pos": 42, "referable_dr_pos": 1},
        "val": {"n": 177, "dr_pos": 14, "referable_dr_pos": 1},
        "test": {"n": 170, "dr_pos": 14, "referable_dr_pos": 2},
    },
)
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


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    load = SPEC.new_load(folder)
    label_files, proxy_columns = {}, set()
    for split, name in LABEL_FILES.items():
        label_file = find_label_file(folder, [name], LABEL_FILE_WHAT, load.warnings)
        label_files[split] = relative_to(folder, label_file)
        proxy_columns.add(read_split(load, folder, split, label_file, label_file.parent, columns=COLUMNS,
                                     extension=".jpg", encoding=ENCODING, extra=_extra))
    if len(proxy_columns) > 1:
        raise DataError(f"the splits name the macular-edema column differently ({sorted(proxy_columns)})",
                        file=str(folder))
    return SPEC.finish_load(load, label_files, encoding=ENCODING, referable_dr_column=proxy_columns.pop(),
                            referable_dr_proxy=True)


def _extra(row: dict) -> dict:
    """Source columns kept for reference, without the empty trailing 'Unnamed' columns of some copies."""
    return {COLUMN_FIXES.get(k, k): v for k, v in row.items()
            if k != "__row__" and v is not None and not k.lower().startswith("unnamed")}

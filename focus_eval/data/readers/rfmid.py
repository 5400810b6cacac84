"""Reader for RFMiD 1.0: official train/val/test folders, binary DR, and the CME column as a flagged
referable-DR proxy (RFMiD has no DR grade)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from focus_eval.data.cells import clean_id, parse_grade
from focus_eval.data.files import find_dir_near, find_files, find_label_file, relative_to, with_extension
from focus_eval.data.matching import ImageMatcher, Listed, read_rows
from focus_eval.data.records import DatasetLoad
from focus_eval.data.spec import ReaderSpec
from focus_eval.data.tables import read_csv_rows, resolve_columns
from focus_eval.errors import DataError

SPEC = ReaderSpec(
    name="rfmid",
    targets=("dr", "referable_dr"),
    official_split=True,
    group_key="image (no patient id; official train/val/test split, IDs restart per split)",
    documented_counts={
        "train": {"n": 1920, "dr_pos": 376, "referable_dr_pos": 4},
        "val": {"n": 640, "dr_pos": 132, "referable_dr_pos": 1},
        "test": {"n": 640, "dr_pos": 124, "referable_dr_pos": 2},
    },
    label_rules={
        "abnormal": "Disease_Risk (1 -> 1, 0 -> 0; conditions of a 0 row: normal)",
        "conditions": "the disease columns that are 1 (codes as in the release, e.g. DR, ARMD, MH)",
    },
)
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
RISK_COLUMN = "Disease_Risk"
# The 45 disease columns of RFMiD 1.0 after Disease_Risk (codes as the release writes them).
DISEASE_COLUMNS = tuple("DR ARMD MH DN MYA BRVO TSLN ERM LS MS CSR ODC CRVO TV AH ODP ODE ST AION PT RT RS CRS EDN "
                        "RPEC MHL RP CWS CB ODPM PRH MNF HR CRAO TD CME PTCR CF VH MCA VS BRAO PLQ HPED CL".split())


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    layout, warnings = _detect_layout(folder)
    load = SPEC.new_load(folder, warnings)
    label_files = {}
    for split, (label_names, image_dir_names) in LAYOUTS[layout].items():
        label_file = find_label_file(folder, label_names, f"RFMiD {split} label file", load.warnings)
        image_dir = find_dir_near(label_file, folder, image_dir_names)
        if image_dir is None:
            raise DataError(f"no image folder {image_dir_names[0]!r} found next to the {split} label file",
                            file=str(label_file))
        label_files[split] = relative_to(folder, label_file)
        read_split(load, folder, split, label_file, image_dir, columns=COLUMNS, extension=".png",
                   fields=lambda row, line, file=label_file: disease_fields(row, file, line))
    return SPEC.finish_load(load, label_files, layout=layout, referable_dr_column=REFERABLE_DR_COLUMN,
                            referable_dr_proxy=True)


def disease_fields(row: dict, label_file: Path, line: int) -> dict:
    """abnormal and conditions of one RFMiD 1.0 row: Disease_Risk, and the disease columns that are 1."""
    present = {k.lower(): k for k in row if k != "__row__"}  # headers matched in any case, as elsewhere
    risk = parse_grade(row.get(present.get(RISK_COLUMN.lower(), "")), (0, 1), label_file, line, RISK_COLUMN)
    flags = {code: parse_grade(row[present[code.lower()]], (0, 1), label_file, line, present[code.lower()])
             for code in DISEASE_COLUMNS if code.lower() in present}
    if risk is None or None in flags.values():
        return {"abnormal": risk, "conditions": None}
    if risk == 0:
        return {"abnormal": 0, "conditions": ("normal",)}
    return {"abnormal": 1, "conditions": tuple(code for code, flag in flags.items() if flag == 1)}


def _detect_layout(folder: Path) -> tuple[str, list[str]]:
    """The layout whose label files are present; the official one when both are, with a warning."""
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


def source_columns(row: dict) -> dict:
    """The row's non-empty cells, kept in ``extra`` for reference."""
    return {k: v for k, v in row.items() if k != "__row__" and v is not None}


def read_split(load: DatasetLoad, folder: Path, split: str, label_file: Path, image_dir: Path, *,
               columns: dict, extension: str, encoding: str = "utf-8-sig",
               extra: Callable[[dict], dict] = source_columns,
               fields: Callable[[dict, int], dict] | None = None) -> str:
    """One split of an RFMiD-style release (RFMiD 1.0 and 2.0): an ``id`` column naming ``<id><extension>``
    and binary ``dr`` and ``referable_dr`` columns; ``fields`` adds record fields from (row, row number).
    Returns the referable-DR column the file uses."""
    headers, rows = read_csv_rows(label_file, encoding=encoding)
    found = resolve_columns(headers, columns, label_file)

    def listed(row: dict) -> Listed:
        line = row["__row__"]
        source_id = clean_id(row[found["id"]], label_file, line, found["id"])
        labels = {target: parse_grade(row[found[target]], (0, 1), label_file, line, found[target])
                  for target in ("dr", "referable_dr")}
        more = fields(row, line) if fields else {}
        return Listed(with_extension(source_id, extension), f"{split}/{source_id}", line,
                      dict(split=split, extra=extra(row), **labels, **more))

    read_rows(load, ImageMatcher(folder, label_file, image_dir), rows, listed)
    return found["referable_dr"]

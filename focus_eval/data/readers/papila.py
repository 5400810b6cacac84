"""PAPILA reader: ClinicalData/patient_data_od.xlsx and patient_data_os.xlsx (staggered header; the data start
after the row whose first cell is ``ID``, columns taken by position) and FundusImages/RET<NNN><OD|OS>.jpg,
inside the archive's hashed folder at any depth.

Gender and Diagnosis codes outside {0, 1} and {0, 1, 2} are load errors (DataError naming file, row and
column). Suspects (Diagnosis 2) are excluded from the glaucoma target. File names containing a space
(duplicate macOS copies) are ignored.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from openpyxl import load_workbook

from focus_eval.data import common
from focus_eval.data.records import DatasetLoad, ImageRecord, Skipped
from focus_eval.errors import DataError

TARGETS = ("glaucoma",)
COHORTS = {"all": lambda record: True}
DEFAULT_COHORT = "all"
OFFICIAL_SPLIT = False
GROUP_KEY = "numeric patient id from #NNN / RETNNN"
LABEL_RULES = {"glaucoma": "Diagnosis == 1 (glaucoma) vs 0 (healthy); 2 (suspect) excluded"}

CLINICAL_FILES = {"OD": "patient_data_od.xlsx", "OS": "patient_data_os.xlsx"}
IMAGE_FOLDER = "FundusImages"
# Position of each field after the ID row (the group headers above it are merged cells).
FIELDS = ("id", "age", "gender", "diagnosis", "dioptre_1", "dioptre_2", "astigmatism", "phakic",
          "iop_pneumatic", "iop_perkins", "pachymetry", "axial_length", "vf_md")
HEADER_CHECK = {1: "age", 2: "gender", 3: "diagnosis"}
# 488 images, 333 healthy eyes (code 0); the glaucoma/suspect split is not documented reliably.
DOCUMENTED_COUNTS = {"n": 488, "glaucoma_neg": 333}
GENDER_CODES = {"0": "male", "1": "female"}
GLAUCOMA_BY_DIAGNOSIS = {0: 0, 1: 1, 2: None}
ID_PATTERN = re.compile(r"#?\s*(\d+)")


def locate(folder: Path) -> tuple[dict[str, Path], Path]:
    """({eye: clinical xlsx}, FundusImages folder) of the shallowest archive copy under ``folder``."""
    od = common.find_one(folder, [CLINICAL_FILES["OD"]], "PAPILA clinical data (ClinicalData/patient_data_od.xlsx)")
    clinical = {"OD": od}
    os_file = [p for p in od.parent.iterdir() if p.name.lower() == CLINICAL_FILES["OS"]]
    if not os_file:
        raise DataError(f"missing {CLINICAL_FILES['OS']}; expected {od.parent / CLINICAL_FILES['OS']}",
                        file=str(od.parent))
    clinical["OS"] = os_file[0]
    images = [p for p in sorted(od.parent.parent.iterdir()) if p.is_dir() and p.name.lower() == IMAGE_FOLDER.lower()]
    if not images:
        raise DataError(f"no {IMAGE_FOLDER}/ folder; expected {od.parent.parent / IMAGE_FOLDER}",
                        file=str(od.parent.parent))
    return clinical, images[0]


def clinical_rows(path: Path) -> list[tuple[int, dict]]:
    """(sheet row number, {field: value}) for each patient row of one clinical xlsx file."""
    try:
        workbook = load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many types for a damaged file
        raise DataError(f"cannot read the xlsx file: {exc}", file=str(path)) from None
    try:
        table = [tuple(row) for row in workbook.worksheets[0].iter_rows(values_only=True)]
    finally:
        workbook.close()
    start = next((i for i, row in enumerate(table) if row and common.clean_header(row[0]).lower() == "id"), None)
    if start is None:
        raise DataError("no row whose first cell is 'ID' (the header row above the patient rows)", file=str(path))
    _check_header(table[:start], path)
    rows = []
    for i, values in enumerate(table[start + 1:], start=start + 2):
        cells = [common.clean_cell(v) for v in values]
        if not any(c is not None for c in cells):
            continue
        cells += [None] * (len(FIELDS) - len(cells))
        rows.append((i, dict(zip(FIELDS, cells))))
    return rows


def _check_header(header_rows: list[tuple], path: Path) -> None:
    """The group headers above the ID row must name Age, Gender and Diagnosis at positions 1-3; otherwise
    the columns have moved and reading by position would mislabel every row."""
    for position, name in HEADER_CHECK.items():
        found = {common.clean_header(row[position]).lower()
                 for row in header_rows if len(row) > position and row[position]}
        if name not in found:
            raise DataError(f"expected column {name!r} in column {chr(ord('A') + position)} above the ID row; "
                            f"found {sorted(found) or 'nothing'}", file=str(path))


def read(folder: Path) -> DatasetLoad:
    """Both eyes of every PAPILA patient under ``folder`` (no split)."""
    folder = Path(folder)
    clinical, images = locate(folder)
    root = folder.resolve()
    images = common.safe_path(root, images, clinical["OD"], None)
    index = {name: path for name, path in common.file_index(images).items() if " " not in name}
    records, skipped = [], []
    for eye, path in clinical.items():
        for n, cells in clinical_rows(path):
            record = _record(cells, eye, n, root, path, images, index)
            (skipped if isinstance(record, Skipped) else records).append(record)
    duplicates = [i for i, count in Counter(r.image_id for r in records).items() if count > 1]
    if duplicates:
        raise DataError(f"patient rows listed twice: {sorted(duplicates)}", file=str(clinical["OD"].parent))
    metadata = {"label_file": ", ".join(common.relative_to(folder, p) for p in clinical.values()),
                "version": _version(clinical["OD"]), "label_rules": LABEL_RULES}
    warnings = _warnings(records) + common.documented_count_warnings("papila", records, TARGETS, DOCUMENTED_COUNTS)
    return DatasetLoad("papila", folder, records, skipped, warnings, metadata)


def _version(clinical: Path) -> str:
    name = clinical.parent.parent.name
    return name[len("PapilaDB-PAPILA-"):] if name.startswith("PapilaDB-PAPILA-") else "unknown"


def _record(cells: dict, eye: str, n: int, root: Path, path: Path, images: Path, index: dict):
    match = ID_PATTERN.fullmatch(cells["id"] or "")
    if not match:
        raise DataError(f"column A (ID): {cells['id']!r} is not a patient id like '#002'", file=str(path), row=n)
    number = int(match.group(1))
    image_id = f"RET{number:03d}{eye}"
    name = image_id + ".jpg"
    image = common.listed_file(root, images, name, index, path, n)
    if image is None:
        return Skipped(str(path), n, image_id, f"image file not found: {images / name}")
    diagnosis = common.parse_grade(cells["diagnosis"], (0, 1, 2), path, n, "Diagnosis")
    extra = {k: cells[k] for k in FIELDS[4:]}
    extra.update(eye=eye, diagnosis=diagnosis)
    return ImageRecord(
        dataset="papila", image_id=image_id, patient_id=str(number), path=image,
        relpath=image.relative_to(root).as_posix(),
        glaucoma=None if diagnosis is None else GLAUCOMA_BY_DIAGNOSIS[diagnosis],
        age=common.parse_age(cells["age"], path, n, "Age"),
        sex=common.map_code(cells["gender"], GENDER_CODES, path, n, "Gender"),
        extra=extra)


def _warnings(records: list[ImageRecord]) -> list[str]:
    """Verify on load: suspects should be bilateral, and age and sex should agree between the two files."""
    warnings = []
    suspects = {eye: {r.patient_id for r in records if r.extra["eye"] == eye and r.extra["diagnosis"] == 2}
                for eye in CLINICAL_FILES}
    one_sided = sorted(suspects["OD"] ^ suspects["OS"], key=int)
    if one_sided:
        warnings.append(f"Diagnosis code 2 (suspect) is not bilateral for patient(s) {', '.join(one_sided)}; "
                        "check that the files code 0 healthy, 1 glaucoma, 2 suspect")
    for attribute in ("sex", "age"):
        patients = common.inconsistent_within_patient(records, attribute)
        if patients:
            warnings.append(f"{attribute} differs between the OD and OS files for patient(s) {', '.join(patients[:5])}")
    eyes = {}
    for r in records:
        eyes.setdefault(r.patient_id, set()).add(r.extra["eye"])
    single = sorted((p for p, e in eyes.items() if len(e) == 1), key=int)
    if single:
        warnings.append(f"{len(single)} patient(s) have only one eye: {', '.join(single[:5])}")
    return warnings

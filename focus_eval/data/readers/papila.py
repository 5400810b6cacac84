"""PAPILA reader: ClinicalData/patient_data_od.xlsx and patient_data_os.xlsx (staggered header; the data start
after the row whose first cell is ``ID``, columns taken by position) and FundusImages/RET<NNN><OD|OS>.jpg,
inside the archive's hashed folder at any depth.

Gender and Diagnosis codes outside {0, 1} and {0, 1, 2} are load errors (DataError naming file, row and
column). Suspects (Diagnosis 2) are excluded from the glaucoma target. File names containing a space
(duplicate macOS copies) are ignored.
"""

from __future__ import annotations

import re
from pathlib import Path

from focus_eval.data.cells import map_code, parse_age, parse_grade
from focus_eval.data.checks import inconsistent_within_patient
from focus_eval.data.files import file_index, find_one, relative_to, safe_path
from focus_eval.data.matching import ImageMatcher, Listed, read_rows
from focus_eval.data.records import DatasetLoad, ImageRecord
from focus_eval.data.spec import ALL_IMAGES, ReaderSpec
from focus_eval.data.tables import clean_cell, clean_header, xlsx_values
from focus_eval.errors import DataError

SPEC = ReaderSpec(
    name="papila",
    targets=("glaucoma",),
    group_key="numeric patient id from #NNN / RETNNN",
    # 488 images, 333 healthy eyes (code 0); the glaucoma/suspect split is not documented reliably.
    documented_counts={ALL_IMAGES: {"n": 488, "glaucoma_neg": 333}},
    label_rules={"glaucoma": "Diagnosis == 1 (glaucoma) vs 0 (healthy); 2 (suspect) excluded"},
)

CLINICAL_FILES = {"OD": "patient_data_od.xlsx", "OS": "patient_data_os.xlsx"}
IMAGE_FOLDER = "FundusImages"
# Position of each field after the ID row (the group headers above it are merged cells).
FIELDS = ("id", "age", "gender", "diagnosis", "dioptre_1", "dioptre_2", "astigmatism", "phakic",
          "iop_pneumatic", "iop_perkins", "pachymetry", "axial_length", "vf_md")
HEADER_CHECK = {1: "age", 2: "gender", 3: "diagnosis"}
GENDER_CODES = {"0": "male", "1": "female"}
GLAUCOMA_BY_DIAGNOSIS = {0: 0, 1: 1, 2: None}
ID_PATTERN = re.compile(r"#?\s*(\d+)")


def locate(folder: Path) -> tuple[dict[str, Path], Path]:
    """({eye: clinical xlsx}, FundusImages folder) of the shallowest archive copy under ``folder``."""
    od = find_one(folder, [CLINICAL_FILES["OD"]], "PAPILA clinical data (ClinicalData/patient_data_od.xlsx)")
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
    table = xlsx_values(path)
    start = next((i for i, row in enumerate(table) if row and clean_header(row[0]).lower() == "id"), None)
    if start is None:
        raise DataError("no row whose first cell is 'ID' (the header row above the patient rows)", file=str(path))
    _check_header(table[:start], path)
    rows = []
    for i, values in enumerate(table[start + 1:], start=start + 2):
        cells = [clean_cell(v) for v in values]
        if not any(c is not None for c in cells):
            continue
        cells += [None] * (len(FIELDS) - len(cells))
        rows.append((i, dict(zip(FIELDS, cells))))
    return rows


def _check_header(header_rows: list[tuple], path: Path) -> None:
    """The group headers above the ID row must name Age, Gender and Diagnosis at positions 1-3; otherwise
    the columns have moved and reading by position would mislabel every row."""
    for position, name in HEADER_CHECK.items():
        found = {clean_header(row[position]).lower()
                 for row in header_rows if len(row) > position and row[position]}
        if name not in found:
            raise DataError(f"expected column {name!r} in column {chr(ord('A') + position)} above the ID row; "
                            f"found {sorted(found) or 'nothing'}", file=str(path))


def read(folder: Path) -> DatasetLoad:
    """Both eyes of every PAPILA patient under ``folder`` (no split)."""
    folder = Path(folder)
    clinical, images = locate(folder)
    images = safe_path(folder, images, clinical["OD"], None)
    index = {name: path for name, path in file_index(images).items() if " " not in name}
    load = SPEC.new_load(folder)
    for eye, path in clinical.items():
        # each file lists the images of one eye, so it is matched against that eye's files only
        eye_images = {name: image for name, image in index.items() if Path(name).stem.endswith(eye.lower())}
        read_rows(load, ImageMatcher(folder, path, images, images=eye_images), clinical_rows(path),
                  lambda item, eye=eye, path=path: _listed(item, eye, path))
    load.warnings += _warnings(load.records)
    return SPEC.finish_load(load, [relative_to(folder, p) for p in clinical.values()],
                            version=_version(clinical["OD"]))


def _version(clinical: Path) -> str:
    name = clinical.parent.parent.name
    return name[len("PapilaDB-PAPILA-"):] if name.startswith("PapilaDB-PAPILA-") else "unknown"


def _listed(item: tuple[int, dict], eye: str, path: Path) -> Listed:
    n, cells = item
    match = ID_PATTERN.fullmatch(cells["id"] or "")
    if not match:
        raise DataError(f"column A (ID): {cells['id']!r} is not a patient id like '#002'", file=str(path), row=n)
    number = int(match.group(1))
    image_id = f"RET{number:03d}{eye}"
    diagnosis = parse_grade(cells["diagnosis"], (0, 1, 2), path, n, "Diagnosis")
    extra = {k: cells[k] for k in FIELDS[4:]}
    extra.update(eye=eye, diagnosis=diagnosis)
    return Listed(image_id + ".jpg", image_id, n, dict(
        patient_id=str(number),
        glaucoma=None if diagnosis is None else GLAUCOMA_BY_DIAGNOSIS[diagnosis],
        age=parse_age(cells["age"], path, n, "Age"),
        sex=map_code(cells["gender"], GENDER_CODES, path, n, "Gender"),
        extra=extra))


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
        patients = inconsistent_within_patient(records, attribute)
        if patients:
            warnings.append(f"{attribute} differs between the OD and OS files for patient(s) {', '.join(patients[:5])}")
    eyes = {}
    for r in records:
        eyes.setdefault(r.patient_id, set()).add(r.extra["eye"])
    single = sorted((p for p, e in eyes.items() if len(e) == 1), key=int)
    if single:
        warnings.append(f"{len(single)} patient(s) have only one eye: {', '.join(single[:5])}")
    return warnings

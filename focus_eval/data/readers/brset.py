"""BRSET reader: a label file (labels.csv, labels_brset.csv or label_brset.csv) beside fundus_photos/, at any
depth under the dataset folder (PhysioNet's physionet.org/files/brazilian-ophthalmological/<version>/ or flat).

Unknown codes in the sex, quality, grade and finding columns are load errors (DataError naming file, row and
column), never recoded; an empty grade or finding leaves the targets that need it undefined. Label rows whose
image file is missing are skipped and reported.
"""

from __future__ import annotations

import re
from pathlib import Path

from focus_eval.data.cells import (clean_id, dr_present, map_code, normal_and_conditions, parse_age, parse_grade,
                                   referable_dr)
from focus_eval.data.checks import inconsistent_within_patient
from focus_eval.data.files import find_files, relative_to, with_extension
from focus_eval.data.matching import ImageMatcher, Listed, read_rows
from focus_eval.data.records import DatasetLoad, ImageRecord
from focus_eval.data.spec import ALL_IMAGES, ReaderSpec, every_image
from focus_eval.data.tables import read_csv_rows, resolve_columns
from focus_eval.errors import DataError

# All-image counts documented per release (before any cohort); the reader compares the release it finds.
RELEASE_COUNTS = {
    "1.0.0": {"n": 16266, "dr_pos": 1056, "referable_dr_pos": 952, "glaucoma_pos": 3202},
    "1.0.1": {"dr_pos": 1083, "glaucoma_pos": 3205},
}
SPEC = ReaderSpec(
    name="brset",
    targets=("dr", "referable_dr", "glaucoma"),
    cohorts={"diabetic": lambda record: record.extra.get("diabetes") == "yes", "all": every_image},
    default_cohort="diabetic",
    group_key="patient_id",
    documented_counts={ALL_IMAGES: RELEASE_COUNTS["1.0.0"]},
    label_rules={
        "dr": "DR_ICDR >= 1",
        "referable_dr": "DR_ICDR >= 2 or macular_edema == 1",
        "glaucoma": "increased_cup_disc == 1 (a retinal specialist's cup/disc finding, not a glaucoma diagnosis)",
        "laterality": "exam_eye 1 -> right, 2 -> left",
        "dr_grade": "DR_ICDR",
        "findings": "the 0/1 finding columns (drusens read as drusen); diabetic_retinopathy from DR_ICDR >= 1",
        "abnormal": "any finding 1 -> 1; every finding 0 -> 0 (conditions: normal); an empty finding -> undefined",
        "conditions": "the disease findings that are 1: " + ", ".join(
            ("diabetic_retinopathy", "macular_edema", "amd", "vascular_occlusion", "hypertensive_retinopathy",
             "retinal_detachment", "myopic_fundus", "increased_cup_disc")),
    },
)

LABEL_FILES = ("labels.csv", "labels_brset.csv", "label_brset.csv")
IMAGE_FOLDER = "fundus_photos"
# concept -> header names across v1.0.0, v1.0.1 and v1.0.2 (matched case-insensitively)
COLUMNS = {
    "image_id": ("image_id",),
    "patient_id": ("patient_id",),
    "age": ("patient_age",),
    "sex": ("patient_sex",),
    "diabetes": ("diabetes",),
    "icdr": ("DR_ICDR",),
    "edema": ("macular_edema",),
    "cup_disc": ("increased_cup_disc",),
    "quality": ("quality",),
}
EXTRA_COLUMNS = {
    "camera": ("camera",),
    "exam_eye": ("exam_eye",),
    "illumination": ("iluminaton", "illuminaton", "illumination"),
    "insulin": ("insuline", "insulin", "insulin_use"),
    "drusen": ("drusens", "drusen"),
    "diabetes_time": ("diabetes_time_y", "diabetes_time"),
}
# finding -> header names; the 0/1 columns read into ``findings`` (an absent column is simply not annotated)
FINDING_COLUMNS = {
    "macular_edema": ("macular_edema",), "scar": ("scar",), "nevus": ("nevus",), "amd": ("amd",),
    "vascular_occlusion": ("vascular_occlusion",), "hypertensive_retinopathy": ("hypertensive_retinopathy",),
    "drusen": ("drusens", "drusen"), "hemorrhage": ("hemorrhage",), "retinal_detachment": ("retinal_detachment",),
    "myopic_fundus": ("myopic_fundus",), "increased_cup_disc": ("increased_cup_disc",), "other": ("other",),
}
# The findings that name a disease (the multi-condition label); the rest are lesions or signs.
CONDITIONS = ("diabetic_retinopathy", "macular_edema", "amd", "vascular_occlusion", "hypertensive_retinopathy",
              "retinal_detachment", "myopic_fundus", "increased_cup_disc")
EYE_CODES = {"1": "right", "2": "left"}
# Header spellings that identify a version when the folder name does not.
VERSION_BY_HEADER = {"iluminaton": "1.0.0", "Illuminaton": "1.0.1", "illumination": "1.0.2"}
SEX_CODES = {"1": "male", "2": "female"}
QUALITY_CODES = {"adequate": "adequate", "inadequate": "inadequate"}
DIABETES_CODES = {"yes": "yes", "no": "no"}


def locate(folder: Path) -> tuple[Path, Path, list[str]]:
    """(label file, image folder, warnings): the shallowest label file that has fundus_photos/ beside it."""
    expected = f"{' or '.join(LABEL_FILES)} beside a {IMAGE_FOLDER}/ folder"
    candidates = find_files(folder, LABEL_FILES)
    if not candidates:
        raise DataError(f"no BRSET label file found; expected {expected} somewhere under {folder} (e.g. "
                        f"{folder}/physionet.org/files/brazilian-ophthalmological/1.0.0/labels.csv)", file=str(folder))
    usable = [(c, d[0]) for c in candidates if (d := _image_dirs(c.parent))]
    if not usable:
        expected_photos = candidates[0].parent / IMAGE_FOLDER
        raise DataError(f"no {IMAGE_FOLDER}/ folder beside the label file; expected {expected_photos}",
                        file=str(candidates[0]))
    label, photos = usable[0]
    warnings = [f"also found {c}; using {label}" for c, _ in usable[1:]]
    return label, photos, warnings


def _image_dirs(parent: Path) -> list[Path]:
    return [p for p in sorted(parent.iterdir()) if p.is_dir() and p.name.lower() == IMAGE_FOLDER]


def detect_version(label: Path, headers: list[str]) -> tuple[str, str]:
    """(version, how it was found): the PhysioNet version folder if present, else a header spelling."""
    for part in reversed(label.parent.parts):
        if re.fullmatch(r"\d+\.\d+(\.\d+)?", part):
            return part, "folder"
    for spelling, version in VERSION_BY_HEADER.items():
        if spelling in headers:
            return version, "header"
    return "unknown", "none"


def read(folder: Path) -> DatasetLoad:
    """Every labelled BRSET image under ``folder`` (all cohorts, no split)."""
    folder = Path(folder)
    label, photos, warnings = locate(folder)
    headers, rows = read_csv_rows(label)
    columns = resolve_columns(headers, COLUMNS, label)
    extras = resolve_columns(headers, EXTRA_COLUMNS, label, optional=EXTRA_COLUMNS)
    findings = resolve_columns(headers, FINDING_COLUMNS, label, optional=FINDING_COLUMNS)
    used = set(columns.values()) | set(extras.values())
    passthrough = [h for h in headers if h and h not in used]
    load = SPEC.new_load(folder, warnings)
    read_rows(load, ImageMatcher(folder, label, photos), rows,
              lambda row: _listed(row, label, columns, extras, passthrough, findings))
    load.warnings += _warnings(load.records)
    version, version_source = detect_version(label, headers)
    return SPEC.finish_load(
        load, relative_to(folder, label), version=version, version_source=version_source,
        image_folder=relative_to(folder, photos), label_rows=len(rows),
        documented_counts={ALL_IMAGES: RELEASE_COUNTS[version]} if version in RELEASE_COUNTS else {})


def _listed(row: dict, label: Path, columns: dict, extras: dict, passthrough: list[str],
            finding_columns: dict) -> Listed:
    n = row["__row__"]
    image_id = clean_id(row[columns["image_id"]], label, n, columns["image_id"])
    icdr = parse_grade(row[columns["icdr"]], range(5), label, n, columns["icdr"])
    edema = parse_grade(row[columns["edema"]], (0, 1), label, n, columns["edema"])
    cup_disc = parse_grade(row[columns["cup_disc"]], (0, 1), label, n, columns["cup_disc"])
    findings = {name: parse_grade(row[header], (0, 1), label, n, header) for name, header in finding_columns.items()}
    findings["diabetic_retinopathy"] = dr_present(icdr)
    abnormal, conditions = normal_and_conditions(findings, CONDITIONS)
    extra = {concept: row[header] for concept, header in extras.items()}
    extra.update({header: row[header] for header in passthrough})
    eye = row[extras["exam_eye"]] if "exam_eye" in extras else None
    extra.update(diabetes=map_code(row[columns["diabetes"]], DIABETES_CODES, label, n, columns["diabetes"]),
                 dr_icdr=icdr, macular_edema=edema, increased_cup_disc=cup_disc)
    return Listed(with_extension(image_id), image_id, n, dict(
        patient_id=clean_id(row[columns["patient_id"]], label, n, columns["patient_id"]),
        dr=dr_present(icdr),
        referable_dr=referable_dr(icdr, edema, needs_grade=True),
        glaucoma=cup_disc,
        age=parse_age(row[columns["age"]], label, n, columns["age"]),
        sex=map_code(row[columns["sex"]], SEX_CODES, label, n, columns["sex"]),
        quality=map_code(row[columns["quality"]], QUALITY_CODES, label, n, columns["quality"]),
        extra=extra, dr_grade=icdr, abnormal=abnormal, conditions=conditions,
        findings={k: v for k, v in findings.items() if v is not None},
        laterality=map_code(eye, EYE_CODES, label, n, "exam_eye")))


def _warnings(records: list[ImageRecord]) -> list[str]:
    warnings = []
    for attribute in ("sex", "age"):
        patients = inconsistent_within_patient(records, attribute)
        if patients:
            warnings.append(f"{attribute} differs between the images of {len(patients)} patient(s), "
                            f"e.g. {', '.join(patients[:5])}")
    return warnings

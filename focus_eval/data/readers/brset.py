"""BRSET reader: a label file (labels.csv, labels_brset.csv or label_brset.csv) beside fundus_photos/, at any
depth under the dataset folder (PhysioNet's physionet.org/files/brazilian-ophthalmological/<version>/ or flat).

Unknown codes in the sex, quality, grade and finding columns are load errors (DataError naming file, row and
column), never recoded; an empty grade or finding leaves the targets that need it undefined. Label rows whose
image file is missing are skipped and reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from focus_eval.data import common
from focus_eval.data.records import DatasetLoad, ImageRecord, Skipped
from focus_eval.errors import DataError

TARGETS = ("dr", "referable_dr", "glaucoma")
COHORTS = {
    "diabetic": lambda record: record.extra.get("diabetes") == "yes",
    "all": lambda record: True,
}
DEFAULT_COHORT = "diabetic"
OFFICIAL_SPLIT = False
GROUP_KEY = "patient_id"
LABEL_RULES = {
    "dr": "DR_ICDR >= 1",
    "referable_dr": "DR_ICDR >= 2 or macular_edema == 1",
    "glaucoma": "increased_cup_disc == 1 (a retinal specialist's cup/disc finding, not a glaucoma diagnosis)",
}

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
# Header spellings that identify a version when the folder name does not.
VERSION_BY_HEADER = {"iluminaton": "1.0.0", "Illuminaton": "1.0.1", "illumination": "1.0.2"}
# All-image counts documented per release (before any cohort); a difference is a warning, never an error.
DOCUMENTED_COUNTS = {
    "1.0.0": {"n": 16266, "dr_pos": 1056, "referable_dr_pos": 952, "glaucoma_pos": 3202},
    "1.0.1": {"dr_pos": 1083, "glaucoma_pos": 3205},
}
SEX_CODES = {"1": "male", "2": "female"}
QUALITY_CODES = {"adequate": "adequate", "inadequate": "inadequate"}
DIABETES_CODES = {"yes": "yes", "no": "no"}


def locate(folder: Path) -> tuple[Path, Path, list[str]]:
    """(label file, image folder, warnings): the shallowest label file that has fundus_photos/ beside it."""
    expected = f"{' or '.join(LABEL_FILES)} beside a {IMAGE_FOLDER}/ folder"
    if not folder.is_dir():
        raise DataError(f"dataset folder not found; expected {expected} under it", file=str(folder))
    candidates = common.find_files(folder, LABEL_FILES)
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


@dataclass
class _Source:
    """Where one load reads from: the resolved dataset folder, the label file and its resolved columns."""

    root: Path
    label: Path
    photos: Path
    index: dict[str, Path]
    columns: dict[str, str]
    extras: dict[str, str]
    passthrough: list[str]


def read(folder: Path) -> DatasetLoad:
    """Every labelled BRSET image under ``folder`` (all cohorts, no split)."""
    folder = Path(folder)
    label, photos, warnings = locate(folder)
    root = folder.resolve()
    photos = common.safe_path(root, photos, label, None)
    headers, rows = common.read_csv_rows(label)
    columns = common.resolve_columns(headers, COLUMNS, label)
    extras = common.resolve_columns(headers, EXTRA_COLUMNS, label, optional=EXTRA_COLUMNS)
    used = set(columns.values()) | set(extras.values())
    source = _Source(root, label, photos, common.file_index(photos), columns, extras,
                     [h for h in headers if h and h not in used])
    records, skipped, seen = [], [], {}
    for row in rows:
        record = _record(row, source, seen)
        (skipped if isinstance(record, Skipped) else records).append(record)
    warnings += _warnings(records, source.index, photos)
    version, version_source = detect_version(label, headers)
    warnings += common.documented_count_warnings("brset", records, TARGETS, DOCUMENTED_COUNTS.get(version))
    metadata = {"label_file": common.relative_to(folder, label), "version": version,
                "version_source": version_source, "image_folder": common.relative_to(folder, photos),
                "label_rows": len(rows), "label_rules": LABEL_RULES}
    return DatasetLoad("brset", folder, records, skipped, warnings, metadata)


def _record(row: dict, source: _Source, seen: dict[str, int]) -> ImageRecord | Skipped:
    n, label, columns = row["__row__"], source.label, source.columns
    image_id = common.clean_id(row[columns["image_id"]], label, n, columns["image_id"])
    if image_id in seen:
        raise DataError(f"image_id {image_id!r} already listed on row {seen[image_id]}", file=str(label), row=n)
    seen[image_id] = n
    name = common.with_extension(image_id)
    path = common.listed_file(source.root, source.photos, name, source.index, label, n)
    if path is None:
        return Skipped(str(label), n, image_id, f"image file not found: {source.photos / name}")
    icdr = common.parse_grade(row[columns["icdr"]], range(5), label, n, columns["icdr"])
    edema = common.parse_grade(row[columns["edema"]], (0, 1), label, n, columns["edema"])
    cup_disc = common.parse_grade(row[columns["cup_disc"]], (0, 1), label, n, columns["cup_disc"])
    extra = {concept: row[header] for concept, header in source.extras.items()}
    extra.update({header: row[header] for header in source.passthrough})
    extra.update(diabetes=common.map_code(row[columns["diabetes"]], DIABETES_CODES, label, n, columns["diabetes"]),
                 dr_icdr=icdr, macular_edema=edema, increased_cup_disc=cup_disc)
    return ImageRecord(
        dataset="brset", image_id=image_id,
        patient_id=common.clean_id(row[columns["patient_id"]], label, n, columns["patient_id"]),
        path=path, relpath=path.relative_to(source.root).as_posix(),
        dr=None if icdr is None else int(icdr >= 1),
        referable_dr=referable(icdr, edema),
        glaucoma=cup_disc,
        age=common.parse_age(row[columns["age"]], label, n, columns["age"]),
        sex=common.map_code(row[columns["sex"]], SEX_CODES, label, n, columns["sex"]),
        quality=common.map_code(row[columns["quality"]], QUALITY_CODES, label, n, columns["quality"]),
        extra=extra)


def referable(icdr: int | None, edema: int | None) -> int | None:
    """ICDR >= 2 or edema; undefined without a grade, or without an edema value when the grade is below 2."""
    if icdr is None:
        return None
    if icdr >= 2 or edema == 1:
        return 1
    return None if edema is None else 0


def _warnings(records: list[ImageRecord], index: dict[str, Path], photos: Path) -> list[str]:
    warnings = []
    for attribute in ("sex", "age"):
        patients = common.inconsistent_within_patient(records, attribute)
        if patients:
            warnings.append(f"{attribute} differs between the images of {len(patients)} patient(s), "
                            f"e.g. {', '.join(patients[:5])}")
    unlabelled = len(index) - len({r.path.name.lower() for r in records})
    if unlabelled > 0:
        warnings.append(f"{unlabelled} image file(s) in {photos} have no label row")
    return warnings

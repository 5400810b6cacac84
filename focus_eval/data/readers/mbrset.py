"""mBRSET reader: labels_mbrset.csv (PhysioNet) or dataframe_brsetmobile.csv (authors' repository), at any
depth; images are matched by the ``file`` column anywhere under the label file's folder (``images/`` in the
PhysioNet copy), with or without ``.jpg`` in the label file.

Unknown codes in the sex, quality, grade and edema columns are load errors (DataError naming file, row and
column), never recoded. A missing grade excludes the row from both targets; a missing edema value excludes
it from referable DR unless the grade alone makes it referable. Implausible ages are warned about, not dropped.
"""

from __future__ import annotations

import os
from pathlib import Path

from focus_eval.data import common
from focus_eval.data.records import DatasetLoad, ImageRecord, Skipped
from focus_eval.errors import DataError

TARGETS = ("dr", "referable_dr")
# The reference benchmark keeps views .1 and .3 (one frame per eye); the full set is an opt-in cohort.
COHORTS = {
    "views_1_3": lambda record: record.extra.get("view") in ("1", "3"),
    "all_views": lambda record: True,
}
DEFAULT_COHORT = "views_1_3"
OFFICIAL_SPLIT = False
GROUP_KEY = "patient"
LABEL_RULES = {
    "dr": "final_icdr >= 1 (rows without final_icdr excluded)",
    "referable_dr": "final_icdr >= 2 or final_edema == yes (rows without final_icdr excluded; "
                    "final_icdr < 2 with no edema value excluded)",
}

LABEL_FILES = ("labels_mbrset.csv", "dataframe_brsetmobile.csv")
COLUMNS = {
    "patient": ("patient",),
    "file": ("file",),
    "age": ("age",),
    "sex": ("sex",),
    "quality": ("final_quality",),
    "icdr": ("final_icdr",),
    "edema": ("final_edema",),
}
# Counts documented for PhysioNet v1.0 (5,164 label rows, 985.1.jpg missing); differences are warnings only.
DOCUMENTED_COUNTS = {"n": 5163, "dr_pos": 1134, "referable_dr_pos": 895}
SEX_CODES = {"1": "male", "0": "female"}
QUALITY_CODES = {"yes": "adequate", "no": "inadequate"}
EDEMA_CODES = {"yes": 1, "no": 0}


def locate(folder: Path) -> Path:
    """The shallowest mBRSET label file under ``folder``."""
    return common.find_one(folder, LABEL_FILES,
                           "mBRSET label file (e.g. physionet.org/files/mbrset/1.0/labels_mbrset.csv)")


def image_index(base: Path) -> tuple[dict[str, Path], list[str]]:
    """Lower-cased file name -> image path anywhere under ``base`` (hidden folders skipped, shallowest copy
    wins), and warnings for names found more than once."""
    files = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        files += [Path(dirpath) / f for f in filenames if Path(f).suffix.lower() in common.IMAGE_SUFFIXES]
    files.sort(key=lambda p: (len(p.parts), str(p)))
    index: dict[str, Path] = {}
    duplicates = []
    for path in files:
        if path.name.lower() in index:
            duplicates.append(str(path))
        else:
            index[path.name.lower()] = path
    warnings = [f"{len(duplicates)} image name(s) occur more than once under {base}; using the shallowest "
                f"copy (e.g. ignored {duplicates[0]})"] if duplicates else []
    return index, warnings


def read(folder: Path) -> DatasetLoad:
    """Every labelled mBRSET image under ``folder`` (all views, no split)."""
    folder = Path(folder)
    label = locate(folder)
    headers, rows = common.read_csv_rows(label)
    columns = common.resolve_columns(headers, COLUMNS, label)
    passthrough = [h for h in headers if h and h not in set(columns.values())]
    root = folder.resolve()
    base = common.safe_path(root, label.parent, label, None)
    index, warnings = image_index(base)
    records, skipped, seen = [], [], {}
    for row in rows:
        record = _record(row, root, label, base, index, columns, passthrough, seen)
        (skipped if isinstance(record, Skipped) else records).append(record)
    warnings += _implausible_ages(records)
    warnings += common.documented_count_warnings("mbrset", records, TARGETS, DOCUMENTED_COUNTS)
    metadata = {"label_file": common.relative_to(folder, label), "version": _version(label),
                "label_rows": len(rows), "label_rules": LABEL_RULES}
    return DatasetLoad("mbrset", folder, records, skipped, warnings, metadata)


def _implausible_ages(records: list[ImageRecord], low: float = 18.0, high: float = 100.0) -> list[str]:
    """One warning per patient whose age is implausible (the rows are kept)."""
    flagged = {r.patient_id: r.age for r in records if r.age is not None and not low <= r.age <= high}
    return [f"patient {patient}: implausible age {age:g} (rows kept)" for patient, age in flagged.items()]


def _version(label: Path) -> str:
    parts = label.parent.parts
    return parts[-1] if len(parts) >= 2 and parts[-2] == "mbrset" else "unknown"


def _record(row, root, label, base, index, columns, passthrough, seen):
    n = row["__row__"]
    name = common.with_extension(common.clean_id(row[columns["file"]], label, n, columns["file"]))
    image_id = Path(name).stem if Path(name).suffix.lower() in common.IMAGE_SUFFIXES else name
    if image_id in seen:
        raise DataError(f"file {name!r} already listed on row {seen[image_id]}", file=str(label), row=n)
    seen[image_id] = n
    path = common.listed_file(root, base, name, index, label, n)
    if path is None:
        return Skipped(str(label), n, image_id, f"image file not found: {name} under {label.parent}")
    icdr = common.parse_grade(row[columns["icdr"]], range(5), label, n, columns["icdr"])
    edema = common.map_code(row[columns["edema"]], EDEMA_CODES, label, n, columns["edema"])
    extra = {header: row[header] for header in passthrough}
    extra.update(view=image_id.rsplit(".", 1)[1] if "." in image_id else None,
                 final_icdr=icdr, final_edema=edema)
    return ImageRecord(
        dataset="mbrset", image_id=image_id,
        patient_id=common.clean_id(row[columns["patient"]], label, n, columns["patient"]),
        path=path, relpath=path.relative_to(root).as_posix(),
        dr=None if icdr is None else int(icdr >= 1),
        referable_dr=referable(icdr, edema),
        age=common.parse_age(row[columns["age"]], label, n, columns["age"]),
        sex=common.map_code(row[columns["sex"]], SEX_CODES, label, n, columns["sex"]),
        quality=common.map_code(row[columns["quality"]], QUALITY_CODES, label, n, columns["quality"]),
        extra=extra)


def referable(icdr: int | None, edema: int | None) -> int | None:
    """ICDR >= 2 or edema; undefined without a grade even when edema is yes, and undefined when the grade is
    below 2 and the edema value is missing."""
    if icdr is None:
        return None
    if icdr >= 2 or edema == 1:
        return 1
    return None if edema is None else 0

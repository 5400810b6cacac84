"""mBRSET reader: labels_mbrset.csv (PhysioNet) or dataframe_brsetmobile.csv (authors' repository), at any
depth; images are matched by the ``file`` column anywhere under the label file's folder (``images/`` in the
PhysioNet copy), with or without ``.jpg`` in the label file.

Unknown codes in the sex, quality, grade and edema columns are load errors (DataError naming file, row and
column), never recoded. A missing grade excludes the row from both targets; a missing edema value excludes
it from referable DR unless the grade alone makes it referable. Implausible ages are warned about, not dropped.
"""

from __future__ import annotations

from pathlib import Path

from focus_eval.data.cells import clean_id, dr_present, map_code, parse_age, parse_grade, referable_dr
from focus_eval.data.files import find_one, image_files, relative_to, safe_path, with_extension
from focus_eval.data.matching import ImageMatcher, Listed, read_rows
from focus_eval.data.records import DatasetLoad, ImageRecord
from focus_eval.data.spec import ALL_IMAGES, ReaderSpec, every_image
from focus_eval.data.tables import read_csv_rows, resolve_columns

SPEC = ReaderSpec(
    name="mbrset",
    targets=("dr", "referable_dr"),
    # The reference benchmark keeps views .1 and .3 (one frame per eye); the full set is an opt-in cohort.
    cohorts={"views_1_3": lambda record: record.extra.get("view") in ("1", "3"), "all_views": every_image},
    default_cohort="views_1_3",
    group_key="patient",
    # PhysioNet v1.0: 5,164 label rows, 985.1.jpg missing
    documented_counts={ALL_IMAGES: {"n": 5163, "dr_pos": 1134, "referable_dr_pos": 895}},
    label_rules={
        "dr": "final_icdr >= 1 (rows without final_icdr excluded)",
        "referable_dr": "final_icdr >= 2 or final_edema == yes (rows without final_icdr excluded; "
                        "final_icdr < 2 with no edema value excluded)",
        "laterality": "the laterality column (right / left)",
        "dr_grade": "final_icdr",
    },
)

LABEL_FILES = ("labels_mbrset.csv", "dataframe_brsetmobile.csv")
COLUMNS = {
    "patient": ("patient",),
    "file": ("file",),
    "age": ("age",),
    "sex": ("sex",),
    "quality": ("final_quality",),
    "icdr": ("final_icdr",),
    "edema": ("final_edema",),
    "laterality": ("laterality",),
}
SEX_CODES = {"1": "male", "0": "female"}
QUALITY_CODES = {"yes": "adequate", "no": "inadequate"}
EDEMA_CODES = {"yes": 1, "no": 0}
LATERALITY_CODES = {"right": "right", "left": "left"}


def locate(folder: Path) -> Path:
    """The shallowest mBRSET label file under ``folder``."""
    return find_one(folder, LABEL_FILES,
                           "mBRSET label file (e.g. physionet.org/files/mbrset/1.0/labels_mbrset.csv)")


def image_index(base: Path) -> tuple[dict[str, Path], list[str]]:
    """Lower-cased file name -> image path anywhere under ``base`` (hidden folders skipped, shallowest copy
    wins), and warnings for names found more than once."""
    index, shadowed = image_files(base, recursive=True)
    warnings = [f"{len(shadowed)} image name(s) occur more than once under {base}; using the shallowest "
                f"copy (e.g. ignored {shadowed[0]})"] if shadowed else []
    return index, warnings


def read(folder: Path) -> DatasetLoad:
    """Every labelled mBRSET image under ``folder`` (all views, no split)."""
    folder = Path(folder)
    label = locate(folder)
    headers, rows = read_csv_rows(label)
    columns = resolve_columns(headers, COLUMNS, label, optional=("laterality",))
    # the laterality column also stays in extra as written, as before it was read into ``laterality``
    passthrough = [h for h in headers if h and h not in set(columns.values()) - {columns.get("laterality")}]
    base = safe_path(folder, label.parent, label, None)
    index, warnings = image_index(base)
    load = SPEC.new_load(folder, warnings)
    read_rows(load, ImageMatcher(folder, label, base, images=index), rows,
              lambda row: _listed(row, label, columns, passthrough))
    load.warnings += _implausible_ages(load.records)
    return SPEC.finish_load(load, relative_to(folder, label), version=_version(label), label_rows=len(rows))


def _implausible_ages(records: list[ImageRecord], low: float = 18.0, high: float = 100.0) -> list[str]:
    """One warning per patient whose age is implausible (the rows are kept)."""
    flagged = {r.patient_id: r.age for r in records if r.age is not None and not low <= r.age <= high}
    return [f"patient {patient}: implausible age {age:g} (rows kept)" for patient, age in flagged.items()]


def _version(label: Path) -> str:
    parts = label.parent.parts
    return parts[-1] if len(parts) >= 2 and parts[-2] == "mbrset" else "unknown"


def _listed(row: dict, label: Path, columns: dict, passthrough: list[str]) -> Listed:
    n = row["__row__"]
    name = with_extension(clean_id(row[columns["file"]], label, n, columns["file"]))
    image_id = Path(name).stem  # with_extension made sure the name ends in an image extension
    icdr = parse_grade(row[columns["icdr"]], range(5), label, n, columns["icdr"])
    edema = map_code(row[columns["edema"]], EDEMA_CODES, label, n, columns["edema"])
    extra = {header: row[header] for header in passthrough}
    extra.update(view=image_id.rsplit(".", 1)[1] if "." in image_id else None,
                 final_icdr=icdr, final_edema=edema)
    return Listed(name, image_id, n, dict(
        patient_id=clean_id(row[columns["patient"]], label, n, columns["patient"]),
        dr=dr_present(icdr),
        referable_dr=referable_dr(icdr, edema, needs_grade=True),
        age=parse_age(row[columns["age"]], label, n, columns["age"]),
        sex=map_code(row[columns["sex"]], SEX_CODES, label, n, columns["sex"]),
        quality=map_code(row[columns["quality"]], QUALITY_CODES, label, n, columns["quality"]),
        extra=extra, dr_grade=icdr,
        laterality=map_code(row[columns["laterality"]], LATERALITY_CODES, label, n, columns["laterality"])
        if "laterality" in columns else None))

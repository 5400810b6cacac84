"""Reader for OCTDL (Kulyabin et al. 2024): OCT B-scans in one folder per disease class
(``OCTDL/<CLASS>/<file_name>.jpg``) and ``OCTDL_labels.csv`` with one row per image: ``file_name`` (no
extension), ``disease`` (AMD, DME, ERM, NO, RAO, RVO, VID), ``subcategory``, ``patient_id`` and, where the
release gives them, ``eye`` (OD/OS) and ``sex``. The release has no split; the loader's seeded,
patient-grouped 60/20/20 split applies (``focus_eval.data.splits``).

Labels: ``disease`` is the one condition of the image (``NO`` -> normal, abnormal 0; every other class ->
abnormal 1, conditions the class code). There is no screening target; modality is "oct".
"""

from __future__ import annotations

from pathlib import Path

from focus_eval.data.cells import clean_id, map_code
from focus_eval.data.files import find_label_file, with_extension
from focus_eval.data.matching import ImageMatcher, Listed, read_rows
from focus_eval.data.records import NORMAL, DatasetLoad
from focus_eval.data.spec import ALL_IMAGES, ReaderSpec
from focus_eval.data.tables import read_csv_rows, resolve_columns
from focus_eval.errors import DataError

SPEC = ReaderSpec(
    name="octdl",
    targets=(),
    group_key="patient_id",
    modality="oct",
    # the class counts of the published release
    documented_counts={ALL_IMAGES: {"n": 2064}},
    label_rules={
        "abnormal": "disease NO -> 0; AMD, DME, ERM, RAO, RVO, VID -> 1",
        "conditions": "the disease code (one per image); NO -> normal",
        "laterality": "eye OD -> right, OS -> left",
    },
)

LABEL_FILE = "OCTDL_labels.csv"
CLASSES = ("AMD", "DME", "ERM", "NO", "RAO", "RVO", "VID")
COLUMNS = {"file": ("file_name",), "disease": ("disease",), "patient": ("patient_id",),
           "subcategory": ("subcategory",), "eye": ("eye",), "sex": ("sex",)}
OPTIONAL = ("subcategory", "eye", "sex")
EYES = {"OD": "right", "OS": "left", "R": "right", "L": "left", "right": "right", "left": "left"}
SEXES = {"M": "male", "F": "female", "male": "male", "female": "female"}  # any case


def condition_of(disease: str) -> str:
    """The condition of an image whose disease code is ``disease``."""
    return NORMAL if disease == "NO" else disease


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    load = SPEC.new_load(folder)
    label_file = find_label_file(folder, [LABEL_FILE], "OCTDL label file", load.warnings)
    headers, rows = read_csv_rows(label_file)
    found = resolve_columns(headers, COLUMNS, label_file, optional=OPTIONAL)

    def listed(row: dict) -> Listed:
        line = row["__row__"]
        name = clean_id(row[found["file"]], label_file, line, found["file"])
        disease = (row[found["disease"]] or "").strip().upper()
        if disease not in CLASSES:
            raise DataError(f"column {found['disease']!r}: {row[found['disease']]!r} is not one of "
                            f"{', '.join(CLASSES)}", file=str(label_file), row=line)
        fields = {"patient_id": clean_id(row[found["patient"]], label_file, line, found["patient"]),
                  "abnormal": int(disease != "NO"), "conditions": (condition_of(disease),), "modality": "oct",
                  "laterality": _coded(row, found, "eye", EYES, label_file, line),
                  "sex": _coded(row, found, "sex", SEXES, label_file, line),
                  "extra": {"disease": disease, "subcategory": row.get(found.get("subcategory", ""))}}
        return Listed(with_extension(name), Path(name).stem, line, fields)

    read_rows(load, ImageMatcher(folder, label_file, folder, recursive=True), rows, listed)
    return SPEC.finish_load(load, label_file.relative_to(folder).as_posix())


def _coded(row: dict, found: dict, concept: str, codes: dict, label_file: Path, line: int) -> str | None:
    """An optional coded column of the row (None when the release has no such column or the cell is empty)."""
    if concept not in found:
        return None
    return map_code(row[found[concept]], codes, label_file, line, found[concept])

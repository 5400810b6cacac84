"""Reader for TOP, the Tsukazaki Optos Public set (Tsukazaki Hospital, Himeji, Japan; tsukazaki-ai.github.io/
optos_dataset): 13,047 Optos ultra-wide-field images of 5,389 patients (8,588 eyes), with one label table,
``data.csv``, of one row per image: ``filename`` (``<patient serial>_<image serial>.jpg``, such as
``000011_01.jpg``), ``age``, ``sex`` (M/F), ``LR`` (L/R: the eye) and 0/1 columns for the diagnoses ``AMD``,
``RVO``, ``Gla``, ``MH``, ``DR``, ``RD``, ``RP``, ``AO`` and ``DM`` (diabetes mellitus, the patient's systemic
diagnosis). An image may have several; one with none is a normal eye.

The table is found at any depth; each listed file is looked up by name (any case) in the table's folder and
every folder below it, since the layout of the image archive is not documented. No split is published: the
loader's seeded, patient-grouped split applies, stratified on ``dr`` and ``glaucoma``.

Labels: ``conditions`` are the eye-disease columns that are 1, under the release's codes; DM is not an eye
finding and is kept in ``extra["diabetes"]``, so an image whose only 1 is DM is normal (conditions normal,
abnormal 0). ``dr`` is the DR column, ``glaucoma`` the Gla column. The patient is the file name's part before
the underscore; a file name of any other form is an error, since its images could not be kept in one split.
Modality "uwf".
"""

from __future__ import annotations

import re
from pathlib import Path

from focus_eval.data.cells import map_code, normal_and_conditions, parse_age, parse_grade
from focus_eval.data.files import find_label_file, relative_to
from focus_eval.data.matching import ImageMatcher, Listed, read_rows
from focus_eval.data.records import DatasetLoad
from focus_eval.data.spec import ALL_IMAGES, ReaderSpec
from focus_eval.data.tables import read_csv_rows, resolve_columns
from focus_eval.errors import DataError

# the eye-disease columns, in the release's order
CONDITIONS = ("AMD", "RVO", "Gla", "MH", "DR", "RD", "RP", "AO")
DIABETES = "DM"

SPEC = ReaderSpec(
    name="top",
    targets=("dr", "glaucoma"),
    group_key="patient (the file name's serial before the underscore; both eyes of a patient share a split)",
    modality="uwf",
    # the project page as a user of the release reports it: 13,047 images, DR 1 in 3,323 rows, Gla 1 in 2,619
    documented_counts={ALL_IMAGES: {"n": 13047, "dr_pos": 3323, "glaucoma_pos": 2619}},
    label_rules={
        "conditions": "the eye-disease columns that are 1 (AMD, RVO, Gla, MH, DR, RD, RP, AO); none of them 1 -> "
                      "normal; DM (diabetes) is not an eye finding and is kept in extra",
        "abnormal": "any eye-disease column 1 -> 1; all 0 -> 0 (DM alone -> 0)",
        "dr": "DR column (1 -> 1, 0 -> 0)",
        "glaucoma": "Gla column (1 -> 1, 0 -> 0)",
        "laterality": "LR: L -> left, R -> right",
    },
)

LABEL_FILE = "data.csv"
COLUMNS = {"file": ("filename",), "age": ("age",), "sex": ("sex",), "eye": ("LR",), "diabetes": (DIABETES,),
           **{code: (code,) for code in CONDITIONS}}
SEX = {"M": "male", "F": "female"}
EYE = {"L": "left", "R": "right"}
FILE_NAME = re.compile(r"^(\d+)_(\d+)\.(jpe?g|png|tiff?)$", re.IGNORECASE)


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    load = SPEC.new_load(folder)
    label_file = find_label_file(folder, [LABEL_FILE], "TOP label table", load.warnings)
    headers, rows = read_csv_rows(label_file)
    found = resolve_columns(headers, COLUMNS, label_file)
    matcher = ImageMatcher(folder, label_file, label_file.parent, recursive=True)
    read_rows(load, matcher, rows, lambda row: _listed(row, found, label_file))
    return SPEC.finish_load(load, relative_to(folder, label_file))


def _listed(row: dict, found: dict, label_file: Path) -> Listed:
    line = row["__row__"]
    name = (row[found["file"]] or "").strip()
    match = FILE_NAME.match(name)
    if not match:
        raise DataError(f"column {found['file']!r}: {row[found['file']]!r} is not a file name of the form "
                        "<patient serial>_<image serial>.jpg, so its patient is unknown",
                        file=str(label_file), row=line)
    flags = {code: parse_grade(row[found[code]], (0, 1), label_file, line, found[code]) for code in CONDITIONS}
    abnormal, conditions = normal_and_conditions(flags, CONDITIONS)
    fields = {
        "patient_id": match.group(1),
        "age": parse_age(row[found["age"]], label_file, line, found["age"]),
        "sex": map_code(row[found["sex"]], SEX, label_file, line, found["sex"]),
        "laterality": map_code(row[found["eye"]], EYE, label_file, line, found["eye"]),
        "abnormal": abnormal,
        "conditions": conditions,
        "dr": flags["DR"],
        "glaucoma": flags["Gla"],
        "modality": "uwf",
        "extra": {"diabetes": parse_grade(row[found["diabetes"]], (0, 1), label_file, line, found["diabetes"])},
    }
    return Listed(name, name.rsplit(".", 1)[0], line, fields)

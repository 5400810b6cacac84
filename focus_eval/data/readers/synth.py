"""Reader for the synthetic datasets ``synth_desktop`` and ``synth_mobile`` written by ``focus-eval synth``.

Raw layout (one folder per dataset)::

    synth.json     {"dataset": "synth_desktop" | "synth_mobile", "device", "n", "seed", "version"}
    labels.csv     image, patient, eye, icdr, dme, cdr, glaucoma, age, sex, quality, device
    images/        <image> files named in labels.csv (``d0001_OD.jpg``)

``icdr`` is the ICDR grade 0-4, ``dme`` and ``glaucoma`` are 0/1, ``eye`` is OD/OS, ``sex`` male/female,
``quality`` adequate/inadequate, ``age`` in years. Targets: dr = icdr >= 1; referable_dr = icdr >= 2 or
dme = 1; glaucoma = the clinical label. Two eyes per patient; no official split.

Further fields: laterality (OD -> right, OS -> left), dr_grade = icdr, and, where labels.csv has the lesion
count columns (version 2 and later: how many lesions of each kind the renderer drew, and their contrast), the
findings microaneurysm, haemorrhage (dot, blot, flame or preretinal), hard_exudate (exudate clusters, or the
macular exudates of dme = 1), cotton_wool_spot and new_vessels, each 1 when any was drawn; conditions:
diabetic_retinopathy (icdr >= 1), macular_edema (dme), glaucoma, or normal when none applies.
"""

from __future__ import annotations

import json
from pathlib import Path

from focus_eval.data.cells import (clean_id, dr_present, map_code, normal_and_conditions, parse_age, parse_grade,
                                   parse_number, referable_dr)
from focus_eval.data.files import find_one
from focus_eval.data.matching import ImageMatcher, Listed, read_rows
from focus_eval.data.records import DatasetLoad
from focus_eval.data.spec import ReaderSpec
from focus_eval.data.tables import read_csv_rows, resolve_columns
from focus_eval.errors import DataError

SPEC = ReaderSpec(
    name="synth",
    targets=("dr", "referable_dr", "glaucoma"),
    group_key="patient (labels.csv column 'patient'; two eyes per patient)",
)

NAMES = ("synth_desktop", "synth_mobile")
MANIFEST_FILE = "synth.json"
LABELS_FILE = "labels.csv"
IMAGES_DIR = "images"
COLUMNS = ("image", "patient", "eye", "icdr", "dme", "cdr", "glaucoma", "age", "sex", "quality", "device")
# lesion kind -> its count column in labels.csv (optional: folders written before version 2 lack them)
LESION_COLUMNS = {"microaneurysm": "microaneurysms", "dot_haemorrhage": "dot_haemorrhages",
                  "blot_haemorrhage": "blot_haemorrhages", "flame_haemorrhage": "flame_haemorrhages",
                  "preretinal_haemorrhage": "preretinal_haemorrhages", "exudate_cluster": "exudates",
                  "cotton_wool": "cotton_wool", "new_vessels": "new_vessels"}
CONTRAST_COLUMN = "lesion_contrast"
# finding -> the lesion kinds that mark it
FINDINGS = {"microaneurysm": ("microaneurysm",),
            "haemorrhage": ("dot_haemorrhage", "blot_haemorrhage", "flame_haemorrhage", "preretinal_haemorrhage"),
            "hard_exudate": ("exudate_cluster",), "cotton_wool_spot": ("cotton_wool",), "new_vessels": ("new_vessels",)}
CONDITIONS = ("diabetic_retinopathy", "macular_edema", "glaucoma")

_BINARY = {"0": 0, "1": 1}
_EYES = {"OD": "OD", "OS": "OS"}
_SEXES = {"male": "male", "female": "female"}
_QUALITIES = {"adequate": "adequate", "inadequate": "inadequate"}


def dataset_name(folder: Path) -> str:
    """The registry name a synthetic dataset folder holds, from its ``synth.json``."""
    manifest = find_one(Path(folder), [MANIFEST_FILE], "synthetic dataset manifest (run 'focus-eval synth')")
    try:
        name = json.loads(manifest.read_text(encoding="utf-8")).get("dataset")
    except (ValueError, AttributeError) as exc:
        raise DataError(f"not a JSON object with a 'dataset' key: {exc}", file=str(manifest)) from None
    if name not in NAMES:
        raise DataError(f"'dataset' is {name!r}; expected one of {list(NAMES)}", file=str(manifest))
    if Path(folder).name in NAMES and Path(folder).name != name:
        raise DataError(f"folder {Path(folder).name!r} holds {name!r}; move it to a folder named {name}",
                        file=str(manifest))
    return name


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    name = dataset_name(folder)
    labels = find_one(folder, [LABELS_FILE], "synthetic label file")
    headers, rows = read_csv_rows(labels)
    lesion_columns = (*LESION_COLUMNS.values(), CONTRAST_COLUMN)
    columns = resolve_columns(headers, {c: (c,) for c in (*COLUMNS, *lesion_columns)}, labels,
                              optional=lesion_columns)
    load = DatasetLoad(name=name, root=folder, records=[],
                       metadata={"label_file": str(labels), "layout": "focus-eval synthetic"})
    # Empty image files are read as they always were here: decoding reports them, with their path.
    matcher = ImageMatcher(folder, labels, labels.parent / IMAGES_DIR, allow_empty=True)
    read_rows(load, matcher, rows, lambda row: _listed(labels, row, columns))
    return load


def _findings(counts: dict[str, int | None], dme: int | None) -> dict[str, int]:
    """Finding flags from the lesion counts drawn (none when the file has no count columns)."""
    if not counts or None in counts.values():
        return {}
    findings = {name: int(any(counts[kind] for kind in kinds)) for name, kinds in FINDINGS.items()}
    findings["hard_exudate"] = int(findings["hard_exudate"] or dme == 1)  # macular exudates are hard exudates
    return findings


def _listed(labels: Path, row: dict, columns: dict) -> Listed:
    line = row["__row__"]

    def cell(concept: str) -> str | None:
        return row[columns[concept]]

    image = clean_id(cell("image"), labels, line, "image")
    icdr = parse_grade(cell("icdr"), range(5), labels, line, "icdr")
    dme = map_code(cell("dme"), _BINARY, labels, line, "dme")
    glaucoma = map_code(cell("glaucoma"), _BINARY, labels, line, "glaucoma")
    eye = map_code(cell("eye"), _EYES, labels, line, "eye")
    counts = {kind: parse_grade(cell(column), range(1000), labels, line, column)
              for kind, column in LESION_COLUMNS.items() if column in columns}
    findings = _findings(counts, dme)
    drawn = {"lesions": counts, "lesion_contrast": parse_number(cell(CONTRAST_COLUMN), labels, line,
                                                                CONTRAST_COLUMN)} if counts else {}
    abnormal, conditions = normal_and_conditions(
        {"diabetic_retinopathy": dr_present(icdr), "macular_edema": dme, "glaucoma": glaucoma}, CONDITIONS)
    # the record's id drops the extension; a skipped row names the listed file
    return Listed(image, image, line, dict(
        image_id=Path(image).stem,
        patient_id=clean_id(cell("patient"), labels, line, "patient"),
        dr=dr_present(icdr),
        referable_dr=referable_dr(icdr, dme),
        glaucoma=glaucoma,
        age=parse_age(cell("age"), labels, line, "age"),
        sex=map_code(cell("sex"), _SEXES, labels, line, "sex"),
        quality=map_code(cell("quality"), _QUALITIES, labels, line, "quality"),
        extra={"eye": eye, "icdr": icdr, "dme": dme,
               "cdr": parse_number(cell("cdr"), labels, line, "cdr"), "device": cell("device"), **drawn},
        laterality={"OD": "right", "OS": "left"}[eye] if eye else None, dr_grade=icdr, findings=findings,
        abnormal=abnormal, conditions=conditions))

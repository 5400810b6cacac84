"""Reader for the synthetic datasets ``synth_desktop`` and ``synth_mobile`` written by ``focus-eval synth``.

Raw layout (one folder per dataset)::

    synth.json     {"dataset": "synth_desktop" | "synth_mobile", "device", "n", "seed", "version"}
    labels.csv     image, patient, eye, icdr, dme, cdr, glaucoma, age, sex, quality, device
    images/        <image> files named in labels.csv (``d0001_OD.jpg``)

``icdr`` is the ICDR grade 0-4, ``dme`` and ``glaucoma`` are 0/1, ``eye`` is OD/OS, ``sex`` male/female,
``quality`` adequate/inadequate, ``age`` in years. Targets: dr = icdr >= 1; referable_dr = icdr >= 2 or
dme = 1; glaucoma = the clinical label. Two eyes per patient; no official split.
"""

from __future__ import annotations

import json
from pathlib import Path

from focus_eval.data.common import (ImageMatcher, find_one, map_code, parse_age, parse_grade, parse_number,
                                    read_csv_rows, referable_dr, resolve_columns)
from focus_eval.data.records import DatasetLoad, ImageRecord, Skipped
from focus_eval.errors import DataError

NAMES = ("synth_desktop", "synth_mobile")
MANIFEST_FILE = "synth.json"
LABELS_FILE = "labels.csv"
IMAGES_DIR = "images"
COLUMNS = ("image", "patient", "eye", "icdr", "dme", "cdr", "glaucoma", "age", "sex", "quality", "device")

TARGETS = ("dr", "referable_dr", "glaucoma")
COHORTS = {"all": lambda record: True}
DEFAULT_COHORT = "all"
OFFICIAL_SPLIT = False
GROUP_KEY = "patient (labels.csv column 'patient'; two eyes per patient)"

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
    columns = resolve_columns(headers, {c: (c,) for c in COLUMNS}, labels)
    images = ImageMatcher(folder, labels, labels.parent / IMAGES_DIR)
    records, skipped = [], []
    for row in rows:
        line = row["__row__"]
        image_name = row[columns["image"]]
        if image_name is None:
            raise DataError("empty 'image' cell", file=str(labels), row=line)
        path = images.find(image_name, line, image_name, f"image file missing under {IMAGES_DIR}/")
        if isinstance(path, Skipped):
            skipped.append(path)
            continue
        records.append(_record(name, folder, labels, row, columns, path))
    return DatasetLoad(name=name, root=folder, records=records, skipped=skipped,
                       metadata={"label_file": str(labels), "layout": "focus-eval synthetic"})


def _record(name: str, folder: Path, labels: Path, row: dict, columns: dict, path: Path) -> ImageRecord:
    line = row["__row__"]
    cell = lambda concept: row[columns[concept]]  # noqa: E731
    icdr = parse_grade(cell("icdr"), range(5), labels, line, "icdr")
    dme = map_code(cell("dme"), _BINARY, labels, line, "dme")
    patient = cell("patient")
    if patient is None:
        raise DataError("empty 'patient' cell", file=str(labels), row=line)
    return ImageRecord(
        dataset=name, image_id=Path(cell("image")).stem, patient_id=patient, path=path,
        relpath=path.relative_to(folder.resolve()).as_posix(),
        dr=None if icdr is None else int(icdr >= 1),
        referable_dr=referable_dr(icdr, dme),
        glaucoma=map_code(cell("glaucoma"), _BINARY, labels, line, "glaucoma"),
        age=parse_age(cell("age"), labels, line, "age"),
        sex=map_code(cell("sex"), _SEXES, labels, line, "sex"),
        quality=map_code(cell("quality"), _QUALITIES, labels, line, "quality"),
        extra={"eye": map_code(cell("eye"), _EYES, labels, line, "eye"), "icdr": icdr, "dme": dme,
               "cdr": _number(cell("cdr"), labels, line, "cdr"), "device": cell("device")})


def _number(value: str | None, labels: Path, line: int, column: str) -> float | None:
    try:
        return parse_number(value)
    except ValueError:
        raise DataError(f"column {column!r}: {value!r} is not a number", file=str(labels), row=line) from None

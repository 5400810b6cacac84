"""Reader for Messidor-2 with the adjudicated grades of Krause et al. (Kaggle google-brain/messidor2-dr-grades).

Two layouts are read:

- ADCIS release + Krause grades: ``IMAGES/`` (``*.png``, ``IM*.JPG``), ``messidor-2.csv`` (one row per exam:
  the two image names joined by ';'), ``messidor_data.csv`` (image_id, adjudicated_dr_grade, adjudicated_dme,
  adjudicated_gradable). The exam is the patient (group key).
- Kaggle ``messidor2preprocess``: ``messidor_data.csv`` (id_code, diagnosis, adjudicated_dme,
  adjudicated_gradable) and ``messidor-2/messidor-2/preprocess/<id_code>``. No exam pairing: each image is its own
  group, with a warning.

Rows with adjudicated_gradable == 0 are dropped first (reported as skipped). dr = grade >= 1; referable_dr =
grade >= 2 or adjudicated_dme == 1 (Krause's referable DR). Image names match case-insensitively (the Krause
file writes ``IM000001.jpg``, the ADCIS file is ``IM000001.JPG``).
"""

from __future__ import annotations

import re
from pathlib import Path

from focus_eval.data.cells import clean_id, dr_present, map_code, parse_grade, referable_dr
from focus_eval.data.files import find_dirs, find_files, find_one, is_image_name
from focus_eval.data.matching import ImageMatcher, Listed, read_rows
from focus_eval.data.records import DatasetLoad
from focus_eval.data.spec import ALL_IMAGES, ReaderSpec
from focus_eval.data.tables import read_csv_rows, resolve_columns
from focus_eval.errors import DataError

SPEC = ReaderSpec(
    name="messidor2",
    targets=("dr", "referable_dr"),
    group_key="exam from messidor-2.csv (both eyes of an exam); each image alone when that file is absent",
    # gradable images of the Krause grades (Kaggle copy)
    documented_counts={ALL_IMAGES: {"n": 1744, "dr_pos": 727, "referable_dr_pos": 465}},
)

LABEL_FILES = ("messidor_data.csv",)
PAIRING_FILES = ("messidor-2.csv",)
IMAGE_DIRS = ("IMAGES", "preprocess")
ALIASES = {
    "image": ("image_id", "id_code"),
    "grade": ("adjudicated_dr_grade", "diagnosis"),
    "dme": ("adjudicated_dme",),
    "gradable": ("adjudicated_gradable",),
}
_BINARY = {"0": 0, "1": 1}


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    labels = find_one(folder, LABEL_FILES, "Messidor-2 grade file (Krause et al., Kaggle "
                                           "google-brain/messidor2-dr-grades)")
    headers, rows = read_csv_rows(labels)
    columns = resolve_columns(headers, ALIASES, labels, optional=("gradable",))
    image_dir = _image_dir(folder)
    load = SPEC.new_load(folder)
    pairing = find_files(folder, PAIRING_FILES)
    if pairing:
        exams = _exams(pairing[0], load.warnings)
    else:
        exams = {}
        load.warnings.append(f"no {PAIRING_FILES[0]} (ADCIS exam pairing) under {folder}: each image is its own "
                             "group, so the two eyes of one exam may fall into different splits")
    read_rows(load, ImageMatcher(folder, labels, image_dir), rows,
              lambda row: _listed(labels, row, columns, exams))
    unpaired = sum(1 for r in load.records if r.extra["exam"] is None)
    if pairing and unpaired:
        load.warnings.append(f"{unpaired} image(s) are in no exam of {pairing[0]}: each is its own group")
    if image_dir.name.lower() == "preprocess":
        load.warnings.append("the images are the Kaggle preprocessed copies (cropped and resized), not the ADCIS "
                             "originals")
    return SPEC.finish_load(load, str(labels), pairing_file=str(pairing[0]) if pairing else None,
                            image_folder=str(image_dir), layout="adcis" if pairing else "kaggle-preprocess")


def _listed(labels: Path, row: dict, columns: dict, exams: dict[str, str]) -> Listed:
    line = row["__row__"]
    name = clean_id(row[columns["image"]], labels, line, columns["image"])
    if "gradable" in columns:
        gradable = map_code(row[columns["gradable"]], _BINARY, labels, line, columns["gradable"])
        if gradable == 0:
            return Listed(name, name, line, excluded="adjudicated_gradable == 0 (ungradable)")
    grade = parse_grade(row[columns["grade"]], range(5), labels, line, columns["grade"])
    dme = map_code(row[columns["dme"]], _BINARY, labels, line, columns["dme"])
    exam = exams.get(name.lower())
    return Listed(name, name, line, dict(
        patient_id=exam or name, dr=dr_present(grade), referable_dr=referable_dr(grade, dme), dr_grade=grade,
        extra={"adjudicated_dr_grade": grade, "adjudicated_dme": dme, "exam": exam}))


def _image_dir(folder: Path) -> Path:
    found = find_dirs(folder, IMAGE_DIRS)
    if not found:
        raise DataError(f"no image folder found; expected {folder}/IMAGES (ADCIS release) or "
                        f"{folder}/messidor-2/messidor-2/preprocess (Kaggle copy)", file=str(folder))
    return found[0]


def _exams(path: Path, warnings: list[str]) -> dict[str, str]:
    """Lower-cased image name -> exam id from the ADCIS pairing file. An exam is named after the stem of its
    alphabetically first image; an image listed in two rows joins both exams into one group."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"cannot decode as UTF-8: {exc}", file=str(path)) from None
    parent: dict[str, str] = {}
    names: dict[str, str] = {}
    first_row = True
    for lineno, line in enumerate(text.splitlines(), start=1):
        cells = [c.strip() for c in re.split(r"[;,]", line) if c.strip()]
        if not cells:
            continue
        is_header = first_row and not any(is_image_name(c) for c in cells)
        first_row = False
        if is_header:
            continue
        if len(cells) != 2 or any(not is_image_name(c) for c in cells):
            raise DataError(f"expected two image names joined by ';', got {line.strip()!r}", file=str(path),
                            row=lineno)
        keys = [c.lower() for c in cells]
        for key, cell in zip(keys, cells):
            if key in names:
                warnings.append(f"{path}, row {lineno}: {cell} already belongs to another exam; "
                                "both exams form one group")
            names.setdefault(key, cell)
            parent.setdefault(key, key)
        _union(parent, keys[0], keys[1])
    exam_of_root: dict[str, str] = {}
    for key in sorted(names):  # the exam is named after its first image in sorted order: stable across runs
        exam_of_root.setdefault(_find(parent, key), Path(names[key]).stem)
    return {key: exam_of_root[_find(parent, key)] for key in names}


def _find(parent: dict[str, str], key: str) -> str:
    while parent[key] != key:
        parent[key] = parent[parent[key]]
        key = parent[key]
    return key


def _union(parent: dict[str, str], a: str, b: str) -> None:
    root_a, root_b = _find(parent, a), _find(parent, b)
    if root_a != root_b:
        parent[max(root_a, root_b)] = min(root_a, root_b)

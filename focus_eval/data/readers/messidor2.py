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

from focus_eval.data.common import (IMAGE_SUFFIXES, ImageMatcher, documented_count_warnings, find_dirs, find_files,
                                    find_one, map_code, parse_grade, read_csv_rows, referable_dr, resolve_columns)
from focus_eval.data.records import DatasetLoad, ImageRecord, Skipped
from focus_eval.errors import DataError

LABEL_FILES = ("messidor_data.csv",)
PAIRING_FILES = ("messidor-2.csv",)
IMAGE_DIRS = ("IMAGES", "preprocess")
ALIASES = {
    "image": ("image_id", "id_code"),
    "grade": ("adjudicated_dr_grade", "diagnosis"),
    "dme": ("adjudicated_dme",),
    "gradable": ("adjudicated_gradable",),
}

TARGETS = ("dr", "referable_dr")
COHORTS = {"all": lambda record: True}
DEFAULT_COHORT = "all"
OFFICIAL_SPLIT = False
GROUP_KEY = "exam from messidor-2.csv (both eyes of an exam); each image alone when that file is absent"

_BINARY = {"0": 0, "1": 1}
# Gradable images of the Krause grades (Kaggle copy); differences are warnings only.
DOCUMENTED_COUNTS = {"n": 1744, "dr_pos": 727, "referable_dr_pos": 465}


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    labels = find_one(folder, LABEL_FILES, "Messidor-2 grade file (Krause et al., Kaggle "
                                           "google-brain/messidor2-dr-grades)")
    headers, rows = read_csv_rows(labels)
    columns = resolve_columns(headers, ALIASES, labels, optional=("gradable",))
    image_dir = _image_dir(folder)
    images = ImageMatcher(folder, labels, image_dir)
    warnings: list[str] = []
    pairing = find_files(folder, PAIRING_FILES)
    if pairing:
        exams = _exams(pairing[0], warnings)
    else:
        exams = {}
        warnings.append(f"no {PAIRING_FILES[0]} (ADCIS exam pairing) under {folder}: each image is its own group, "
                        "so the two eyes of one exam may fall into different splits")
    records, skipped, unpaired = [], [], 0
    for row in rows:
        line = row["__row__"]
        name = images.claim_cell(row, columns["image"])
        if "gradable" in columns:
            gradable = map_code(row[columns["gradable"]], _BINARY, labels, line, columns["gradable"])
            if gradable == 0:
                skipped.append(Skipped(str(labels), line, name, "adjudicated_gradable == 0 (ungradable)"))
                continue
        path = images.find(name, line, name, f"image file missing under {image_dir}")
        if isinstance(path, Skipped):
            skipped.append(path)
            continue
        exam = exams.get(name.lower())
        unpaired += bool(pairing) and exam is None
        records.append(_record(folder, labels, row, columns, name, path, exam))
    if unpaired:
        warnings.append(f"{unpaired} image(s) are in no exam of {pairing[0]}: each is its own group")
    warnings += documented_count_warnings("messidor2", records, TARGETS, DOCUMENTED_COUNTS)
    if image_dir.name.lower() == "preprocess":
        warnings.append("the images are the Kaggle preprocessed copies (cropped and resized), not the ADCIS originals")
    metadata = {"label_file": str(labels), "pairing_file": str(pairing[0]) if pairing else None,
                "image_folder": str(image_dir), "layout": "adcis" if pairing else "kaggle-preprocess"}
    return DatasetLoad(name="messidor2", root=folder, records=records, skipped=skipped, warnings=warnings,
                       metadata=metadata)


def _record(folder: Path, labels: Path, row: dict, columns: dict, name: str, path: Path,
            exam: str | None) -> ImageRecord:
    line = row["__row__"]
    grade = parse_grade(row[columns["grade"]], range(5), labels, line, columns["grade"])
    dme = map_code(row[columns["dme"]], _BINARY, labels, line, columns["dme"])
    return ImageRecord(
        dataset="messidor2", image_id=name, patient_id=exam or name, path=path,
        relpath=path.relative_to(folder.resolve()).as_posix(),
        dr=None if grade is None else int(grade >= 1), referable_dr=referable_dr(grade, dme),
        extra={"adjudicated_dr_grade": grade, "adjudicated_dme": dme, "exam": exam})


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
        is_header = first_row and not any(Path(c).suffix.lower() in IMAGE_SUFFIXES for c in cells)
        first_row = False
        if is_header:
            continue
        if len(cells) != 2 or any(Path(c).suffix.lower() not in IMAGE_SUFFIXES for c in cells):
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

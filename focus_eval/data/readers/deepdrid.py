"""Reader for DeepDRiD (Liu et al. 2022, the ISBI 2020 challenge set): regular colour fundus photographs and
ultra-wide-field (UWF) images of diabetic patients, each part in three folders as the release lays them out:

    regular_fundus_images/regular-fundus-training/{regular-fundus-training.csv, Images/<patient>/<id>.jpg}
    regular_fundus_images/regular-fundus-validation/{regular-fundus-validation.csv, Images/...}
    regular_fundus_images/Online-Challenge1&2-Evaluation/{Challenge1_labels.xlsx, Challenge2_labels.xlsx, Images/...}
    ultra-widefield_images/ultra-widefield-training/{ultra-widefield-training.csv, Images/...}
    ultra-widefield_images/ultra-widefield-validation/{ultra-widefield-validation.csv, Images/...}
    ultra-widefield_images/Online-Challenge3-Evaluation/{Challenge3_labels.xlsx, Images/...}

Image ids look like ``12_l2`` (patient 12, left eye, second picture). Official split: training -> train,
validation -> val, the evaluation folders -> test (their labels were published after the challenge; an
evaluation folder without its labels file is not read, with a warning).

Harmonization: modality "cfp" for the regular part and "uwf" for the other; the two parts are separate
cohorts, so patient ids are kept apart (``regular/12``, ``uwf/12``). Regular rows give the grade of the
pictured eye in ``left_eye_DR_Level`` or ``right_eye_DR_Level`` (the other is empty); laterality comes from
the image id's ``l``/``r``. Where the filled column names the other eye than the id, the grade is kept and the
laterality left unknown (a warning lists them). UWF rows give ``DR_level`` (5 = ungradable -> no grade) and
``position`` (left_eye/right_eye). The evaluation workbooks give ``DR_Levels`` (regular) and ``UWF_DR_Levels``;
the regular one's quality comes from ``Challenge2_labels.xlsx`` beside it. ``Overall quality`` 1 -> adequate,
0 -> inadequate. ICDR grade 0-4 -> dr_grade and dr (grade >= 1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from focus_eval.data.cells import clean_id, dr_present, map_code, parse_grade
from focus_eval.data.files import find_files
from focus_eval.data.matching import ImageMatcher, Listed, read_rows
from focus_eval.data.records import DatasetLoad
from focus_eval.data.spec import ReaderSpec
from focus_eval.data.tables import read_csv_rows, read_xlsx_rows, resolve_columns
from focus_eval.errors import DataError

SPEC = ReaderSpec(
    name="deepdrid",
    targets=("dr",),
    group_key="patient_id (kept apart between the regular and the ultra-wide-field cohorts)",
    official_split=True,
    # the release: 2,000 regular photographs (1,200 / 400 / 400) and 256 UWF images (154 / 50 / 52)
    documented_counts={},
    label_rules={
        "dr_grade": "regular: the filled eye column (left_eye_DR_Level / right_eye_DR_Level), or DR_Levels; "
                    "UWF: DR_level or UWF_DR_Levels, 5 (ungradable) -> none",
        "laterality": "the l/r of the image id (UWF: position); unknown where the filled eye column names the "
                      "other eye",
        "quality": "Overall quality 1 -> adequate, 0 -> inadequate",
    },
)


@dataclass(frozen=True)
class Part:
    """One labelled folder of the release."""

    kind: str  # "regular" or "uwf"
    split: str
    folder: str
    label_files: tuple[str, ...]  # the names the labels file goes by, the first one found is read
    quality_file: str | None = None  # a workbook beside it giving the quality of the same image ids


PARTS = (
    Part("regular", "train", "regular-fundus-training", ("regular-fundus-training.csv",)),
    Part("regular", "val", "regular-fundus-validation", ("regular-fundus-validation.csv",)),
    Part("regular", "test", "Online-Challenge1&2-Evaluation", ("Challenge1_labels.xlsx", "Challenge1_labels.csv"),
         quality_file="Challenge2_labels.xlsx"),
    Part("uwf", "train", "ultra-widefield-training", ("ultra-widefield-training.csv",)),
    Part("uwf", "val", "ultra-widefield-validation", ("ultra-widefield-validation.csv",)),
    Part("uwf", "test", "Online-Challenge3-Evaluation", ("Challenge3_labels.xlsx", "Challenge3_labels.csv")),
)
MODALITY = {"regular": "cfp", "uwf": "uwf"}
COLUMNS = {"image": ("image_id",), "patient": ("patient_id",), "grade": ("DR_Level", "DR_Levels", "UWF_DR_Levels"),
           "left": ("left_eye_DR_Level",), "right": ("right_eye_DR_Level",), "quality": ("Overall quality",),
           "position": ("position",)}
OPTIONAL = ("patient", "grade", "left", "right", "quality", "position")
UNGRADABLE = 5
IMAGE_ID = re.compile(r"^(\d+)_([lr])\d+$", re.IGNORECASE)
QUALITY = {"1": "adequate", "0": "inadequate"}
POSITION = {"left_eye": "left", "right_eye": "right"}


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    load = SPEC.new_load(folder)
    label_files, swapped = {}, []
    for part in PARTS:
        found = find_files(folder, list(part.label_files))
        if not found:
            if part.split == "test" and _has_folder(folder, part):
                load.warnings.append(f"{part.folder} has no {part.label_files[0]}; its images are not read")
            continue
        label_files[f"{part.kind}/{part.split}"] = found[0].relative_to(folder).as_posix()
        _read_part(load, folder, part, found[0], swapped)
    if not label_files:
        raise DataError("no DeepDRiD label files found; expected regular_fundus_images/regular-fundus-training/"
                        "regular-fundus-training.csv (and the other parts) under the dataset folder",
                        file=str(folder))
    if swapped:
        load.warnings.append(f"{len(swapped)} image(s) whose filled eye column names the other eye than the "
                             f"image id (laterality left unknown): {', '.join(swapped[:5])}")
    return SPEC.finish_load(load, label_files)


def _has_folder(folder: Path, part: Part) -> bool:
    return any(p.is_dir() for p in folder.rglob(part.folder))


def _read_part(load: DatasetLoad, folder: Path, part: Part, label_file: Path, swapped: list[str]) -> None:
    reader = read_xlsx_rows if label_file.suffix.lower() == ".xlsx" else read_csv_rows
    headers, rows = reader(label_file)
    found = resolve_columns(headers, COLUMNS, label_file, optional=OPTIONAL)
    if part.quality_file and (label_file.parent / part.quality_file).is_file():
        found["quality"] = _merge_quality(label_file.parent / part.quality_file, rows, found["image"])
    if "grade" not in found and not {"left", "right"} <= set(found):
        raise DataError("no grade column: expected DR_Level (DR_Levels, UWF_DR_Levels), or left_eye_DR_Level and "
                        "right_eye_DR_Level",
                        file=str(label_file))

    def listed(row: dict) -> Listed:
        line = row["__row__"]
        image = clean_id(row[found["image"]], label_file, line, found["image"])
        match = IMAGE_ID.match(image)
        if match is None:
            raise DataError(f"image id {image!r} is not <patient>_<l|r><n>", file=str(label_file), row=line)
        fields = _grade_and_eye(row, found, label_file, line, match.group(2).lower())
        if fields.pop("swapped"):
            swapped.append(f"{part.kind}/{image}")
        fields.update(patient_id=f"{part.kind}/{match.group(1)}", split=part.split, modality=MODALITY[part.kind],
                      dr=dr_present(fields["dr_grade"]),
                      quality=map_code(row.get(found.get("quality", "")), QUALITY, label_file, line, "Overall quality"),
                      extra={k: v for k, v in row.items() if k != "__row__" and v is not None})
        return Listed(f"{image}.jpg", f"{part.kind}/{image}", line, fields)

    read_rows(load, ImageMatcher(folder, label_file, label_file.parent / "Images", recursive=True), rows, listed)


def _merge_quality(path: Path, rows: list[dict], image_column: str) -> str:
    """Copy each image's ``Overall quality`` from the workbook at ``path`` into ``rows``; returns the column."""
    headers, quality_rows = read_xlsx_rows(path)
    found = resolve_columns(headers, {"image": ("image_id",), "quality": ("Overall quality",)}, path)
    by_image = {clean_id(r[found["image"]], path, r["__row__"], found["image"]): r[found["quality"]]
                for r in quality_rows}
    for row in rows:
        row[found["quality"]] = by_image.get(row[image_column])
    return found["quality"]


def _grade_and_eye(row: dict, found: dict, label_file: Path, line: int, letter: str) -> dict:
    """dr_grade, laterality and whether the filled eye column contradicts the id's eye, for one row."""
    eye = "left" if letter == "l" else "right"

    def grade(concept: str) -> int | None:
        value = parse_grade(row.get(found.get(concept, "")), range(UNGRADABLE + 1), label_file, line,
                            found.get(concept, concept))
        return None if value == UNGRADABLE else value

    if "position" in found and row.get(found["position"]) is not None:
        eye = map_code(row[found["position"]], POSITION, label_file, line, found["position"])
    if "grade" in found:
        return {"dr_grade": grade("grade"), "laterality": eye, "swapped": False}
    own, other = (grade("left"), grade("right")) if eye == "left" else (grade("right"), grade("left"))
    filled_other = own is None and row.get(found["right" if eye == "left" else "left"]) is not None
    return {"dr_grade": own if own is not None else other, "laterality": None if filled_other else eye,
            "swapped": filled_other}

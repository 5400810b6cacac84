"""Miniature DeepDRiD in its raw layout: ``regular_fundus_images/`` and ``ultra-widefield_images/``, each with a
training, a validation and an evaluation folder (label CSVs with Windows-style ``image_path`` cells,
``Images/<patient>/<image id>.jpg``; the evaluation folders hold the unlabelled upload template and the
labels workbook published later). Quirks of the release: a regular row whose filled eye column names the
other eye than its image id, and an ungradable UWF image (DR_level 5).

Labels and file names are fixed (tests state them by hand); ``seed`` only varies the pictures. Regular
pictures come from the fundus renderer, UWF pictures from ``focus_eval.synth.modalities.uwf_image``.
"""

from __future__ import annotations

from pathlib import Path

from openpyxl import Workbook

from focus_eval.synth.modalities import uwf_image
from focus_eval.synth.raw_common import ImageFn, image_labels, save_jpeg

REGULAR = "regular_fundus_images"
UWF = "ultra-widefield_images"
FOLDERS = {
    ("regular", "train"): f"{REGULAR}/regular-fundus-training",
    ("regular", "val"): f"{REGULAR}/regular-fundus-validation",
    ("regular", "test"): f"{REGULAR}/Online-Challenge1&2-Evaluation",
    ("uwf", "train"): f"{UWF}/ultra-widefield-training",
    ("uwf", "val"): f"{UWF}/ultra-widefield-validation",
    ("uwf", "test"): f"{UWF}/Online-Challenge3-Evaluation",
}
REGULAR_HEADER = ("patient_id,image_id,image_path,Overall quality,left_eye_DR_Level,right_eye_DR_Level,"
                  "patient_DR_Level,Clarity,Field definition,Artifact")
# split -> (image id, Overall quality, left_eye_DR_Level, right_eye_DR_Level); 4_r1 fills the left column
REGULAR_ROWS = {
    "train": [("1_l1", 1, 0, None), ("1_r1", 1, None, 0), ("2_l1", 0, 2, None), ("2_r1", 1, None, 2),
              ("3_l1", 1, 1, None), ("3_r1", 0, None, 0), ("4_l1", 1, 3, None), ("4_r1", 1, 4, None)],
    "val": [("301_l1", 1, 0, None), ("301_r1", 1, None, 1), ("302_l1", 0, 4, None), ("302_r1", 1, None, 4)],
}
# the evaluation part: (image id, DR_Levels of Challenge1_labels, Overall quality of Challenge2_labels)
REGULAR_TEST = [("347_l1", 0, 1), ("347_r1", 0, 0), ("353_l1", 2, 1), ("353_r1", 3, 1)]
# split -> (image id, DR_level, position); 5 is ungradable
UWF_ROWS = {
    "train": [("1_r1", 0, "right_eye"), ("1_l2", 0, "left_eye"), ("2_r1", 3, "right_eye"), ("2_l12", 5, "left_eye")],
    "val": [("77_l1", 1, "left_eye"), ("77_r2", 2, "right_eye")],
    "test": [("200_r1", 0, None), ("200_l2", 4, None)],
}


def write(folder: Path, seed: int, image: ImageFn) -> None:
    root = Path(folder)
    for split, rows in REGULAR_ROWS.items():
        base = root / FOLDERS[("regular", split)]
        lines = [REGULAR_HEADER]
        for image_id, quality, left, right in rows:
            patient = image_id.split("_")[0]
            grade = left if left is not None else right
            grades = [g for i, _, l, r in rows if i.split("_")[0] == patient for g in (l, r) if g is not None]
            lines.append(f"{patient},{image_id},\\{base.name}\\{patient}\\{image_id}.jpg,{quality},{_cell(left)},"
                         f"{_cell(right)},{max(grades)},8,8,0")
            _regular_picture(image, seed, base, image_id, grade, quality)
        (base / f"{base.name}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    test = root / FOLDERS[("regular", "test")]
    _workbook(test / "Challenge1_labels.xlsx", ["image_id", "DR_Levels"], [(i, g) for i, g, _ in REGULAR_TEST])
    _workbook(test / "Challenge2_labels.xlsx", ["image_id", "Overall quality", "Artifact", "Clarity", "Field definition"],
              [(i, q, 0, 8, 8) for i, _, q in REGULAR_TEST])
    (test / "Challenge1_upload.csv").write_text("image_id,DR_Level\n" + "".join(f"{i},\n" for i, _, _ in REGULAR_TEST))
    for image_id, grade, quality in REGULAR_TEST:
        _regular_picture(image, seed, test, image_id, grade, quality)
    _write_uwf(root, seed)


def _cell(value: int | None) -> str:
    return "" if value is None else str(value)


def _regular_picture(image: ImageFn, seed: int, base: Path, image_id: str, grade: int, quality: int) -> None:
    patient, eye = image_id.split("_")[0], "left" if "_l" in image_id else "right"
    labels = image_labels("deepdrid", image_id, patient, seed, dr_grade=grade, eye=eye,
                          quality="adequate" if quality else "inadequate")
    save_jpeg(image, labels, base / "Images" / patient / f"{image_id}.jpg")


def _write_uwf(root: Path, seed: int) -> None:
    for split, rows in UWF_ROWS.items():
        base = root / FOLDERS[("uwf", split)]
        base.mkdir(parents=True, exist_ok=True)
        if split == "test":
            _workbook(base / "Challenge3_labels.xlsx", ["image_id", "UWF_DR_Levels"], [(i, g) for i, g, _ in rows])
        else:
            lines = ["patient_id,image_id,image_path,DR_level,position"]
            lines += [f"{i.split('_')[0]},{i},{base.name}\\{i.split('_')[0]}\\{i}.jpg,{g},{p}" for i, g, p in rows]
            (base / f"{base.name}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
        for image_id, _, _ in rows:
            path = base / "Images" / image_id.split("_")[0] / f"{image_id}.jpg"
            path.parent.mkdir(parents=True, exist_ok=True)
            picture_seed = image_labels("deepdrid", f"uwf/{image_id}", image_id, seed)["seed"]
            uwf_image(picture_seed).save(path, format="JPEG", quality=90)


def _workbook(path: Path, header: list[str], rows: list[tuple]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    book = Workbook()
    sheet = book.active
    sheet.append(header)
    for row in rows:
        sheet.append(list(row))
    book.save(path)

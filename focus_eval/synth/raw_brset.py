"""Miniature BRSET in its raw PhysioNet layout: 38 label rows (37 images) with the real file names, columns and
codes, and the known pitfalls (UTF-8 BOM, version-specific names, a label row without image, a stray
index.html, an upper-case extension, non-diabetic patients with DR, edema with ICDR < 2).

Labels and file names are fixed (tests state them by hand); ``seed`` only varies the pictures. Every target
has both classes in every split of the default (diabetic) cohort.
"""

from __future__ import annotations

import csv
from pathlib import Path

from focus_eval.synth.raw_common import ImageFn, image_labels, save_jpeg

VERSIONS = {
    # version: (label file name, illumination header, insulin header, drusen header, diabetes "no" spelling)
    "1.0.0": ("labels.csv", "iluminaton", "insuline", "drusens", "no"),
    "1.0.1": ("labels_brset.csv", "Illuminaton", "insuline", "drusens", "No"),
    "1.0.2": ("label_brset.csv", "illumination", "insulin", "drusen", "No"),
}
# (image number, patient, age, patient_sex, diabetes, DR_ICDR, macular_edema, increased_cup_disc, quality)
ROWS = [
    (1, 1, "48", 1, "yes", 0, 0, 0, "Adequate"),
    (2, 1, "48", 1, "yes", 0, 0, 0, "Adequate"),
    (3, 2, "61", 2, "yes", 0, 0, 0, "Adequate"),
    (4, 2, "61", 2, "yes", 0, 0, 0, "Inadequate"),
    (5, 3, "55.0", 2, "yes", 0, 0, 0, "Adequate"),
    (6, 3, "55.0", 2, "yes", 0, 0, 0, "Adequate"),
    (7, 4, "70", 1, "yes", 0, 0, 0, "Adequate"),
    (8, 4, "70", 1, "yes", 0, 0, 0, "Adequate"),
    (9, 5, "66", 2, "yes", 0, 0, 0, "Adequate"),
    (10, 5, "66", 2, "yes", 0, 0, 0, "Adequate"),
    (11, 6, "59", 1, "yes", 2, 0, 0, "Adequate"),
    (12, 6, "59", 1, "yes", 1, 0, 0, "Adequate"),
    (13, 7, "72", 2, "yes", 3, 1, 0, "Adequate"),
    (14, 7, "72", 2, "yes", 4, 0, 0, "Inadequate"),
    (15, 8, "64", 2, "yes", 1, 1, 0, "Adequate"),
    (16, 8, "64", 2, "yes", 0, 0, 0, "Adequate"),
    (17, 9, "50", 1, "yes", 0, 1, 0, "Adequate"),
    (18, 9, "50", 1, "yes", 2, 0, 0, "Adequate"),
    (19, 10, "68", 2, "yes", 4, 0, 0, "Adequate"),
    (20, 10, "68", 2, "yes", 4, 0, 0, "Adequate"),
    (21, 11, "74", 1, "yes", 0, 0, 1, "Adequate"),
    (22, 11, "74", 1, "yes", 0, 0, 1, "Adequate"),
    (23, 12, "63", 2, "yes", 0, 0, 1, "Adequate"),
    (24, 12, "63", 2, "yes", 0, 0, 0, "Adequate"),
    (25, 13, "58", 1, "yes", 0, 0, 0, "Adequate"),
    (26, 13, "58", 1, "yes", 0, 0, 1, "Adequate"),
    (27, 14, "77", 2, "yes", 0, 0, 1, "Adequate"),
    (28, 14, "77", 2, "yes", 0, 0, 1, "Adequate"),
    (29, 15, "69", 1, "yes", 0, 0, 1, "Adequate"),
    (30, 15, "69", 1, "yes", 0, 0, 1, "Inadequate"),
    (31, 16, "52", 2, "yes", 1, 0, 0, "Adequate"),
    (32, 16, "52", 2, "yes", 1, 0, 0, "Adequate"),
    (33, 17, "81", 1, "yes", 4, 1, 1, "Adequate"),
    (34, 18, "", 2, "no", 0, 0, 0, "Adequate"),
    (35, 18, "", 2, "no", 0, 0, 0, "Adequate"),
    (36, 19, "45", 1, "no", 2, 0, 0, "Adequate"),
    (37, 20, "", 2, "no", 0, 0, 1, "Adequate"),
    (38, 20, "", 2, "no", 0, 0, 1, "Adequate"),
]
# Finding columns set to 1 beyond macular_edema and increased_cup_disc (which follow the row): haemorrhages on
# the eyes with moderate DR or worse, drusen and AMD in the older patients, and one eye per other finding.
FINDINGS = {
    **{n: ("hemorrhage",) for n in (11, 13, 14, 18, 19, 20, 33, 36)},
    7: ("drusen",), 8: ("drusen",), 27: ("drusen", "amd"), 28: ("drusen",), 19: ("hemorrhage", "scar"),
    3: ("nevus",), 9: ("nevus",), 24: ("vascular_occlusion",), 25: ("hypertensive_retinopathy",),
    16: ("myopic_fundus",), 35: ("retinal_detachment",), 10: ("other",),
}
MISSING_IMAGES = {37}  # label row kept, image file absent (as for img04414-img04419 in v1.0.1)
UPPER_CASE_EXTENSION = {5}
HEADER = ["image_id", "patient_id", "camera", "patient_age", "comorbidities", "diabetes_time_y", "{insulin}",
          "patient_sex", "exam_eye", "diabetes", "nationality", "optic_disc", "vessels", "macula", "DR_SDRG",
          "DR_ICDR", "focus", "{illumination}", "image_field", "artifacts", "diabetic_retinopathy", "macular_edema",
          "scar", "nevus", "amd", "vascular_occlusion", "hypertensive_retinopathy", "{drusen}", "hemorrhage",
          "retinal_detachment", "myopic_fundus", "increased_cup_disc", "other", "quality"]


def root_folder(folder: Path, version: str, nested: bool) -> Path:
    """Where the label file goes: PhysioNet's versioned folder, or ``folder`` itself (flattened copy)."""
    return folder / "physionet.org" / "files" / "brazilian-ophthalmological" / version if nested else folder


def write(folder: Path, seed: int, image: ImageFn, version: str = "1.0.0", nested: bool = True) -> None:
    """Write the miniature BRSET raw layout of ``version`` (1.0.0, 1.0.1 or 1.0.2) under ``folder``."""
    label_name, illumination, insulin, drusen, no = VERSIONS[version]
    root = root_folder(Path(folder), version, nested)
    photos = root / "fundus_photos"
    photos.mkdir(parents=True, exist_ok=True)
    names = {"insulin": insulin, "illumination": illumination, "drusen": drusen}
    header = [h.format(**names) if h.startswith("{") else h for h in HEADER]
    with (root / label_name).open("w", newline="", encoding="utf-8-sig") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for row in ROWS:
            writer.writerow(_cells(row, no, header))
    for row in ROWS:
        if row[0] not in MISSING_IMAGES:
            suffix = ".JPG" if row[0] in UPPER_CASE_EXTENSION else ".jpg"
            save_jpeg(image, _labels(row, seed), photos / f"img{row[0]:05d}{suffix}")
    (photos / "index.html").write_text("<html><body>Index of fundus_photos</body></html>\n")
    (root / "LICENSE.txt").write_text("PhysioNet Credentialed Health Data License 1.5.0 (miniature synthetic copy)\n")
    (root / "SHA256SUMS.txt").write_text("")


def _cells(row: tuple, no: str, header: list[str]) -> list[str]:
    number, patient, age, sex, diabetes, icdr, edema, cup_disc, quality = row
    inadequate = quality == "Inadequate"
    eye = 1 if number % 2 else 2
    values = {
        "image_id": f"img{number:05d}", "patient_id": patient, "camera": "Canon CR" if patient % 4 else "NIKON NF5050",
        "patient_age": age, "comorbidities": "diabetes1" if diabetes == "yes" else "0",
        "diabetes_time_y": "0,5" if patient == 3 else ("12" if diabetes == "yes" else "NA"),
        "patient_sex": sex, "exam_eye": eye, "diabetes": diabetes if diabetes == "yes" else no,
        "nationality": "Brazil", "optic_disc": 2 if cup_disc else 1, "vessels": 1, "macula": 2 if edema else 1,
        "DR_SDRG": icdr, "DR_ICDR": icdr, "focus": 2 if inadequate else 1, "image_field": 1, "artifacts": 1,
        # the binary flag disagrees with DR_ICDR on a few rows of the real file; readers must not use it
        "diabetic_retinopathy": 1 if (icdr >= 1) != (number == 12) else 0,
        "macular_edema": edema, "increased_cup_disc": cup_disc, "quality": quality,
    }
    for finding in FINDINGS.get(number, ()):
        values["drusens" if finding == "drusen" and "drusens" in header else finding] = 1
    return [str(values.get(h, 0)) if h not in ("iluminaton", "Illuminaton", "illumination") else "1" for h in header]


def _labels(row: tuple, seed: int) -> dict:
    number, patient, age, sex, diabetes, icdr, edema, cup_disc, quality = row
    return image_labels(
        "brset", f"img{number:05d}", str(patient), seed, dr_grade=icdr, dr=int(icdr >= 1),
        referable_dr=int(icdr >= 2 or edema == 1), glaucoma=cup_disc, macular_edema=edema,
        age=float(age) if age else None, sex={1: "male", 2: "female"}[sex], quality=quality.lower(),
        eye="right" if number % 2 else "left", diabetes=diabetes)

"""Miniature PAPILA in its raw figshare layout: 12 patients x 2 eyes = 24 images inside the hashed archive
folder, the two clinical xlsx files with their staggered header (merged group headers, sub-headers, an ID row,
ids '#002'), eyes with different diagnoses, bilateral suspects, and duplicate macOS copies whose names
contain a space.

Labels and file names are fixed (tests state them by hand); ``seed`` only varies the pictures. Glaucoma has
both classes in every split.
"""

from __future__ import annotations

from pathlib import Path

from openpyxl import Workbook

from focus_eval.synth.raw_common import ImageFn, image_labels, save_jpeg

ARCHIVE = "PapilaDB-PAPILA-17f8fa7746adb20275b5b6a0d99dc9dfe3007e9f"
# patient number -> (age, Gender 0 male / 1 female, Diagnosis OD, Diagnosis OS); 0 healthy, 1 glaucoma, 2 suspect
PATIENTS = {
    2: (39, 0, 0, 0), 4: (52, 1, 0, 0), 5: (47, 1, 0, 0), 6: (61, 0, 0, 0), 8: (33, 1, 0, 0),
    9: (70, 0, 1, 1), 11: (66, 1, 1, 1), 12: (74, 1, 0, 1), 13: (58, 0, 1, 0), 15: (81, 0, 1, 1),
    17: (55, 1, 2, 2), 18: (63, 0, 2, 2),
}
GROUP_HEADERS = {"B": "Age", "C": "Gender", "D": "Diagnosis", "E": "Refractive_Defect", "H": "Phakic/Pseudophakic",
                 "I": "IOP", "K": "Pachymetry", "L": "Axial_Length", "M": "VF_MD"}
SUB_HEADERS = {"E": "dioptre_1", "F": "dioptre_2", "G": "astigmatism", "I": "Pneumatic", "J": "Perkins"}


def write(folder: Path, seed: int, image: ImageFn) -> None:
    """Write the miniature PAPILA raw layout under ``folder``."""
    root = Path(folder) / ARCHIVE
    for eye, column in (("OD", 2), ("OS", 3)):
        _write_clinical(root / "ClinicalData" / f"patient_data_{eye.lower()}.xlsx", column)
    images = root / "FundusImages"
    for number, (age, gender, *diagnoses) in PATIENTS.items():
        for eye, diagnosis in zip(("OD", "OS"), diagnoses):
            labels = image_labels("papila", f"RET{number:03d}{eye}", str(number), seed, age=float(age),
                                  sex=("male", "female")[gender], glaucoma={0: 0, 1: 1, 2: None}[diagnosis],
                                  diagnosis=diagnosis, eye=eye)
            save_jpeg(image, labels, images / f"RET{number:03d}{eye}.jpg")
    save_jpeg(image, image_labels("papila", "RET004OS", "4", seed + 1), images / "RET004OS 2.jpg")
    contours = root / "ExpertsSegmentations" / "Contours"
    contours.mkdir(parents=True, exist_ok=True)
    for name in ("RET002OD_disc_exp1.txt", "RET002OD_cup_exp1.txt", "RET002OD_cup_exp2 2.txt"):
        (contours / name).write_text("10 12\n11 13\n")
    (root / "HelpCode").mkdir(exist_ok=True)
    (root / "HelpCode" / "utils.py").write_text("# helper code shipped with the archive\n")
    (root / "README.txt").write_text("PAPILA miniature synthetic copy. Gender: 0 male, 1 female. "
                                     "Diagnosis: 0 healthy, 1 glaucoma, 2 suspect.\n")
    (root / "desktop.ini").write_text("[.ShellClassInfo]\n")


def _write_clinical(path: Path, diagnosis_column: int) -> None:
    """One clinical xlsx file: group headers in row 1 (some merged), sub-headers in row 2, 'ID' in A3."""
    book = Workbook()
    sheet = book.active
    for column, text in GROUP_HEADERS.items():
        sheet[f"{column}1"] = text
    sheet.merge_cells("E1:G1")
    sheet.merge_cells("I1:J1")
    for column, text in SUB_HEADERS.items():
        sheet[f"{column}2"] = text
    sheet["A3"] = "ID"
    for offset, (number, values) in enumerate(PATIENTS.items()):
        age, gender = values[0], values[1]
        diagnosis = values[diagnosis_column]
        sheet.append([f"#{number:03d}", age, gender, diagnosis, -0.5, -0.25, 90, 0, 14 + offset % 5, 15,
                      540 + offset, 23.4, -1.2])
    path.parent.mkdir(parents=True, exist_ok=True)
    book.save(path)

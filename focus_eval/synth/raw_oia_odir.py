"""Miniature OIA-ODIR in its raw layout: three parts (``Training Set``, ``Off-site Test Set``, ``On-site Test
Set``) under ``OIA-ODIR/``, each an English annotation workbook (and its Chinese twin, not read) in
``Annotation/`` beside ``Images/``. Keywords are separated by full-width commas (one cell by a plain comma), and
include quality remarks, a suspected glaucoma, an unmatched keyword and a patient whose flag D disagrees with
an eye's keywords; one right-eye image is missing.

Labels and file names are fixed (tests state them by hand); ``seed`` only varies the pictures.
"""

from __future__ import annotations

from pathlib import Path

from openpyxl import Workbook

from focus_eval.synth.raw_common import ImageFn, image_labels, save_jpeg

ROOT = "OIA-ODIR"
PARTS = {"train": ("Training Set", "training annotation"), "val": ("Off-site Test Set", "off-site test annotation"),
         "test": ("On-site Test Set", "on-site test annotation")}
HEADER = ["ID", "Patient Age", "Patient Sex", "Left-Fundus", "Right-Fundus", "Left-Diagnostic Keywords",
          "Right-Diagnostic Keywords", "N", "D", "G", "C", "A", "H", "M", "O"]
# (split, ID, age, sex, left keywords, right keywords, patient flags N D G C A H M O)
PATIENTS = [
    ("train", 0, 69, "Female", "cataract", "normal fundus", "00010000"),
    ("train", 1, 57, "Male", "normal fundus", "normal fundus", "10000000"),
    ("train", 2, 42, "Male", "moderate non proliferative retinopathy，laser spot", "mild nonproliferative retinopathy",
     "01000001"),
    ("train", 4, 53, "Male", "suspected glaucoma", "glaucoma", "00100000"),
    ("train", 5, 50, "Female", "dry age-related macular degeneration，drusen", "lens dust，normal fundus", "00001001"),
    ("val", 937, 62, "Female", "pathological myopia", "low image quality", "00000010"),
    ("val", 951, 60, "Male", "hypertensive retinopathy，moderate non proliferative retinopathy", "normal fundus",
     "00000100"),  # D is 0 although the left eye shows DR
    ("test", 1000, 45, "Male", "normal fundus", "epiretinal membrane", "00000001"),
    ("test", 1001, 71, "Female", "severe proliferative diabetic retinopathy", "glaucoma,cataract", "01110000"),
    ("test", 1002, 66, "Male", "normal fundus", "normal fundus", "10000000"),
]
MISSING = {"1002_right.jpg"}


def picture_labels(keywords: str) -> dict:
    """What the picture of an eye shows, from its keywords (a DR eye gets grade 2, a glaucoma eye a large cup)."""
    text = keywords.lower()
    return {"dr_grade": 2 if "retinopathy" in text and "hypertensive" not in text else 0,
            "glaucoma": int("glaucoma" in text), "quality": "inadequate" if "low image quality" in text else None}


def write(folder: Path, seed: int, image: ImageFn) -> None:
    root = Path(folder) / ROOT
    for split, (part, annotation) in PARTS.items():
        rows = [p for p in PATIENTS if p[0] == split]
        for language in ("English", "Chinese"):
            _workbook(root / part / "Annotation" / f"{annotation} ({language}).xlsx", rows)
        for _, number, age, sex, left, right, _flags in rows:
            for eye, keywords in (("left", left), ("right", right)):
                name = f"{number}_{eye}.jpg"
                if name in MISSING:
                    continue
                labels = image_labels("oia_odir", name, str(number), seed, age=float(age), sex=sex.lower(), eye=eye,
                                      **picture_labels(keywords))
                save_jpeg(image, labels, root / part / "Images" / name)


def _workbook(path: Path, rows: list[tuple]) -> None:
    book = Workbook()
    sheet = book.active
    sheet.append(HEADER)
    for _, number, age, sex, left, right, flags in rows:
        sheet.append([number, age, sex, f"{number}_left.jpg", f"{number}_right.jpg", left, right,
                      *(int(f) for f in flags)])
    path.parent.mkdir(parents=True, exist_ok=True)
    book.save(path)

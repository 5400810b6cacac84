"""Miniature Messidor-2 in both raw layouts: the ADCIS release with the Krause grades (``IMAGES/``,
``messidor-2.csv`` exam pairing, ``messidor_data.csv``), or the Kaggle preprocessed copy (``messidor_data.csv``
with id_code/diagnosis, images under ``messidor-2/messidor-2/preprocess/``). Pitfalls: an ungradable row with
empty grade and DME, lower-case ``.jpg`` ids for ``.JPG`` files, a grade written as ``2.0``, a label row whose
image is missing, an image in no exam, DME with grade 1.

Labels and file names are fixed (tests state them by hand); ``seed`` only varies the pictures. Both targets
have both classes in every split of the exam-grouped split.
"""

from __future__ import annotations

import csv
from pathlib import Path

from focus_eval.synth.raw_common import ImageFn, image_labels

LAYOUTS = ("adcis", "kaggle")
# (image file name on disk, name in the Krause file, grade, dme, gradable, exam number or None, file written)
ROWS = [
    ("20051020_43808_0100_PP.png", "20051020_43808_0100_PP.png", "0", "0", "1", 1, True),
    ("20051020_43832_0100_PP.png", "20051020_43832_0100_PP.png", "1", "0", "1", 1, True),
    ("20051020_44261_0100_PP.png", "20051020_44261_0100_PP.png", "2.0", "1", "1", 2, True),
    ("20051020_44284_0100_PP.png", "20051020_44284_0100_PP.png", "", "", "0", 2, True),
    ("20051020_45050_0100_PP.png", "20051020_45050_0100_PP.png", "3", "1", "1", 3, True),
    ("20051020_45068_0100_PP.png", "20051020_45068_0100_PP.png", "0", "0", "1", 3, True),
    ("IM000001.JPG", "IM000001.jpg", "1", "1", "1", 4, True),
    ("IM000002.JPG", "IM000002.jpg", "4", "0", "1", 4, True),
    ("IM000013.JPG", "IM000013.jpg", "0", "0", "1", 5, True),
    ("IM000012.JPG", "IM000012.jpg", "2", "0", "1", 5, False),
    ("IM000057.JPG", "IM000057.jpg", "0", "0", "1", None, True),
    ("20051020_44400_0100_PP.png", "20051020_44400_0100_PP.png", "0", "0", "1", 6, True),
    ("20051020_44431_0100_PP.png", "20051020_44431_0100_PP.png", "0", "0", "1", 6, True),
    ("20051020_44692_0100_PP.png", "20051020_44692_0100_PP.png", "0", "0", "1", 7, True),
    ("20051020_44714_0100_PP.png", "20051020_44714_0100_PP.png", "0", "0", "1", 7, True),
    ("20051020_45110_0100_PP.png", "20051020_45110_0100_PP.png", "4", "1", "1", 8, True),
    ("20051020_45137_0100_PP.png", "20051020_45137_0100_PP.png", "4", "1", "1", 8, True),
]


def write(folder: Path, seed: int, image: ImageFn, layout: str = "adcis") -> None:
    """Write the miniature layout ``layout`` ('adcis' or 'kaggle') into ``folder``."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    folder = Path(folder)
    images = folder / ("IMAGES" if layout == "adcis" else "messidor-2/messidor-2/preprocess")
    images.mkdir(parents=True, exist_ok=True)
    for disk_name, _, grade, dme, gradable, exam, written in ROWS:
        if not written or (layout == "kaggle" and gradable == "0"):
            continue
        labels = image_labels("messidor2", disk_name, f"exam{exam}", seed, dr_grade=_grade(grade),
                              dme=int(dme) if dme else None, quality="adequate" if gradable == "1" else "inadequate")
        image(labels).convert("RGB").save(images / disk_name)
    if layout == "adcis":
        _write_adcis_files(folder)
    else:
        _write_kaggle_file(folder)


def _grade(text: str) -> int | None:
    return int(float(text)) if text else None


def _write_adcis_files(folder: Path) -> None:
    with open(folder / "messidor_data.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["image_id", "adjudicated_dr_grade", "adjudicated_dme", "adjudicated_gradable"])
        writer.writerows([krause, grade, dme, gradable] for _, krause, grade, dme, gradable, _, _ in ROWS)
    exams: dict[int, list[str]] = {}
    for disk_name, _, _, _, _, exam, _ in ROWS:
        if exam is not None:
            exams.setdefault(exam, []).append(disk_name)
    # the ADCIS file lists the left image first, with a trailing space after the header
    lines = ["left;right "] + [";".join(reversed(names)) if number % 2 else ";".join(names)
                               for number, names in sorted(exams.items())]
    (folder / "messidor-2.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "messidor_readme.txt").write_text("Adjudicated grades (miniature copy).\n", encoding="utf-8")


def _write_kaggle_file(folder: Path) -> None:
    with open(folder / "messidor_data.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id_code", "diagnosis", "adjudicated_dme", "adjudicated_gradable"])
        writer.writerows([disk, grade, dme, gradable] for disk, _, grade, dme, gradable, _, _ in ROWS
                         if gradable == "1")

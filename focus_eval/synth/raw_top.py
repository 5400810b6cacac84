"""Miniature TOP (Tsukazaki Optos Public) set in the layout its reader accepts: ``data.csv`` with the release's
columns (filename, age, sex, LR and the 0/1 diagnosis columns AMD, RVO, Gla, MH, DR, RD, RP, AO, DM) beside
``images/`` holding the ultra-wide-field pictures. Patients with both eyes, an eye pictured twice, several
diagnoses on one image, a DM-only image (normal eye), a lower-case eye code and one listed image without its
file.

Labels and file names are fixed (tests state them by hand); ``seed`` only varies the pictures.
"""

from __future__ import annotations

from pathlib import Path

from focus_eval.synth.modalities import uwf_image
from focus_eval.synth.raw_common import ImageFn, image_labels

HEADER = "filename,age,sex,LR,AMD,RVO,Gla,MH,DR,RD,RP,AO,DM"
CODES = HEADER.split(",")[4:]
# (file name, age, sex, LR, the diagnosis columns that are 1)
ROWS = [
    ("000000_00.jpg", 78, "M", "L", ()), ("000000_01.jpg", 78, "M", "R", ()),
    ("000001_02.jpg", 69, "M", "L", ("Gla",)), ("000001_03.jpg", 69, "M", "R", ("Gla",)),
    ("000002_00.jpg", 55, "F", "R", ("DR", "DM")), ("000002_01.jpg", 55, "F", "L", ("DR", "DM")),
    ("000003_00.jpg", 61, "F", "L", ("DM",)),
    ("000004_00.jpg", 72, "M", "R", ("AMD",)), ("000004_01.jpg", 72, "M", "R", ("AMD", "RVO")),
    ("000005_00.jpg", 45, "M", "L", ("RD",)),
    ("000006_00.jpg", 33, "F", "R", ("RP",)), ("000006_01.jpg", 33, "F", "l", ("RP",)),
    ("000007_00.jpg", 80, "F", "L", ("AO",)),
    ("000008_00.jpg", 66, "M", "R", ("MH",)),
    ("000009_00.jpg", 58, "F", "L", ()), ("000009_01.jpg", 58, "F", "R", ()),
    ("000010_00.jpg", 70, "M", "L", ("Gla", "DR", "DM")),
    ("000011_01.jpg", 70, "F", "L", ("DR", "DM")),
    ("000012_00.jpg", 64, "M", "R", ("RVO",)),
    ("000013_00.jpg", 52, "F", "L", ()),
    ("000014_00.jpg", 75, "M", "R", ("Gla",)),
    ("000015_00.jpg", 40, "F", "L", ()), ("000015_01.jpg", 40, "F", "R", ("DR",)),
    ("000016_00.jpg", 68, "M", "R", ()),
]
MISSING = {"000016_00.jpg"}


def write(folder: Path, seed: int, image: ImageFn) -> None:
    root = Path(folder)
    (root / "images").mkdir(parents=True, exist_ok=True)
    lines = [HEADER]
    for name, age, sex, eye, codes in ROWS:
        lines.append(",".join([name, str(age), sex, eye] + [str(int(code in codes)) for code in CODES]))
        if name in MISSING:
            continue
        picture_seed = image_labels("top", name, name.split("_")[0], seed)["seed"]
        uwf_image(picture_seed).save(root / "images" / name, format="JPEG", quality=90)
    (root / "data.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")

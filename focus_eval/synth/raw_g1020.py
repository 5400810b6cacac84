"""Miniature G1020 in the Kaggle bundle's raw layout, unzipped one level deeper (``G1020/G1020/``):
``G1020.csv`` (imageID with extension, binaryLabels), ``Images/`` with a per-image ``.json`` beside each
picture, and the bundle's other folders (``Images_Square/``, ``Images_Cropped/img/``, ``Masks/``) holding
copies of the same names that a reader must not pick up. One label row has no image.

Labels and file names are fixed (tests state them by hand); ``seed`` only varies the pictures. Glaucoma has
both classes in every split of the image-level split.
"""

from __future__ import annotations

import json
from pathlib import Path

from focus_eval.synth.raw_common import ImageFn, image_labels

TOP = "G1020/G1020"
# (imageID, binaryLabels, image file written); ids are non-contiguous as in the real file
ROWS = [
    ("image_0.jpg", 0, True), ("image_1.jpg", 0, True), ("image_3.jpg", 0, False), ("image_4.jpg", 0, True),
    ("image_18.jpg", 1, True), ("image_19.jpg", 1, True), ("image_65.jpg", 1, True), ("image_103.jpg", 0, True),
    ("image_110.jpg", 1, True), ("image_111.jpg", 1, True), ("image_120.jpg", 0, True), ("image_121.jpg", 0, True),
]


def write(folder: Path, seed: int, image: ImageFn) -> None:
    top = Path(folder) / TOP
    for sub in ("Images", "Images_Square", "Images_Cropped/img", "Masks"):
        (top / sub).mkdir(parents=True, exist_ok=True)
    lines = ["imageID,binaryLabels"]
    for name, label, written in ROWS:
        lines.append(f"{name},{label}")
        if not written:
            continue
        picture = image(image_labels("g1020", name, name, seed, glaucoma=label)).convert("RGB")
        picture.save(top / "Images" / name, format="JPEG", quality=90)
        picture.resize((64, 64)).save(top / "Images_Square" / name, format="JPEG", quality=90)
        picture.crop((16, 16, 80, 80)).save(top / "Images_Cropped/img" / name, format="JPEG", quality=90)
        picture.convert("L").save(top / "Masks" / name.replace(".jpg", ".png"))
        (top / "Images" / name.replace(".jpg", ".json")).write_text(
            json.dumps({"imagePath": name, "shapes": []}), encoding="utf-8")
    (top / "G1020.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")

"""Miniature JSIEC1000 in its raw layout ``1000images/<class folder>/<name>``: DR, ambiguous (excluded) and
other-disease folders, names with a double dot (``<uuid>..JPG``), ``.jpg`` and ``.TIF`` files, a stray
``index.html``, and the nested duplicate ``1000images/1000images/`` of the Kaggle zip (a copy that must not
be read twice).

Labels and file names are fixed (tests state them by hand); ``seed`` only varies the pictures. Both targets
have both classes in every split of the image-level split.
"""

from __future__ import annotations

from pathlib import Path

from focus_eval.synth.raw_common import ImageFn, image_labels

ROOT = "1000images"
# (class folder, file name, labels shown in the picture)
FILES = [
    ("0.0.Normal", "0a1b2c3d-0001..JPG", {}),
    ("0.0.Normal", "0a1b2c3d-0002.jpg", {}),
    ("0.2.Large optic cup", "0a1b2c3d-0003..JPG", {"cdr": 0.8}),
    ("0.3.DR1", "0a1b2c3d-0004..JPG", {"dr_grade": 1}),
    ("1.0.DR2", "0a1b2c3d-0005..JPG", {"dr_grade": 2}),
    ("1.0.DR2", "0a1b2c3d-0006.TIF", {"dr_grade": 2}),
    ("1.1.DR3", "0a1b2c3d-0007..JPG", {"dr_grade": 3}),
    ("1.1.DR3", "0a1b2c3d-0013..JPG", {"dr_grade": 4}),
    ("2.0.BRVO", "0a1b2c3d-0008..JPG", {}),
    ("10.0.Possible glaucoma", "0a1b2c3d-0009..JPG", {"cdr": 0.7}),
    ("20.Massive hard exudates", "0a1b2c3d-0010..JPG", {"dme": 1}),
    ("27.Laser Spots", "0a1b2c3d-0011..JPG", {}),
    ("29.1.Blur fundus with suspected PDR", "0a1b2c3d-0012..JPG", {"dr_grade": 4, "quality": "inadequate"}),
]
# the Kaggle zip's nested copy of part of the tree
NESTED = ["0.0.Normal", "1.0.DR2"]


def write(folder: Path, seed: int, image: ImageFn) -> None:
    root = Path(folder) / ROOT
    for class_folder, name, shown in FILES:
        labels = image_labels("jsiec", f"{class_folder}/{name}", f"{class_folder}/{name}", seed, **shown)
        picture = image(labels).convert("RGB")
        for base in [root] + ([root / ROOT] if class_folder in NESTED else []):
            (base / class_folder).mkdir(parents=True, exist_ok=True)
            picture.save(base / class_folder / name, format="TIFF" if name.endswith(".TIF") else "JPEG")
    (root / "0.0.Normal" / "index.html").write_text("<html></html>\n", encoding="utf-8")

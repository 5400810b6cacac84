"""Miniature OCTID in its raw layout: the five class archives extracted side by side under ``OCTID/``
(``NORMAL/``, ``AMRD/``, ``CSR/``, ``DR/``, ``MH/``), B-scans named ``<CLASS><n>.jpeg`` and a stray
``Thumbs.db`` that is not an image. Enough images for the seeded split to put normal and abnormal scans in
every split.

Labels and file names are fixed (tests state them by hand); ``seed`` only varies the pictures.
"""

from __future__ import annotations

from pathlib import Path

from focus_eval.synth.modalities import oct_bscan
from focus_eval.synth.raw_common import ImageFn, image_labels

# class folder -> number of images
COUNTS = {"NORMAL": 6, "AMRD": 4, "CSR": 4, "DR": 4, "MH": 4}


def write(folder: Path, seed: int, image: ImageFn) -> None:
    root = Path(folder) / "OCTID"
    for code, count in COUNTS.items():
        class_dir = root / code
        class_dir.mkdir(parents=True, exist_ok=True)
        for n in range(1, count + 1):
            name = f"{code}{n}"
            oct_bscan(image_labels("octid", name, name, seed)["seed"]).save(class_dir / f"{name}.jpeg",
                                                                            format="JPEG", quality=90)
    (root / "NORMAL" / "Thumbs.db").write_bytes(b"\0\1")

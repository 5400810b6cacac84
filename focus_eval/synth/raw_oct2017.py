"""Miniature UCSD OCT2017 in the raw layout of its Kaggle copy: ``OCT2017 /`` (with the trailing space) holding
``train/``, ``val/`` and ``test/`` folders of CNV, DME, DRUSEN and NORMAL B-scans named
``<CLASS>-<patient>-<n>.jpeg``, the nested duplicate ``oct2017/OCT2017 /`` of the same zip (not read twice), a
stray ``.DS_Store`` and one file whose name does not follow the pattern.

Labels and file names are fixed (tests state them by hand); ``seed`` only varies the pictures, drawn by
``focus_eval.synth.modalities.oct_bscan``.
"""

from __future__ import annotations

from pathlib import Path

from focus_eval.synth.modalities import oct_bscan
from focus_eval.synth.raw_common import ImageFn, image_labels

ROOT = "OCT2017 "
NESTED = "oct2017/OCT2017 "
# folder -> class -> file names; train and test patients are disjoint, val patients come from the training pool
FILES = {
    "train": {"CNV": ["CNV-1001-1.jpeg", "CNV-1001-2.jpeg", "CNV-1002-1.jpeg"],
              "DME": ["DME-2001-1.jpeg", "DME-2002-1.jpeg"],
              "DRUSEN": ["DRUSEN-3001-1.jpeg", "DRUSEN-3002-1.jpeg"],
              "NORMAL": ["NORMAL-4001-1.jpeg", "NORMAL-4001-2.jpeg", "NORMAL-4002-1.jpeg", "scan copy.jpeg"]},
    "val": {"CNV": ["CNV-1003-1.jpeg"], "NORMAL": ["NORMAL-4003-1.jpeg"]},
    "test": {"CNV": ["CNV-5001-1.jpeg"], "DME": ["DME-5002-1.jpeg"], "DRUSEN": ["DRUSEN-5003-1.jpeg"],
             "NORMAL": ["NORMAL-5004-1.jpeg", "NORMAL-5004-2.jpeg"]},
}


def write(folder: Path, seed: int, image: ImageFn) -> None:
    for base, folders in ((ROOT, FILES), (NESTED, {"test": FILES["test"]})):
        for split, classes in folders.items():
            for label, names in classes.items():
                target = Path(folder) / base / split / label
                target.mkdir(parents=True, exist_ok=True)
                for name in names:
                    picture_seed = image_labels("oct2017", f"{split}/{name}", name, seed)["seed"]
                    oct_bscan(picture_seed).save(target / name, format="JPEG", quality=90)
    (Path(folder) / ROOT / "train" / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")

"""Miniature NEH OCT set in its raw layout: ``data_information.csv`` beside ``NEH_UT_2021RetinalOCTDataset/``,
which holds ``NORMAL/``, ``DRUSEN/`` and ``CNV/`` folders of patient folders of B-scans. Patient numbers repeat
across the class folders (as in the release); the ``Directory`` cells start with a separator and one uses
backslashes; a CNV volume has B-scans labelled normal and drusen too; one listed B-scan has no file.

Labels and file names are fixed (tests state them by hand); ``seed`` only varies the pictures.
"""

from __future__ import annotations

from pathlib import Path

from focus_eval.synth.modalities import oct_bscan
from focus_eval.synth.raw_common import ImageFn, image_labels

DATASET = "NEH_UT_2021RetinalOCTDataset"
HEADER = "Directory,Class,Label,Patient ID,Eye"
# (class folder, patient, B-scan labels in order); B-scan n is <class>/<patient>/<n>.jpg
VOLUMES = [
    ("NORMAL", 1, ["normal", "normal"]), ("NORMAL", 2, ["normal", "normal"]), ("NORMAL", 3, ["normal"]),
    ("NORMAL", 4, ["normal", "normal"]), ("NORMAL", 5, ["normal"]),
    ("DRUSEN", 1, ["drusen", "normal"]), ("DRUSEN", 2, ["drusen"]), ("DRUSEN", 3, ["drusen", "drusen"]),
    ("DRUSEN", 4, ["drusen"]),
    ("CNV", 1, ["CNV", "drusen", "normal"]), ("CNV", 2, ["CNV"]), ("CNV", 3, ["CNV", "CNV"]), ("CNV", 4, ["CNV"]),
]
MISSING = {"DRUSEN/3/2"}
BACKSLASHED = {"CNV/1/1"}


def rows() -> list[tuple[str, str, str, int]]:
    """(image id, class, label, patient) of every table row, in order."""
    return [(f"{cls}/{patient}/{n}", cls, label, patient)
            for cls, patient, labels in VOLUMES for n, label in enumerate(labels, start=1)]


def write(folder: Path, seed: int, image: ImageFn) -> None:
    root = Path(folder)
    lines = [HEADER]
    for image_id, cls, label, patient in rows():
        cell = "\\" + image_id.replace("/", "\\") if image_id in BACKSLASHED else "/" + image_id
        lines.append(f"{cell}.jpg,{cls},{label},{patient},OD")
        if image_id in MISSING:
            continue
        path = root / DATASET / f"{image_id}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        oct_bscan(image_labels("neh", image_id, f"{cls}-{patient}", seed)["seed"]).save(path, format="JPEG",
                                                                                        quality=90)
    (root / "data_information.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")

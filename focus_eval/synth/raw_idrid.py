"""Miniature IDRiD part B (Disease Grading) in its raw layout: names that restart per split (IDRiD_001 is a
different image with different grades in train and test), a header with a trailing space, empty trailing
columns, a stray space in a cell, and the outer folders that some copies add."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from PIL import Image

from focus_eval.synth.raw_common import image_labels, save_jpeg

# (retinopathy grade, risk of macular edema) of IDRiD_001, IDRiD_002, ... per split.
GRADES = {
    "train": [(3, 2), (0, 0), (1, 0), (2, 0), (0, 0), (4, 2), (2, 1), (0, 0), (1, 0), (3, 1), (0, 0), (2, 2),
              (1, 0), (0, 0), (4, 0)],
    "test": [(0, 0), (2, 2), (0, 0), (1, 0), (3, 1), (0, 0), (1, 0), (2, 0), (0, 0), (4, 2)],
}
FOLDERS = {
    "train": ("1. Original Images/a. Training Set", "2. Groundtruths/a. IDRiD_Disease Grading_Training Labels.csv"),
    "test": ("1. Original Images/b. Testing Set", "2. Groundtruths/b. IDRiD_Disease Grading_Testing Labels.csv"),
}
# The original training file has a trailing space in the last header and empty columns after it; the
# testing file of the same release has neither.
HEADERS = {
    "train": "Image name,Retinopathy grade,Risk of macular edema ,,,,,,,,,",
    "test": "Image name,Retinopathy grade,Risk of macular edema",
}
ROOTS = {
    "plain": "B. Disease Grading",
    "url_encoded": "B.%20Disease%20Grading/B. Disease Grading",
    "doubled": "B. Disease Grading/B. Disease Grading",
}
STRAY_SPACE_ROW = ("train", 7)


def write(folder: Path, seed: int, image: Callable[[dict], Image.Image], layout: str = "plain") -> None:
    """Write the miniature dataset into ``folder`` (the ``idrid`` folder of a data root)."""
    if layout not in ROOTS:
        raise ValueError(f"unknown IDRiD layout {layout!r}; expected one of {sorted(ROOTS)}")
    root = Path(folder) / ROOTS[layout]
    for split, (image_rel, label_rel) in FOLDERS.items():
        image_dir, label_file = root / image_rel, root / label_rel
        image_dir.mkdir(parents=True, exist_ok=True)
        label_file.parent.mkdir(parents=True, exist_ok=True)
        lines = [HEADERS[split]]
        padding = "," * (HEADERS[split].count(",") - 2)
        for number, (grade, edema) in enumerate(GRADES[split], start=1):
            name = f"IDRiD_{number:03d}"
            space = " " if (split, number) == STRAY_SPACE_ROW else ""
            lines.append(f"{name},{grade},{edema}{space}{padding}")
            image_id = f"{split}/{name}"
            labels = image_labels("idrid", image_id, image_id, seed, split=split, dr_grade=grade, dme=edema)
            save_jpeg(image, labels, image_dir / f"{name}.jpg")
        label_file.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")

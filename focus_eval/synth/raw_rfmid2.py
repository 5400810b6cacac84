"""Miniature RFMiD 2.0 in its raw layout: one folder per split holding its images and a latin-1 label file
with the release's quirks (a header cell 'ON' followed by a non-breaking space, the OPDM typo, trailing
empty columns, 'ID' in some files and 'id' in another, .jpg and .JPG mixed, one label row without image)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Callable

from PIL import Image

from focus_eval.synth.raw_common import image_labels, save_jpeg

CONDITIONS = ("WNL", "DR", "ME", "CME", "ODC", "HTN", "IIH", "CNV", "CSC", "SOFE", "GRT", "RD", "RHL", "RTR",
              "ON\xa0", "OPDM", "ARMD", "MH", "TSLN")
# Per split: (header spelling of the ID column, rows of (ID, positive findings, image suffix or None)).
# None = the label row has no image file, as for the handful of unmatched rows in the release.
ROWS = {
    "train": ("ID", [(1, ("DR",), ".jpg"), (2, (), ".jpg"), (3, ("ME",), ".jpg"), (4, ("DR", "ME"), ".JPG"),
                     (5, (), ".jpg"), (6, ("DR",), None), (7, ("ODC",), ".jpg"), (8, ("DR",), ".JPG"),
                     (9, (), ".jpg"), (10, ("CNV",), ".jpg"), (11, (), ".jpg")]),
    "val": ("ID", [(12, (), ".jpg"), (13, ("DR",), ".JPG"), (14, ("ME",), ".jpg"), (15, (), ".jpg"),
                   (16, ("DR", "ME"), ".jpg"), (17, ("HTN",), ".jpg"), (18, (), ".jpg"), (19, (), ".jpg"),
                   (20, ("DR",), ".JPG"), (21, (), ".jpg")]),
    "test": ("id", [(22, ("ME",), ".jpg"), (23, (), ".jpg"), (24, ("DR",), ".JPG"), (25, (), ".jpg"),
                    (26, ("RD",), ".jpg"), (27, ("DR", "ME"), ".jpg"), (28, (), ".jpg"), (29, (), ".jpg"),
                    (30, ("DR",), ".jpg"), (31, (), ".JPG")]),
}
LABEL_FILES = {"train": "RFMiD_2_Training_labels.csv", "val": "RFMiD_2_Validation_labels.csv",
               "test": "RFMiD_2_Testing_labels.csv"}
FOLDERS = {
    "release": {"train": "Training_set", "val": "Validation_set", "test": "Test_set"},
    "short": {"train": "Train", "val": "Validation", "test": "Test"},
}
TRAILING_EMPTY_COLUMNS = 2


def write(folder: Path, seed: int, image: Callable[[dict], Image.Image], layout: str = "release") -> None:
    """Write the miniature dataset into ``folder`` (the ``rfmid2`` folder of a data root)."""
    if layout not in FOLDERS:
        raise ValueError(f"unknown RFMiD 2.0 layout {layout!r}; expected one of {sorted(FOLDERS)}")
    folder = Path(folder)
    for split, (id_header, rows) in ROWS.items():
        split_dir = folder / FOLDERS[layout][split]
        split_dir.mkdir(parents=True, exist_ok=True)
        text = io.StringIO()
        out = csv.writer(text, lineterminator="\r\n")
        out.writerow([id_header, *CONDITIONS] + [""] * TRAILING_EMPTY_COLUMNS)
        for number, findings, suffix in rows:
            values = {c: int(c.strip() in findings) for c in CONDITIONS}
            values["WNL"] = int(not findings)
            out.writerow([number] + [values[c] for c in CONDITIONS] + [""] * TRAILING_EMPTY_COLUMNS)
            if suffix is None:
                continue
            image_id = f"{split}/{number}"
            labels = image_labels("rfmid2", image_id, image_id, seed, split=split, dr=values["DR"], dme=values["ME"])
            save_jpeg(image, labels, split_dir / f"{number}{suffix}")
        (split_dir / LABEL_FILES[split]).write_bytes(text.getvalue().encode("latin-1"))

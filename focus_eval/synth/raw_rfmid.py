"""Miniature RFMiD 1.0 in its raw layout (official release or Kaggle copy): 47-column label files, PNG
images, IDs that restart at 1 in every split and mean different images there."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Callable

from PIL import Image

from focus_eval.synth.raw_common import image_labels

COLUMNS = ("ID Disease_Risk DR ARMD MH DN MYA BRVO TSLN ERM LS MS CSR ODC CRVO TV AH ODP ODE ST AION PT RT RS CRS "
           "EDN RPEC MHL RP CWS CB ODPM PRH MNF HR CRAO TD CME PTCR CF VH MCA VS BRAO PLQ HPED CL").split()

# Positive findings of images 1..10 in each split; the same ID carries different labels across splits.
FINDINGS = {
    "train": [("DR",), (), ("ODC",), ("DR", "CME"), ("MH",), ("CME",), ("DR", "HR"), (), ("ARMD",), ("DR",)],
    "val": [(), ("DR", "CME"), ("DR",), ("MYA",), (), ("CME", "EDN"), (), ("DR",), ("TSLN",), ()],
    "test": [("CME",), (), ("DR",), (), ("DR", "CME"), ("ODC",), (), ("DR", "LS"), (), ("MH",)],
}
LAYOUTS = {
    "official": {
        "train": ("A. RFMiD_All_Classes_Dataset/2. Groundtruths/a. RFMiD_Training_Labels.csv",
                  "A. RFMiD_All_Classes_Dataset/1. Original Images/a. Training Set"),
        "val": ("A. RFMiD_All_Classes_Dataset/2. Groundtruths/b. RFMiD_Validation_Labels.csv",
                "A. RFMiD_All_Classes_Dataset/1. Original Images/b. Validation Set"),
        "test": ("A. RFMiD_All_Classes_Dataset/2. Groundtruths/c. RFMiD_Testing_Labels.csv",
                 "A. RFMiD_All_Classes_Dataset/1. Original Images/c. Testing Set"),
    },
    "kaggle": {
        "train": ("Training_Set/Training_Set/RFMiD_Training_Labels.csv", "Training_Set/Training_Set/Training"),
        "val": ("Evaluation_Set/Evaluation_Set/RFMiD_Validation_Labels.csv",
                "Evaluation_Set/Evaluation_Set/Validation"),
        "test": ("Test_Set/Test_Set/RFMiD_Testing_Labels.csv", "Test_Set/Test_Set/Test"),
    },
}


def write(folder: Path, seed: int, image: Callable[[dict], Image.Image], layout: str = "official") -> None:
    """Write the miniature dataset into ``folder`` (the ``rfmid`` folder of a data root)."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown RFMiD layout {layout!r}; expected one of {sorted(LAYOUTS)}")
    folder = Path(folder)
    for split, (label_rel, image_rel) in LAYOUTS[layout].items():
        label_file, image_dir = folder / label_rel, folder / image_rel
        label_file.parent.mkdir(parents=True, exist_ok=True)
        image_dir.mkdir(parents=True, exist_ok=True)
        with label_file.open("w", newline="", encoding="utf-8") as handle:
            out = csv.writer(handle)
            out.writerow(COLUMNS)
            for number, findings in enumerate(FINDINGS[split], start=1):
                values = {c: int(c in findings) for c in COLUMNS[2:]}
                out.writerow([number, int(bool(findings))] + [values[c] for c in COLUMNS[2:]])
                image_id = f"{split}/{number}"
                labels = image_labels("rfmid", image_id, image_id, seed, split=split, dr=values["DR"],
                                      dme=values["CME"])
                image(labels).convert("RGB").save(image_dir / f"{number}.png", format="PNG")

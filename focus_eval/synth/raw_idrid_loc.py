"""Miniature IDRiD part C (Localization) in its raw layout: optic disc and fovea centre files per split with
the release's padding columns and empty trailing rows, names that restart per split, and one training image
whose fovea centre is missing from the fovea file."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from PIL import Image

from focus_eval.synth.raw_common import image_labels, save_jpeg

# (disc x, disc y, fovea x, fovea y) of IDRiD_001, IDRiD_002, ... per split, in original-image pixels; a disc
# right of the fovea is a right eye.
CENTRES = {
    "train": [(3420, 1510, 2180, 1620), (860, 1390, 2090, 1560), (3310, 1250, 2240, 1400), (905, 1460, 2010, 1500),
              (3502, 1433, 2301, 1588), (1010, 1520, 2160, 1600), (3390, 1380, 2200, 1480), (940, 1400, 2150, 1520),
              (3280, 1490, 2120, 1560), (990, 1330, 2080, 1450)],
    "test": [(880, 1420, 2050, 1530), (3360, 1470, 2230, 1580), (1020, 1500, 2190, 1560), (3440, 1360, 2160, 1490),
             (960, 1380, 2100, 1500), (3300, 1520, 2250, 1610)],
}
NO_FOVEA = ("train", 4)  # IDRiD_004 of the training set has no row in the fovea file
DISC_FILES = {"train": "a. IDRiD_OD_Center_Training Set_Markups.csv",
              "test": "b. IDRiD_OD_Center_Testing Set_Markups.csv"}
FOVEA_FILES = {"train": "IDRiD_Fovea_Center_Training Set_Markups.csv",
               "test": "IDRiD_Fovea_Center_Testing Set_Markups.csv"}
IMAGE_DIRS = {"train": "1. Original Images/a. Training Set", "test": "1. Original Images/b. Testing Set"}
ROOTS = {"plain": "C. Localization", "doubled": "C. Localization/C. Localization"}
HEADER = "Image No,X- Coordinate,Y - Coordinate,,,"


def write(folder: Path, seed: int, image: Callable[[dict], Image.Image], layout: str = "plain") -> None:
    """Write part C into ``folder`` (the ``idrid`` folder of a data root, beside parts A and B)."""
    if layout not in ROOTS:
        raise ValueError(f"unknown IDRiD part C layout {layout!r}; expected one of {sorted(ROOTS)}")
    root = Path(folder) / ROOTS[layout]
    truths = root / "2. Groundtruths"
    for split, centres in CENTRES.items():
        discs, foveas = [HEADER], [HEADER]
        for number, (dx, dy, fx, fy) in enumerate(centres, start=1):
            name = f"IDRiD_{number:03d}"
            discs.append(f"{name},{dx},{dy},,,")
            if (split, number) != NO_FOVEA:
                foveas.append(f"{name},{fx},{fy},,,")
            eye = "right" if dx > fx else "left"
            image_id = f"{split}/{name}"
            labels = image_labels("idrid_loc", image_id, image_id, seed, split=split, laterality=eye)
            save_jpeg(image, labels, root / IMAGE_DIRS[split] / f"{name}.jpg")
        padding = [",,,,,"] * 3  # the release's files end in rows of empty cells
        for relative, lines in ((f"1. Optic Disc Center Location/{DISC_FILES[split]}", discs),
                                (f"2. Fovea Center Location/{FOVEA_FILES[split]}", foveas)):
            path = truths / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\r\n".join(lines + padding) + "\r\n", encoding="utf-8")

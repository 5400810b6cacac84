"""Miniature IDRiD part C (Localization) in its raw layout: optic disc and fovea centre files per split with
the release's padding columns and empty trailing rows, names that restart per split, and one training image
whose fovea centre is missing from the fovea file. Images are ``FRAME`` pixels, so every centre lies inside."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from PIL import Image

from focus_eval.synth.raw_common import image_labels, save_jpeg

# (disc x, disc y, fovea x, fovea y) of IDRiD_001, IDRiD_002, ... per split, in pixels of the miniature's images
# (``FRAME``: a tenth of the release's 4288 x 2848); a disc right of the fovea is a right eye.
FRAME = (429, 285)
CENTRES = {
    "train": [(342, 151, 218, 162), (86, 139, 209, 156), (331, 125, 224, 140), (90, 146, 201, 150),
              (350, 143, 230, 159), (101, 152, 216, 160), (339, 138, 220, 148), (94, 140, 215, 152),
              (328, 149, 212, 156), (99, 133, 208, 145)],
    "test": [(88, 142, 205, 153), (336, 147, 223, 158), (102, 150, 219, 156), (344, 136, 216, 149),
             (96, 138, 210, 150), (330, 152, 225, 161)],
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
            save_jpeg(image, labels, root / IMAGE_DIRS[split] / f"{name}.jpg", size=FRAME)
        padding = [",,,,,"] * 3  # the release's files end in rows of empty cells
        for relative, lines in ((f"1. Optic Disc Center Location/{DISC_FILES[split]}", discs),
                                (f"2. Fovea Center Location/{FOVEA_FILES[split]}", foveas)):
            path = truths / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\r\n".join(lines + padding) + "\r\n", encoding="utf-8")

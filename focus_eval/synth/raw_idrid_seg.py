"""Miniature IDRiD part A (Segmentation) in its raw layout: per image a .tif mask per lesion and one of the
optic disc, with the release's habits: soft-exudate and haemorrhage masks left out for images without them,
all-black masks for absent lesions that do get a file, one mask stored as red on black (RGB), and one image
without an optic disc mask. Masks are 90 x 60 pixels (wide, as the 4288 x 2848 originals)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from PIL import Image, ImageDraw

from focus_eval.synth.raw_common import image_labels, save_jpeg

MASK_SIZE = (90, 60)
FOLDERS = {"MA": "1. Microaneurysms", "HE": "2. Haemorrhages", "EX": "3. Hard Exudates", "SE": "4. Soft Exudates",
           "OD": "5. Optic Disc"}
SPLIT_DIRS = {"train": "a. Training Set", "test": "b. Testing Set"}
R, L = (70, 30), (20, 30)  # disc centres: right of the image centre (a right eye) or left of it


def dots(points):
    return [(x, y, x + 1, y + 1) for x, y in points]


# image -> (split, disc centre or None, lesion code -> boxes (x0, y0, x1, y1), ends exclusive). A code that is
# absent has no mask file; an empty list is an all-black mask.
IMAGES = {
    "IDRiD_01": ("train", R, {"MA": dots([(10, 30), (40, 10), (60, 50)]), "HE": [(20, 20, 26, 26)], "EX": []}),
    "IDRiD_02": ("train", L, {"MA": dots([(x, 5) for x in range(10, 35, 4)]), "HE": [(60, 25, 70, 35)],
                              "EX": [(15, 45, 17, 47)], "SE": [(5, 28, 8, 31)]}),
    "IDRiD_03": ("train", R, {"MA": dots([(x, 2) for x in range(2, 50, 2)]), "EX": [(72, 10, 82, 20)]}),
    "IDRiD_04": ("train", None, {"MA": dots([(30, 30)]), "HE": [(40, 40, 43, 43)], "EX": []}),
    "IDRiD_05": ("train", L, {"MA": [], "HE": [(50, 5, 52, 7), (50, 50, 52, 52)], "EX": [],
                              "SE": [(22, 10, 24, 12)]}),
    "IDRiD_06": ("train", R, {"MA": dots([(80, 30), (75, 55)]), "HE": [], "EX": []}),
    "IDRiD_55": ("test", R, {"MA": dots([(30, 28)]), "HE": [(10, 10, 20, 20)], "EX": [], "SE": [(60, 45, 63, 48)]}),
    "IDRiD_56": ("test", L, {"MA": [], "EX": [(30, 30, 33, 33)]}),
    "IDRiD_57": ("test", R, {"MA": dots([(x, 58) for x in range(0, 60, 10)]), "HE": [], "EX": []}),
    "IDRiD_58": ("test", L, {"MA": dots([(5, 30)]), "HE": [(0, 0, 3, 3)], "EX": []}),
}
RGB_MASK = ("IDRiD_01", "MA")  # stored as red on black, as some copies of the release are


def write(folder: Path, seed: int, image: Callable[[dict], Image.Image]) -> None:
    """Write part A into ``folder`` (the ``idrid`` folder of a data root, beside parts B and C)."""
    root = Path(folder) / "A. Segmentation"
    for name, (split, disc, lesions) in IMAGES.items():
        eye = None if disc is None else "right" if disc == R else "left"
        labels = image_labels("idrid_seg", name, name, seed, split=split, laterality=eye)
        save_jpeg(image, labels, root / "1. Original Images" / SPLIT_DIRS[split] / f"{name}.jpg", size=MASK_SIZE)
        truths = root / "2. All Segmentation Groundtruths" / SPLIT_DIRS[split]
        shapes = dict(lesions)
        if disc is not None:
            shapes["OD"] = [(disc[0] - 4, disc[1] - 4, disc[0] + 4, disc[1] + 4)]
        for code, boxes in shapes.items():
            path = truths / FOLDERS[code] / f"{name}_{code}.tif"
            path.parent.mkdir(parents=True, exist_ok=True)
            draw_mask(boxes, rgb=(name, code) == RGB_MASK).save(path)
    for code, folder_name in FOLDERS.items():  # every lesion folder exists, even where no image has a file
        for split_dir in SPLIT_DIRS.values():
            (root / "2. All Segmentation Groundtruths" / split_dir / folder_name).mkdir(parents=True, exist_ok=True)


def draw_mask(boxes, rgb: bool = False, size: tuple[int, int] = MASK_SIZE, value: int = 255) -> Image.Image:
    """A black mask with the boxes (x0, y0, x1, y1, ends exclusive) filled: grey level ``value``, or red."""
    mask = Image.new("RGB" if rgb else "L", size, 0)
    draw = ImageDraw.Draw(mask)
    for x0, y0, x1, y1 in boxes:
        draw.rectangle((x0, y0, x1 - 1, y1 - 1), fill=(value, 0, 0) if rgb else value)
    return mask

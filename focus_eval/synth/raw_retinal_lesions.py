"""Miniature Retinal-Lesions in its raw layout: ``dr_grades.csv`` with both grade columns, images named
<patient>_<eye>, a mask folder per image holding only the lesions it has (PNG, grey 255, one lesion in the
release's grey 127 for a mark outside the grading guideline), images without a mask folder, an empty mask
folder, and a mask folder without an image. Masks are 64 x 64 pixels. Beside the release folder, the published
``od_fovea_autoloc.txt`` (disc and fovea boxes per image, the disc on the nasal side: right of the fovea in a right
eye), which leaves one image out and lists one image that has no label row."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from PIL import Image

from focus_eval.synth.raw_common import image_labels, save_jpeg
from focus_eval.synth.raw_idrid_seg import dots, draw_mask

ROOT = "retinal-lesions-v20191227"
MASK_SIZE = (64, 64)
# image id -> (kaggle label, our label, mask stem -> boxes, or None for no mask folder at all)
IMAGES = {
    "10009_left": (0, 0, None),
    "10009_right": (1, 1, {"microaneurysm": dots([(10, 10), (50, 50)])}),
    "10015_left": (2, 2, {"microaneurysm": dots([(5, 5), (20, 5), (40, 5)]), "retinal_hemorrhage": [(30, 30, 35, 35)],
                          "hard_exudate": [(10, 40, 17, 47)]}),
    "10015_right": (3, 2, {"retinal_hemorrhage": [(20, 20, 23, 23)], "cotton_wool_spots": [(40, 10, 42, 12)]}),
    "10028_left": (3, 3, {"microaneurysm": dots([(x, y) for x in range(0, 50, 10) for y in range(0, 50, 10)]),
                          "retinal_hemorrhage": [(x, 60, x + 2, 62) for x in range(0, 56, 8)]}),
    "1003_right": (4, 4, {"neovascularization": [(30, 30, 34, 34)], "preretinal_hemorrhage": [(0, 0, 10, 10)],
                          "retinal_hemorrhage": [(50, 50, 52, 52)], "fibrous_proliferation": [(40, 5, 43, 8)],
                          "vitreous_hemorrhage": [(10, 40, 18, 48)]}),
    "10045_left": (0, 0, {}),
    "10045_right": (2, 2, {"hard_exudate": dots([(x, 32) for x in range(4, 64, 10)])}),
    "10067_right": (1, 1, {"microaneurysm": dots([(33, 33)])}),
    "1010_left": (2, 2, {"retinal_hemorrhage": [(5, 5, 11, 11)], "hard_exudate": dots([(50, 10), (55, 10)]),
                         "cotton_wool_spots": [(30, 40, 35, 45)]}),
    "10110_left": (0, 0, None),
    "10110_right": (2, 3, {"retinal_hemorrhage": dots([(x, 20) for x in range(0, 63, 3)]),
                           "microaneurysm": dots([(5, 50), (15, 50), (25, 50), (35, 50)])}),
}
GREY_127 = ("10015_right", "retinal_hemorrhage")  # marked outside the grading guideline
STRAY_MASKS = "99999_left"  # a mask folder without an image or a label row
UNLOCATED = "10110_left"  # an image the localisation file leaves out
LOCALISATION_HEADER = "#img odx_0 ody_0 odx_1 ody_1 fx_0 fy_0 fx_1 fy_1 "


def localisation_line(image_id: str) -> str:
    """The disc box about (48, 32) and the fovea box about (24, 34) of a right eye, mirrored for a left eye."""
    disc, fovea = (44, 28, 52, 36), (21, 31, 27, 37)
    if image_id.endswith("_left"):
        disc, fovea = (64 - disc[2], disc[1], 64 - disc[0], disc[3]), (64 - fovea[2], fovea[1], 64 - fovea[0], fovea[3])
    return " ".join([f"{image_id}.jpg", *map(str, disc + fovea)])


def write(folder: Path, seed: int, image: Callable[[dict], Image.Image]) -> None:
    """Write the miniature dataset into ``folder`` (the ``retinal_lesions`` folder of a data root)."""
    root = Path(folder) / ROOT
    lines = ["image id,kaggle label,our label"]
    for image_id, (kaggle, grade, lesions) in IMAGES.items():
        lines.append(f"{image_id},{kaggle},{grade}")
        patient, eye = image_id.split("_")
        labels = image_labels("retinal_lesions", image_id, patient, seed, dr_grade=grade, laterality=eye)
        save_jpeg(image, labels, root / "images_896x896" / f"{image_id}.jpg", size=MASK_SIZE)
        if lesions is None:
            continue
        masks = root / "lesion_segs_896x896" / image_id
        masks.mkdir(parents=True, exist_ok=True)
        for stem, boxes in lesions.items():
            grey = 127 if (image_id, stem) == GREY_127 else 255
            draw_mask(boxes, size=MASK_SIZE, value=grey).save(masks / f"{stem}.png")
    stray = root / "lesion_segs_896x896" / STRAY_MASKS
    stray.mkdir(parents=True, exist_ok=True)
    draw_mask(dots([(1, 1)]), size=MASK_SIZE).save(stray / "microaneurysm.png")
    (root / "dr_grades.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    located = [localisation_line(i) for i in [*IMAGES, STRAY_MASKS] if i != UNLOCATED]
    (Path(folder) / "od_fovea_autoloc.txt").write_text("\n".join([LOCALISATION_HEADER, *located]) + "\n",
                                                       encoding="utf-8")

"""Miniature DDR in its raw layout: the DR grading part (one "<name> <grade>" line per image, grade 5 for the
ungradable class, a tab-separated line, trailing spaces, an empty last line) and the lesion segmentation
part (a .tif mask per lesion; an absent lesion as an all-black mask or a left-out file; the validation
split's masks under "segmentation label/", as in the release). Masks are 80 x 60 pixels."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from PIL import Image

from focus_eval.synth.raw_common import image_labels, save_jpeg
from focus_eval.synth.raw_idrid_seg import dots, draw_mask

ROOT = "DDR-dataset"
MASK_SIZE = (80, 60)
GRADES = {
    "train": [("007-0004-000", 0), ("007-0025-000", 1), ("007-0061-100", 2), ("007-0120-200", 3),
              ("007-0188-300", 4), ("007-0207-000", 5), ("20170323093305605", 0), ("20170323100552811", 2),
              ("007-0301-100", 1), ("007-0355-000", 0), ("007-0412-400", 4), ("007-0466-200", 2)],
    "valid": [("007-1002-000", 0), ("007-1017-100", 1), ("007-1050-200", 2), ("007-1098-300", 3),
              ("007-1133-400", 4), ("20170411155036120", 5)],
    "test": [("007-2001-000", 0), ("007-2040-100", 1), ("007-2052-200", 2), ("007-2076-300", 3),
             ("007-2105-400", 4), ("007-2119-000", 5), ("20170517101431502", 2), ("007-2230-000", 0)],
}
TAB_ROW, SPACED_ROW = ("train", 3), ("test", 5)  # 1-based rows written "<name>\t<grade>" and "<name> <grade>  "
# lesion image -> lesion code -> boxes (x0, y0, x1, y1); a code left out has no mask file
LESION_IMAGES = {
    "train": {"007-1789-100": {"MA": dots([(5, 5), (20, 40), (60, 10)]), "HE": [(30, 20, 40, 30)], "SE": []},
              "007-1812-100": {"MA": dots([(x, 50) for x in range(2, 34, 4)]), "HE": [], "EX": [(50, 5, 54, 9)],
                               "SE": [(10, 10, 12, 12)]},
              "20170413102628830": {"MA": dots([(x, 3) for x in range(0, 66, 3)]),
                                    "HE": [(10, 30, 13, 33), (40, 30, 43, 33)], "EX": [], "SE": []},
              "007-2843-200": {"MA": [], "HE": [], "EX": [], "SE": []}},
    "valid": {"007-3050-200": {"MA": dots([(40, 40)]), "HE": [(5, 5, 12, 12)], "EX": [], "SE": []},
              "007-3111-300": {"MA": [], "HE": [(70, 50, 72, 52)], "EX": dots([(x, 20) for x in range(10, 70, 10)]),
                               "SE": [(30, 45, 35, 46)]}},
    "test": {"007-3500-300": {"MA": dots([(15, 15), (65, 45)]), "HE": [], "EX": [(30, 30, 38, 38)]},
             "20170627163217393": {"MA": [], "HE": [(50, 10, 53, 13)], "EX": [], "SE": [(20, 50, 21, 52)]},
             "007-3677-400": {"MA": dots([(x, 55) for x in range(0, 63, 3)]), "HE": [], "EX": [(5, 30, 7, 32)],
                              "SE": []}},
}
LABEL_DIRS = {"train": "label", "valid": "segmentation label", "test": "label"}


def write(folder: Path, seed: int, image: Callable[[dict], Image.Image]) -> None:
    """Write the miniature dataset into ``folder`` (the ``ddr`` folder of a data root)."""
    root = Path(folder) / ROOT
    for split, rows in GRADES.items():
        lines = []
        for number, (name, grade) in enumerate(rows, start=1):
            sep = "\t" if (split, number) == TAB_ROW else " "
            lines.append(f"{name}.jpg{sep}{grade}" + ("  " if (split, number) == SPACED_ROW else ""))
            labels = image_labels("ddr", f"grading/{split}/{name}", name, seed, split=split,
                                  dr_grade=grade if grade < 5 else None, quality="inadequate" if grade == 5 else None)
            save_jpeg(image, labels, root / "DR_grading" / split / f"{name}.jpg")
        (root / "DR_grading" / f"{split}.txt").write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    for split, images in LESION_IMAGES.items():
        base = root / "lesion_segmentation" / split
        for name, lesions in images.items():
            labels = image_labels("ddr", f"lesion/{split}/{name}", name, seed, split=split, dr_grade=2)
            save_jpeg(image, labels, base / "image" / f"{name}.jpg", size=MASK_SIZE)
            for code, boxes in lesions.items():
                path = base / LABEL_DIRS[split] / code / f"{name}.tif"
                path.parent.mkdir(parents=True, exist_ok=True)
                draw_mask(boxes, size=MASK_SIZE).save(path)
        for code in ("EX", "HE", "MA", "SE"):
            (base / LABEL_DIRS[split] / code).mkdir(parents=True, exist_ok=True)

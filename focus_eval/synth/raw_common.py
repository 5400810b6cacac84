"""Helpers shared by the miniature raw-layout writers: the label dict handed to the image callable, and
writing its picture as a JPEG."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any, Callable

from PIL import Image

ImageFn = Callable[[dict], Image.Image]


def image_labels(dataset: str, image_id: str, patient_id: str, seed: int, **labels: Any) -> dict:
    """The dict an image callable receives. Keys: dataset, image_id, patient_id, seed (per image, stable),
    and the row's harmonized labels: dr_grade (ICDR 0-4 or None), dr, referable_dr, glaucoma (1/0/None),
    age (years or None), sex ('male'/'female'/None), quality ('adequate'/'inadequate'/None), eye, plus any
    dataset-specific extras."""
    row = {"dataset": dataset, "image_id": image_id, "patient_id": patient_id,
           "seed": zlib.crc32(f"{seed}:{dataset}:{image_id}".encode()),
           "dr_grade": None, "dr": None, "referable_dr": None, "glaucoma": None,
           "age": None, "sex": None, "quality": None, "eye": None}
    row.update(labels)
    return row


def save_jpeg(image_fn: ImageFn, labels: dict, path: Path, size: tuple[int, int] | None = None) -> None:
    """Render one image through the callable and write it as a JPEG at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    picture = image_fn(labels).convert("RGB")
    # ``size``: (width, height) the image must have, that of its lesion masks
    (picture if size is None or picture.size == size else picture.resize(size)).save(path, format="JPEG", quality=90)

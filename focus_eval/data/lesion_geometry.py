"""Lesion geometry from segmentation masks and landmark centres: mask reading, connected components, the optic
disc centre, the fovea side and laterality, lesion sectors around the disc, and the size and count bins.

Every rule is stated in docs/TASKS.md ("Lesion geometry"). Points are (x, y) in pixels of the mask (or image)
they come from, x to the right and y downwards, so "superior" is the upper half of an upright photograph."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping

import numpy as np
from scipy import ndimage

from focus_eval.data.files import notice, printable
from focus_eval.data.images import image_size, open_image
from focus_eval.errors import DataError

Point = tuple[float, float]

# 8-connectivity: pixels that touch at a corner belong to one lesion (a thin diagonal haemorrhage stays one).
CONNECTIVITY = np.ones((3, 3), dtype=bool)
SECTORS = ("nasal", "temporal", "superior", "inferior")
NOT_OBSERVED = "not_observed"
# Size bins by the lesion's total area as a fraction of the image's pixels: (name, upper bound, exclusive).
SIZE_BINS = (("none", 0.0), ("small", 0.001), ("medium", 0.01), ("large", float("inf")))
# Count bins by the number of connected components: (name, largest count in the bin).
COUNT_BINS = (("none", 0), ("1-5", 5), ("6-20", 20), ("over_20", None))


# A binary mask (no more than BINARY_LEVELS non-zero levels: a mask's one marking level, or Retinal-Lesions' 255
# and 127) is read as it is: any non-zero pixel is lesion, whatever the level (0/1 masks included). A mask with
# more levels is no release mask but a JPEG or resized copy of one: a pixel is lesion where its brightest colour
# channel reaches MASK_LEVEL, which the few levels of noise such a copy leaves around its edges do not, and the load
# warns, naming the mask. No smallest lesion size: a microaneurysm is a few pixels.
BINARY_LEVELS = 2
MASK_LEVEL = 64
GREY_MASKS = ("{n} lesion mask(s) are not binary (e.g. {example}), as a JPEG or resized copy of a mask is: read with "
              f"the documented threshold (lesion where the brightest colour channel is at least {MASK_LEVEL} of 255), "
              "which moves lesion edges and so size bins; the release's own mask files are binary")


def read_mask(path: Path | bytes) -> np.ndarray:
    """A lesion mask file (a path, or its bytes) as a boolean array: any non-zero pixel is lesion in a binary
    mask; in a mask with grey levels (``BINARY_LEVELS``) a pixel whose brightest colour channel is at least
    MASK_LEVEL (of 255, or the same share of a 16-bit scale) is, and the load is warned. The file is decoded as
    its image is (``open_image``: an EXIF orientation tag is applied), in its stored mode."""
    try:
        image = open_image(path, keep_mode=True)
    except DataError as exc:
        reason = str(exc).removeprefix(f"{exc.file}: ")
        raise DataError(f"cannot read lesion mask: {reason}", file=exc.file) from None
    if image.mode == "P":
        image = image.convert("RGB")
    array = np.asarray(image)
    if array.dtype == bool:
        return array
    if array.ndim == 3:
        array = array[..., :3].max(axis=2)  # an alpha channel says nothing about the lesion
    levels = _non_zero_levels(array)
    if levels <= BINARY_LEVELS:
        return array > 0
    notice(GREY_MASKS, f"{printable(path) if not isinstance(path, bytes) else 'a mask'}: {levels} grey levels")
    if array.dtype != np.uint8:  # 16-bit or float masks: the level as a share of the type's full scale
        top = np.iinfo(array.dtype).max if np.issubdtype(array.dtype, np.integer) else 1.0
        return array >= MASK_LEVEL / 255 * top
    return array >= MASK_LEVEL


def _non_zero_levels(array: np.ndarray) -> int:
    """How many distinct non-zero values a mask holds (a count per value for integer masks: no sort)."""
    if np.issubdtype(array.dtype, np.integer) and array.size and 0 <= array.min() and array.max() < 2 ** 16:
        return int(np.count_nonzero(np.bincount(array.ravel())[1:]))
    return int(np.unique(array[array != 0]).size)


def read_masks(paths: Mapping[str, Path | None], shape: tuple[int, int]) -> dict[str, np.ndarray]:
    """Lesion -> mask of one image: each file read, and an empty ``shape`` (rows, columns) mask for a lesion
    whose file the release leaves out because the image has none of it (``None``)."""
    masks = {}
    for lesion, path in paths.items():
        mask = read_mask(path) if path is not None else np.zeros(shape, dtype=bool)
        if mask.shape != tuple(shape):
            raise DataError(f"the {lesion} mask is {mask.shape[1]} x {mask.shape[0]} pixels, its image "
                            f"{shape[1]} x {shape[0]}; a mask must match its image", file=str(path))
        masks[lesion] = mask
    return masks


def image_shape(path: Path) -> tuple[int, int]:
    """(rows, columns) of an image file as ``open_image`` decodes it (EXIF orientation applied), read from its
    header."""
    width, height = image_size(path)
    return height, width


def components(mask: np.ndarray) -> tuple[np.ndarray, int]:
    """(label image, number of lesions): the mask's connected components under ``CONNECTIVITY``."""
    labels, count = ndimage.label(np.asarray(mask, dtype=bool), structure=CONNECTIVITY)
    return labels, int(count)


def centroid(mask: np.ndarray) -> Point | None:
    """The (x, y) centre of mass of a mask's pixels (an optic disc mask gives the disc centre); None if empty."""
    ys, xs = np.nonzero(np.asarray(mask, dtype=bool))
    if not len(xs):
        return None
    return float(xs.mean()), float(ys.mean())


def in_frame(point: Point, size: tuple[int, int]) -> bool:
    """Whether a centre lies in the frame of an image of ``size`` (width, height): both coordinates finite,
    0 <= x <= width and 0 <= y <= height (pixel edges: (0, 0) is the image's top-left corner)."""
    x, y = point
    return math.isfinite(x) and math.isfinite(y) and 0 <= x <= size[0] and 0 <= y <= size[1]


def fovea_side(disc: Point | None, fovea: Point | None) -> str | None:
    """The side of the image ("left"/"right") on which the fovea lies relative to the disc centre; None
    without both centres or when they share a column."""
    if disc is None or fovea is None or fovea[0] == disc[0]:
        return None
    return "left" if fovea[0] < disc[0] else "right"


def laterality(disc: Point | None, fovea: Point | None) -> str | None:
    """The eye from the two centres: in a fundus photograph of a right eye the disc lies to the right of the
    fovea (the fovea on its left), of a left eye to the left."""
    side = fovea_side(disc, fovea)
    return None if side is None else {"left": "right", "right": "left"}[side]


def nasal_side(disc: Point | None, fovea: Point | None = None, width: float | None = None) -> str | None:
    """The side of the image ("left"/"right") that is nasal of the disc: away from the fovea, or without a
    fovea away from the image centre (``width`` / 2; the disc lies nasal of a macula-centred image's
    centre). None when it cannot be told."""
    if disc is None:
        return None
    if fovea is not None:
        side = fovea_side(disc, fovea)
    elif width is not None and disc[0] != width / 2:
        side = "left" if disc[0] > width / 2 else "right"  # the side the image centre, near the fovea, is on
    else:
        return None
    return None if side is None else {"left": "right", "right": "left"}[side]


def sector(point: Point, disc: Point, nasal: str) -> str | None:
    """The sector of ``point`` around the disc centre by its dominant axis: horizontal (nasal or temporal)
    when the horizontal offset is at least the vertical one, else superior (above) or inferior (below);
    None for a point on the disc centre itself."""
    dx, dy = point[0] - disc[0], point[1] - disc[1]
    if dx == 0 and dy == 0:
        return None
    if abs(dx) >= abs(dy):
        return "nasal" if (dx > 0) == (nasal == "right") else "temporal"
    return "superior" if dy < 0 else "inferior"


def sectors(mask: np.ndarray, disc: Point | None, nasal: str | None) -> tuple[str, ...] | None:
    """The sectors (in ``SECTORS`` order) holding a lesion's components, each placed by its centroid;
    ``(NOT_OBSERVED,)`` for an empty mask; None (no label) without a disc centre or a nasal side, or when
    every component sits on the disc centre."""
    if disc is None or nasal is None:  # no labelling needed
        return None
    return _sectors(*components(mask), disc, nasal)


def _sectors(labels: np.ndarray, count: int, disc: Point | None, nasal: str | None) -> tuple[str, ...] | None:
    """``sectors`` of a lesion's labelled components (``components``)."""
    if disc is None or nasal is None:
        return None
    if not count:
        return (NOT_OBSERVED,)
    centres = ndimage.center_of_mass(np.ones(labels.shape), labels, range(1, count + 1))
    found = {sector((float(x), float(y)), disc, nasal) for y, x in centres} - {None}
    return tuple(s for s in SECTORS if s in found) or None


def size_bin(mask: np.ndarray) -> str:
    """The size bin of a lesion's total area as a fraction of all the mask's pixels (``SIZE_BINS``)."""
    mask = np.asarray(mask, dtype=bool)
    fraction = float(mask.sum()) / mask.size if mask.size else 0.0
    if fraction == 0:
        return SIZE_BINS[0][0]
    return next(name for name, bound in SIZE_BINS[1:] if fraction < bound)


def count_bin(count: int) -> str:
    """The count bin of a number of lesions (``COUNT_BINS``)."""
    return next(name for name, top in COUNT_BINS if top is None or count <= top)


def image_lesion_fields(image: Path, mask_paths: Mapping[str, Path | None], disc: Point | None = None,
                        fovea: Point | None = None) -> dict[str, dict]:
    """``lesion_fields`` of one image file from its mask files (``read_masks``: None for a left-out mask)."""
    return lesion_fields(read_masks(mask_paths, image_shape(image)), disc=disc, fovea=fovea)


def lesion_fields(masks: Mapping[str, np.ndarray], disc: Point | None = None, fovea: Point | None = None,
                  ) -> dict[str, dict]:
    """The record fields of one image from its lesion masks (lesion -> mask; a lesion the image has no
    annotation for is simply not in ``masks``): findings (1/0), lesion_size, lesion_count and, with a disc
    centre, lesion_quadrants (the nasal side from the fovea, else from the mask width)."""
    fields: dict[str, dict] = {"findings": {}, "lesion_quadrants": {}, "lesion_size": {}, "lesion_count": {}}
    for lesion, mask in masks.items():
        labels, count = components(mask)
        fields["findings"][lesion] = int(count > 0)
        fields["lesion_size"][lesion] = size_bin(mask)
        fields["lesion_count"][lesion] = count_bin(count)
        where = _sectors(labels, count, disc, nasal_side(disc, fovea, np.asarray(mask).shape[1]))
        if where is not None:
            fields["lesion_quadrants"][lesion] = where
    return fields


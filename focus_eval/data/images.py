"""Image decoding: ``open_image``, the one function every path decodes an image file with (JPEG draft decoding,
EXIF orientation, one conversion to RGB), and the fundus steps after it (a crop of the black border around the
fundus, resize)."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps

from focus_eval.errors import DataError

# The border mask is computed on a copy no larger than this, which keeps the crop cheap at any resolution.
MASK_SIDE = 128
# A pixel belongs to the fundus when its luminance exceeds this fraction of the bright end of the image.
MASK_FRACTION = 0.08
MASK_FLOOR = 8.0
# A row or column counts as fundus when its mask count reaches this fraction of the fullest row or column;
# the longest run of such rows (columns) is the fundus, so specks and burnt-in text beside it are ignored.
LINE_FRACTION = 0.1
# The decoding rule's version: part of every cache key and unit fingerprint made from decoded pixels, so that a
# change to ``open_image`` (2: EXIF orientation applied) rebuilds them instead of reusing pixels decoded the old way.
DECODE_VERSION = 2
# EXIF orientation values that swap width and height (a quarter turn, with or without a mirror).
_QUARTER_TURNS = frozenset({5, 6, 7, 8})


def open_image(source: str | os.PathLike | bytes, draft: int | None = None, keep_mode: bool = False) -> Image.Image:
    """Decode an image file (a path, or its bytes) as every viewer shows it: a JPEG decoded at the smallest
    scale still covering ``draft`` x ``draft`` when a draft size is given, then turned and mirrored as its EXIF
    orientation tag says (a phone picture stored sideways, a mirrored eye), then converted to RGB (16-bit
    scaled to 8 bits, transparency over black); ``keep_mode`` keeps the stored mode instead (lesion masks).

    A missing, corrupt or truncated file raises DataError naming the file."""
    name = None if isinstance(source, (bytes, bytearray, memoryview)) else str(source)
    try:
        with Image.open(io.BytesIO(source) if name is None else source) as image:
            if draft is not None and image.format == "JPEG":
                # decoding at a reduced JPEG scale first is much faster; the orientation is applied after it
                image.draft("RGB", (draft, draft))
            image.load()
            ImageOps.exif_transpose(image, in_place=True)
            return image if keep_mode else _to_rgb(image)
    except FileNotFoundError:
        raise DataError("image file not found", file=name) from None
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        raise DataError(f"cannot decode image: {exc}", file=name) from None


def image_size(path: str | os.PathLike) -> tuple[int, int]:
    """(width, height) of an image file as ``open_image`` decodes it (EXIF quarter turns swap them), read from
    its header (a PNG is decoded to find out, as its EXIF chunk may follow the pixels)."""
    try:
        with Image.open(path) as image:
            width, height = image.size
            turned = image.getexif().get(0x0112, 1) in _QUARTER_TURNS
    except FileNotFoundError:
        raise DataError("image file not found", file=str(path)) from None
    except (OSError, SyntaxError, ValueError) as exc:
        raise DataError(f"cannot read image: {exc}", file=str(path)) from None
    return (height, width) if turned else (width, height)


def open_fundus(source: str | Path | bytes, size: int | None = None, crop: bool = True) -> Image.Image:
    """Decode an image (a path, or a file's bytes) with ``open_image``, crop it to a square around the fundus
    (black border removed, padded with black where the fundus is cut off) and resize it to ``size`` x ``size``
    when a size is given.

    A corrupt or truncated file raises DataError naming the file.
    """
    rgb = open_image(source, draft=size)
    if crop:
        rgb = rgb.crop(fundus_box(rgb))
    if size is not None and rgb.size != (size, size):
        if crop:
            rgb = rgb.resize((size, size), Image.Resampling.BICUBIC, reducing_gap=2.0)
        else:
            rgb = rgb.resize((size, size), Image.Resampling.BICUBIC)
    return rgb


def _to_rgb(image: Image.Image) -> Image.Image:
    if image.mode == "RGB":
        return image
    if image.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        # 16-bit and float images: scale to 8 bits instead of clipping at 255.
        array = np.asarray(image, dtype=np.float32)
        top = float(array.max()) or 1.0
        image = Image.fromarray(np.clip(array * (255.0 / top), 0, 255).astype(np.uint8))
    if image.mode in ("RGBA", "LA", "P", "PA"):
        image = image.convert("RGBA")
        background = Image.new("RGBA", image.size, (0, 0, 0, 255))
        image = Image.alpha_composite(background, image)
    return image.convert("RGB")


def fundus_box(image: Image.Image) -> tuple[int, int, int, int]:
    """A square box (left, top, right, bottom) around the fundus; it may extend past the image edges, where
    PIL's crop pads with black. The whole image (squared) when no border is found."""
    width, height = image.size
    factor = max(width, height) // MASK_SIDE
    small = image.reduce(factor) if factor > 1 else image
    gray = small.convert("L")
    lum = np.asarray(gray)
    fx, fy = width / lum.shape[1], height / lum.shape[0]
    mask = lum > max(MASK_FLOOR, MASK_FRACTION * histogram_percentile(gray.histogram(), 99))
    rows, cols = _longest_run(np.count_nonzero(mask, axis=1)), _longest_run(np.count_nonzero(mask, axis=0))
    if rows is None or cols is None:
        left, top, right, bottom = 0.0, 0.0, float(width), float(height)
    else:
        left, right = cols[0] * fx, cols[1] * fx
        top, bottom = rows[0] * fy, rows[1] * fy
    side = max(right - left, bottom - top)
    cx, cy = (left + right) / 2, (top + bottom) / 2
    x0, y0 = int(round(cx - side / 2)), int(round(cy - side / 2))
    side_px = max(1, int(round(side)))
    return (x0, y0, x0 + side_px, y0 + side_px)


def histogram_percentile(histogram: list[int], q: float) -> float:
    """``np.percentile(values, q)`` (linear interpolation) of 8-bit values given their 256-bin histogram: the
    same order statistics without sorting the pixels (the sort was most of the crop's cost on small images)."""
    counts = np.cumsum(histogram)
    position = (counts[-1] - 1) * q / 100.0
    below = int(np.floor(position))
    low = int(np.searchsorted(counts, below, side="right"))
    high = int(np.searchsorted(counts, min(below + 1, counts[-1] - 1), side="right"))
    return float(low + (high - low) * (position - below))


def _longest_run(counts: np.ndarray) -> tuple[int, int] | None:
    """(start, stop) of the longest run of lines whose count reaches LINE_FRACTION of the largest count."""
    top = counts.max() if counts.size else 0
    if top == 0:
        return None
    on = np.concatenate(([0], (counts >= LINE_FRACTION * top).astype(np.int8), [0]))
    edges = np.flatnonzero(np.diff(on))
    starts, stops = edges[0::2], edges[1::2]
    best = int(np.argmax(stops - starts))
    return int(starts[best]), int(stops[best])

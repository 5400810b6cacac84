"""Small procedural pictures of the two non-fundus-photograph modalities the miniature layouts need: an OCT
B-scan (a greyscale speckled cross-section whose retina is a stack of bright and dark layers along a curve with
a foveal dip) and an ultra-wide-field image (a wide, green-red pseudo-colour retina with a small disc, vessels
and eyelash shadows at the top and bottom edges). Deterministic for a seed, fast, and plain enough for
tests to tell apart from a colour fundus photograph by their statistics."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

# (offset below the inner retinal surface in pixels, thickness, brightness 0-1): nerve fibre layer, plexiform
# and nuclear layers, photoreceptor band, retinal pigment epithelium; the gaps between them stay dark.
OCT_LAYERS = ((0, 3, 0.85), (5, 3, 0.55), (10, 4, 0.35), (16, 2, 0.7), (19, 3, 1.0))


def oct_bscan(seed: int, width: int = 128, height: int = 64) -> Image.Image:
    """A greyscale B-scan ("L" mode): dark vitreous above, a layered band that dips at the fovea and follows
    a gentle curve, a faint choroid below, multiplicative speckle over everything."""
    rng = np.random.default_rng(seed)
    x = np.arange(width)
    centre = width * rng.uniform(0.4, 0.6)
    curve = 0.25 * height + rng.uniform(-3, 3) + 6e-4 * (x - width / 2) ** 2
    dip = rng.uniform(3, 6) * np.exp(-((x - centre) / (0.08 * width)) ** 2)
    rows = np.arange(height)[:, None]
    picture = np.full((height, width), 0.05)
    for offset, thickness, brightness in OCT_LAYERS:
        # the foveal pit deepens the inner layers; the outer ones (photoreceptors, pigment epithelium) stay level
        depth = rows - (curve + dip * (1 - offset / 20))[None, :]
        band = (depth >= offset) & (depth < offset + thickness)
        picture = np.where(band, brightness, picture)
    depth = rows - curve[None, :]
    choroid = (depth >= 22) & (depth < 34)
    picture = np.where(choroid, 0.3 * np.exp(-(depth - 22) / 8), picture)
    speckle = rng.gamma(shape=2.0, scale=0.5, size=picture.shape)
    values = np.clip(picture * speckle * 255, 0, 255).astype(np.uint8)
    return Image.fromarray(values, mode="L").filter(ImageFilter.GaussianBlur(0.4))


def uwf_image(seed: int, width: int = 144, height: int = 96) -> Image.Image:
    """An RGB ultra-wide-field picture: the retina fills a wide ellipse of nearly the whole frame in green-red
    pseudo-colour, with a small bright disc near the centre, dark wavy vessels leaving it, and dark eyelash
    shadows along the top and bottom edges."""
    rng = np.random.default_rng(seed)
    picture = Image.new("RGB", (width, height), (8, 10, 6))
    draw = ImageDraw.Draw(picture)
    draw.ellipse((-0.04 * width, 0.02 * height, 1.04 * width, 0.98 * height),
                 fill=(int(rng.integers(150, 190)), int(rng.integers(120, 150)), 40))
    cx, cy = width * rng.uniform(0.42, 0.58), height * rng.uniform(0.45, 0.55)
    for angle in np.linspace(0, 2 * np.pi, 9)[:-1] + rng.uniform(-0.3, 0.3, 8):  # vessels leaving the disc
        steps = np.arange(1, 12)[:, None]
        bend = np.cumsum(rng.normal(0, 0.12, 11))
        xs = cx + steps[:, 0] * 0.045 * width * np.cos(angle + bend)
        ys = cy + steps[:, 0] * 0.05 * height * np.sin(angle + bend)
        draw.line([(cx, cy)] + list(zip(xs.tolist(), ys.tolist())), fill=(110, 45, 20), width=1)
    r = 0.025 * width
    draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=(235, 225, 150))
    for edge in (0.0, 1.0):  # eyelashes: dark strokes reaching into the frame from the top and bottom
        for _ in range(12):
            x0 = rng.uniform(0, width)
            y0 = edge * height
            y1 = y0 + (1 - 2 * edge) * rng.uniform(0.08, 0.2) * height
            draw.line((x0, y0, x0 + rng.uniform(-6, 6), y1), fill=(20, 18, 12), width=2)
    return picture.filter(ImageFilter.GaussianBlur(0.6))

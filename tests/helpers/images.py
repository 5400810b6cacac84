"""Random pictures for the model tests."""

from __future__ import annotations

import numpy as np
from PIL import Image


def noise_images(n: int, seed: int = 0, sizes=((64, 64),)) -> list[Image.Image]:
    """``n`` RGB pictures of uniform noise from ``numpy.random.default_rng(seed)``, the i-th of size
    ``sizes[i % len(sizes)]`` (width, height)."""
    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)) for w, h in
            (sizes[i % len(sizes)] for i in range(n))]

"""The pixel grids and anatomy of one synthetic fundus being rendered, shared by the renderer and the lesion
painter."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class Scene:
    """Pixel grids and anatomy of one image being rendered (coordinates: image x, y in [-1, 1]; anatomy
    u, v are image coordinates divided by the device zoom, so anatomy sizes are device independent)."""

    width: int
    zoom: float
    field_radius: float
    x: np.ndarray
    y: np.ndarray
    u: np.ndarray
    v: np.ndarray
    radius: np.ndarray
    side: int
    fovea: tuple[float, float]
    disc: tuple[float, float]
    disc_radius: float
    illumination: np.ndarray | None = None
    cup: tuple[slice, slice, np.ndarray] | None = None

    @property
    def scale(self) -> float:
        """Pixels per anatomy unit."""
        return self.zoom * self.width / 2

    def to_px(self, u: float, v: float) -> tuple[float, float]:
        return ((u * self.zoom + 1) * self.width / 2, (v * self.zoom + 1) * self.width / 2)

    def to_px_array(self, points: np.ndarray) -> np.ndarray:
        return (np.asarray(points) * self.zoom + 1) * self.width / 2

    def visible(self, u: float, v: float, margin: float = 0.92) -> bool:
        return math.hypot(u * self.zoom, v * self.zoom) < self.field_radius * margin

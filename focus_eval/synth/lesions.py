"""Diabetic-retinopathy lesions for the synthetic fundus, by ICDR grade: microaneurysms, haemorrhages, hard
exudates, cotton-wool spots, new vessels, and the exudates near the fovea that mark macular edema."""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from focus_eval.synth.scene import Scene

# Lesion counts (low, high) per ICDR grade; severe and proliferative eyes show more of everything.
GRADE_LESIONS: dict[int, dict[str, tuple[int, int]]] = {
    0: {},
    1: {"microaneurysm": (8, 16), "dot_haemorrhage": (0, 2)},
    2: {"microaneurysm": (14, 24), "dot_haemorrhage": (5, 10), "blot_haemorrhage": (2, 5),
        "exudate_cluster": (2, 4), "cotton_wool": (0, 2)},
    3: {"microaneurysm": (18, 30), "dot_haemorrhage": (10, 16), "blot_haemorrhage": (8, 14),
        "flame_haemorrhage": (3, 7), "exudate_cluster": (3, 6), "cotton_wool": (3, 6)},
    4: {"microaneurysm": (18, 30), "dot_haemorrhage": (10, 16), "blot_haemorrhage": (8, 14),
        "flame_haemorrhage": (3, 7), "exudate_cluster": (3, 6), "cotton_wool": (3, 6),
        "new_vessels": (1, 3), "preretinal_haemorrhage": (0, 1)},
}

LESION_KINDS = ("microaneurysm", "dot_haemorrhage", "blot_haemorrhage", "flame_haemorrhage", "exudate_cluster",
                "cotton_wool", "new_vessels", "preretinal_haemorrhage")
HAEMORRHAGES = ("dot_haemorrhage", "blot_haemorrhage", "flame_haemorrhage", "preretinal_haemorrhage")

_RED_TINT = np.array([0.42, 0.12, 0.14], np.float32)
_EXUDATE = np.array([1.0, 0.88, 0.42], np.float32)
_COTTON_WOOL = np.array([0.96, 0.92, 0.84], np.float32)


class _Masks:
    """Three lesion layers drawn at pixel resolution: red (blood), exudate (yellow), cotton wool (white)."""

    def __init__(self, width: int):
        self.layers = {name: Image.new("L", (width, width)) for name in ("red", "exudate", "cotton")}
        self.draw = {name: ImageDraw.Draw(layer) for name, layer in self.layers.items()}

    def composite(self, rgb: np.ndarray, layer: str, blur: float, alpha: float, colour: np.ndarray,
                  light: np.ndarray | None) -> None:
        """Blend ``layer`` into ``rgb`` in place, only inside the layer's bounding box: red lesions darken
        (``light`` None), bright lesions replace the colour, scaled by the local illumination."""
        box = self.layers[layer].getbbox()
        if box is None:
            return
        pad = int(math.ceil(3 * blur)) + 1
        w = rgb.shape[1]
        x0, y0, x1, y1 = max(0, box[0] - pad), max(0, box[1] - pad), min(w, box[2] + pad), min(w, box[3] + pad)
        crop = self.layers[layer].crop((x0, y0, x1, y1))
        if blur > 0:
            crop = crop.filter(ImageFilter.BoxBlur(blur))
        m = np.asarray(crop, np.float32)[..., None] * (alpha / 255)
        region = rgb[y0:y1, x0:x1]
        if light is None:
            factor = m * (colour - 1)
            factor += 1
            region *= factor
        else:
            region -= m * (region - colour * light[y0:y1, x0:x1, None])

    def blob(self, layer: str, centre: tuple[float, float], rx: float, ry: float | None = None) -> None:
        ry = rx if ry is None else ry
        cx, cy = centre
        self.draw[layer].ellipse([cx - rx, cy - ry, cx + rx, cy + ry], fill=255)


def draw(rgb: np.ndarray, scene: Scene, grade: int, dme: bool, rng: np.random.Generator,
         counts: Mapping[str, int] | None = None, contrast: float = 1.0) -> np.ndarray:
    """Paint the lesions of ``grade`` (and macular-edema exudates if ``dme``) onto ``rgb``: ``counts`` lesions
    of each kind where given (the labels of a synthetic dataset say what was drawn), else counts drawn from
    ``GRADE_LESIONS``; ``contrast`` (0-1] scales every lesion's opacity (subtle lesions are hard to see)."""
    nothing = grade == 0 if counts is None else not any(counts.values())
    if nothing and not dme:
        return rgb
    unknown = sorted(set(counts or {}) - set(_LESION_PAINTERS))
    if unknown:
        raise ValueError(f"unknown lesion kind(s) {unknown}; known: {sorted(_LESION_PAINTERS)}")
    masks = _Masks(scene.width)
    if counts is None:  # each count drawn just before its lesions are painted (one random stream)
        for kind, (low, high) in GRADE_LESIONS[grade].items():
            for _ in range(int(rng.integers(low, high + 1))):
                _LESION_PAINTERS[kind](masks, scene, rng)
    for kind, count in (counts or {}).items():
        for _ in range(int(count)):
            _LESION_PAINTERS[kind](masks, scene, rng)
    if dme:
        _macular_exudates(masks, scene, rng)
    px = scene.width / 256
    rgb = np.array(rgb, np.float32)
    light = np.clip(scene.illumination, 0.45, 1.1)
    masks.composite(rgb, "red", 0.5 * px, 0.9 * contrast, _RED_TINT, None)
    masks.composite(rgb, "exudate", 0.4 * px, 0.92 * contrast, _EXUDATE, light)
    masks.composite(rgb, "cotton", 1.6 * px, 0.75 * contrast, _COTTON_WOOL, light)
    return rgb


def _place(scene: Scene, rng: np.random.Generator, reach: float = 0.72, tries: int = 30) -> tuple[float, float]:
    """A point of the posterior pole (denser near the fovea), visible and off the optic disc."""
    fu, fv = scene.fovea
    du, dv = scene.disc
    for _ in range(tries):
        radius = reach * math.sqrt(rng.random()) * (0.35 + 0.65 * rng.random())
        angle = rng.uniform(0, 2 * math.pi)
        u, v = fu + radius * math.cos(angle), fv + radius * math.sin(angle)
        if scene.visible(u, v) and math.hypot(u - du, v - dv) > 1.7 * scene.disc_radius:
            return u, v
    return fu + 0.15, fv + 0.15


def _microaneurysm(masks: _Masks, scene: Scene, rng: np.random.Generator) -> None:
    masks.blob("red", scene.to_px(*_place(scene, rng, 0.6)), max(0.8, rng.uniform(0.010, 0.014) * scene.scale))


def _dot_haemorrhage(masks: _Masks, scene: Scene, rng: np.random.Generator) -> None:
    masks.blob("red", scene.to_px(*_place(scene, rng)), max(1.0, rng.uniform(0.016, 0.026) * scene.scale))


def _blot_haemorrhage(masks: _Masks, scene: Scene, rng: np.random.Generator) -> None:
    cx, cy = scene.to_px(*_place(scene, rng))
    size = rng.uniform(0.028, 0.048) * scene.scale
    for _ in range(3):  # irregular outline from overlapping ellipses
        ox, oy = rng.normal(0, 0.35 * size, 2)
        masks.blob("red", (cx + ox, cy + oy), size * rng.uniform(0.6, 1.0), size * rng.uniform(0.6, 1.0))


def _flame_haemorrhage(masks: _Masks, scene: Scene, rng: np.random.Generator) -> None:
    u, v = _place(scene, rng, 0.55)
    # nerve-fibre-layer bleeds are streaks pointing at the disc
    angle = math.atan2(v - scene.disc[1], u - scene.disc[0])
    half = rng.uniform(0.03, 0.05)
    ends = [scene.to_px(u - half * math.cos(angle), v - half * math.sin(angle)),
            scene.to_px(u + half * math.cos(angle), v + half * math.sin(angle))]
    masks.draw["red"].line(ends, fill=255, width=max(1, round(rng.uniform(0.014, 0.022) * scene.scale)))


def _exudate_cluster(masks: _Masks, scene: Scene, rng: np.random.Generator,
                     centre: tuple[float, float] | None = None) -> None:
    u, v = centre if centre is not None else _place(scene, rng, 0.6)
    for _ in range(int(rng.integers(3, 7))):
        du, dv = rng.normal(0, 0.025, 2)
        if scene.visible(u + du, v + dv):
            masks.blob("exudate", scene.to_px(u + du, v + dv), max(0.8, rng.uniform(0.008, 0.017) * scene.scale))


def _cotton_wool(masks: _Masks, scene: Scene, rng: np.random.Generator) -> None:
    u, v = _place(scene, rng, 0.55)  # nerve-fibre-layer infarcts of the posterior pole
    size = rng.uniform(0.03, 0.05) * scene.scale
    masks.blob("cotton", scene.to_px(u, v), size, size * rng.uniform(0.6, 0.9))


def _new_vessels(masks: _Masks, scene: Scene, rng: np.random.Generator) -> None:
    """A tangle of fine loops on the disc or along an arcade (NVD / NVE)."""
    if rng.random() < 0.5:
        u, v = scene.disc
    else:
        u, v = scene.disc[0] - scene.side * rng.uniform(0.15, 0.35), scene.disc[1] + rng.choice([-1, 1]) * 0.28
    width = max(1, round(0.006 * scene.scale))
    for _ in range(int(rng.integers(6, 10))):
        angles = np.cumsum(rng.normal(0, 0.9, 8)) + rng.uniform(0, 2 * math.pi)
        steps = np.stack([np.cos(angles), np.sin(angles)], axis=1) * 0.014
        points = np.cumsum(steps, axis=0) + (u, v)
        masks.draw["red"].line([scene.to_px(a, b) for a, b in points], fill=255, width=width, joint="curve")
    if rng.random() < 0.6:  # fibrous tissue accompanying the new vessels
        masks.blob("cotton", scene.to_px(u, v), 0.05 * scene.scale, 0.04 * scene.scale)


def _preretinal_haemorrhage(masks: _Masks, scene: Scene, rng: np.random.Generator) -> None:
    """Boat-shaped: blood settles, leaving a flat upper edge."""
    u, v = _place(scene, rng, 0.5)
    cx, cy = scene.to_px(u, v)
    r = rng.uniform(0.07, 0.1) * scene.scale
    masks.draw["red"].chord([cx - r, cy - r, cx + r, cy + r], 0, 180, fill=255)


def _macular_exudates(masks: _Masks, scene: Scene, rng: np.random.Generator) -> None:
    """Hard exudates within about one disc diameter of the fovea, partly as a circinate ring."""
    fu, fv = scene.fovea
    ring_u, ring_v = fu + rng.normal(0, 0.04), fv + rng.normal(0, 0.04)
    ring = rng.uniform(0.07, 0.11)
    for angle in rng.uniform(0, 2 * math.pi, int(rng.integers(7, 13))):
        jitter = rng.normal(0, 0.012)
        masks.blob("exudate", scene.to_px(ring_u + (ring + jitter) * math.cos(angle),
                                          ring_v + (ring + jitter) * math.sin(angle)),
                   max(0.8, rng.uniform(0.009, 0.016) * scene.scale))
    for _ in range(int(rng.integers(2, 4))):
        angle, radius = rng.uniform(0, 2 * math.pi), rng.uniform(0.03, 0.16)
        _exudate_cluster(masks, scene, rng, (fu + radius * math.cos(angle), fv + radius * math.sin(angle)))


_LESION_PAINTERS = {
    "microaneurysm": _microaneurysm,
    "dot_haemorrhage": _dot_haemorrhage,
    "blot_haemorrhage": _blot_haemorrhage,
    "flame_haemorrhage": _flame_haemorrhage,
    "exudate_cluster": _exudate_cluster,
    "cotton_wool": _cotton_wool,
    "new_vessels": _new_vessels,
    "preretinal_haemorrhage": _preretinal_haemorrhage,
}

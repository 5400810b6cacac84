"""Fundus-specific image corruptions, applied at decode time (``--corruptions KIND[:SEVERITY],...``).

Each corruption is applied to the decoded fundus square (after ``open_fundus``: the prepared copy or the raw
file, cropped and resized), so a run reads the same clean pixels from either source and corrupts them the same
way; sizes are fractions of the image side, so they mean the same at every decode size. Every random choice
(the direction of an exposure error or a rotation, the centre of uneven illumination) comes from a generator
seeded by the image id, the kind and the severity: the same image is corrupted the same way in every run and
every process. The runner corrupts test images only (a probe is fitted on clean training images).
docs/ROBUSTNESS.md gives each kind's parameters and the acquisition artefact it stands for."""

from __future__ import annotations

import argparse
import hashlib
import io
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageFilter

from focus_eval import validators
from focus_eval.errors import FocusError

# the kinds and severities (validators.py: --corruptions is checked where the run options are parsed)
KINDS, SEVERITIES = validators.CORRUPTION_KINDS, validators.SEVERITIES
# kind -> the parameter at severities 1, 2, 3
PARAMETERS = {
    "blur": (0.006, 0.015, 0.03),  # Gaussian blur radius, a fraction of the image side
    "jpeg": (30, 15, 7),  # JPEG quality of one re-compression
    "illumination": (0.35, 0.55, 0.75),  # darkening at the far edge of an off-centre radial falloff
    "exposure": (1.35, 1.7, 2.2),  # brightness gain (over-exposure) or its inverse (under-exposure)
    "rotation": (4.0, 8.0, 15.0),  # degrees, either direction
}


@dataclass(frozen=True)
class Corruption:
    kind: str
    severity: int

    @property
    def label(self) -> str:
        """``blur:3``: how results lines and fingerprints name it."""
        return f"{self.kind}:{self.severity}"

    @property
    def slug(self) -> str:
        """``blur3``: how task names and cache folders name it."""
        return f"{self.kind}{self.severity}"


def parse(spec: str | list | tuple | None) -> list[Corruption]:
    """``blur:3,jpeg`` -> corruptions; a kind without a severity stands for all three severities. The syntax is
    ``validators.corruption_items``'s (an empty item or severity is an error)."""
    if spec is None:
        return []
    text = spec if isinstance(spec, str) else ",".join(str(i) for i in spec)
    try:
        items = validators.corruption_items(text)
    except argparse.ArgumentTypeError as exc:
        raise FocusError(f"--corruptions: {exc}") from None
    out: list[Corruption] = []
    for kind, severity in items:
        for s in [severity] if severity else SEVERITIES:
            if Corruption(kind, s) not in out:
                out.append(Corruption(kind, s))
    return out


def from_label(label: str) -> Corruption:
    (corruption,) = parse(label)
    return corruption


def rng(image_id: str, corruption: Corruption) -> np.random.Generator:
    digest = hashlib.sha256(f"{image_id}|{corruption.label}".encode("utf-8")).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def apply(image: Image.Image, image_id: str, label: str | None) -> Image.Image:
    """``image`` (RGB) with the corruption named ``label`` applied, seeded by ``image_id``; None: unchanged."""
    if not label:
        return image
    c = from_label(label)
    value, gen = PARAMETERS[c.kind][c.severity - 1], rng(image_id, c)
    side = max(image.size)
    if c.kind == "blur":
        return image.filter(ImageFilter.GaussianBlur(radius=value * side))
    if c.kind == "jpeg":
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=int(value))
        return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")
    if c.kind == "rotation":
        angle = value * (1 if gen.random() < 0.5 else -1)
        return image.rotate(angle, resample=Image.Resampling.BILINEAR, fillcolor=(0, 0, 0))
    pixels = np.asarray(image, dtype=np.float32)
    if c.kind == "exposure":
        gain = value if gen.random() < 0.5 else 1.0 / value
        return Image.fromarray(np.clip(pixels * gain, 0, 255).astype(np.uint8))
    return Image.fromarray(np.clip(pixels * _falloff(image.size, value, gen)[..., None], 0, 255).astype(np.uint8))


def _falloff(size: tuple[int, int], depth: float, gen: np.random.Generator) -> np.ndarray:
    """A smooth radial gain from 1 at an off-centre bright spot to ``1 - depth`` at the farthest corner."""
    width, height = size
    cx, cy = (0.5 + gen.uniform(-0.25, 0.25)) * width, (0.5 + gen.uniform(-0.25, 0.25)) * height
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    distance = np.hypot(xs - cx, ys - cy)
    return 1.0 - depth * (distance / max(float(distance.max()), 1.0)) ** 2

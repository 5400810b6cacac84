"""Fixtures for the fine-tuning tests: a small synthetic dataset whose DR label is visible at a glance, and
sample folders of a base model and its adapters written by hand."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from focus_eval.data.readers.synth import COLUMNS, IMAGES_DIR, LABELS_FILE, MANIFEST_FILE


def easy_image(positive: bool, rng: np.random.Generator, size: int = 64) -> Image.Image:
    """A random-coloured noisy square; positives carry a bright white disc in the middle."""
    colour = rng.integers(80, 180, size=3)
    pixels = np.clip(colour + rng.normal(0, 10, size=(size, size, 3)), 0, 255).astype(np.uint8)
    image = Image.fromarray(pixels)
    if positive:
        r = size // 3
        ImageDraw.Draw(image).ellipse([size // 2 - r, size // 2 - r, size // 2 + r, size // 2 + r], fill=(255,) * 3)
    return image


def write_easy_synth(root: Path, n: int = 80, seed: int = 0, name: str = "synth_desktop") -> Path:
    """root/<name>/ in the synthetic raw layout: one image per patient, half of them DR-positive (ICDR 2)."""
    folder = Path(root) / name
    (folder / IMAGES_DIR).mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        positive = i % 2 == 1
        image = f"e{i:04d}_OD.png"
        easy_image(positive, rng).save(folder / IMAGES_DIR / image)
        rows.append({"image": image, "patient": f"e{i:04d}", "eye": "OD", "icdr": 2 if positive else 0, "dme": 0,
                     "cdr": 0.3, "glaucoma": 0, "age": 40 + i % 30, "sex": ("male", "female")[i % 2],
                     "quality": "adequate", "device": "desktop"})
    with open(folder / LABELS_FILE, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    device = "desktop" if name == "synth_desktop" else "mobile"
    (folder / MANIFEST_FILE).write_text(json.dumps({"dataset": name, "device": device, "n": n, "seed": seed,
                                                    "version": 1}), encoding="utf-8")
    return folder

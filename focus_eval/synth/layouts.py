"""Miniature copies of the real datasets' raw layouts, each written by its ``focus_eval.synth.raw_<name>``
module with synthetic fundus pictures, for reader tests and ``focus-eval synth --layout real``."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Callable

from PIL import Image

from focus_eval.data.registry import REAL_DATASETS, folder_name
from focus_eval.errors import FocusError
from focus_eval.synth.render import fixture_image, labels_checksum


def writer(name: str) -> ModuleType:
    """The raw-layout writer module of a real dataset, imported on first use."""
    if name not in REAL_DATASETS:
        raise FocusError(f"no miniature raw layout for {name!r}; known: {', '.join(REAL_DATASETS)}")
    module_name = f"focus_eval.synth.raw_{name}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise FocusError(f"the raw-layout writer for {name!r} is missing (module {module_name})") from None
    if not callable(getattr(module, "write", None)):
        raise FocusError(f"{module_name} has no write(folder, seed, image) function")
    return module


def picture_source(seed: int) -> Callable[..., Image.Image]:
    """The ``image`` callable handed to a writer: labels dict -> picture. A picture's seed is the labels' own
    ``seed`` key when present, else derived from ``seed`` and the labels, so equal labels still differ
    between layouts written with different seeds."""
    def image(labels: dict, picture_seed: int | None = None) -> Image.Image:
        if picture_seed is None and not isinstance(labels.get("seed"), int):
            picture_seed = (seed * 7919 + labels_checksum(labels)) % 2 ** 32
        return fixture_image(labels, picture_seed)
    return image


def write_layout(name: str, folder: Path, seed: int = 0) -> Path:
    """Write the miniature raw layout of ``name`` into ``folder`` (created if needed)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    writer(name).write(folder, seed, image=picture_source(seed))
    return folder


def write_all_layouts(out: Path, seed: int = 0) -> dict[str, Path]:
    """Write ``out/<folder>/`` for every real dataset (its registry name, or the folder its reader shares with
    the other parts of one download, as IDRiD's parts do); returns name -> folder."""
    return {name: write_layout(name, Path(out) / folder_name(name), seed) for name in REAL_DATASETS}

"""Building blocks of the reader tests: the pictures a miniature raw layout is written with, the folder it is
written into, and the rows a test compares a reader's records by."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from PIL import Image

# The columns most reader tests compare: image id, split, the three labels and the file's path in the release.
GRADED = ("image_id", "split", "dr", "referable_dr", "glaucoma", "relpath")


def solid(labels: dict, size: int = 32, green_blue: tuple[int, int] | None = None) -> Image.Image:
    """One flat colour per picture, red from the picture's seed; green and blue from the seed's higher bits, or
    the two fixed values ``green_blue``. Pass it (or a ``functools.partial`` of it) as a raw writer's ``image``."""
    seed = labels["seed"]
    green, blue = ((seed >> 8) % 251, (seed >> 16) % 251) if green_blue is None else green_blue
    return Image.new("RGB", (size, size), (seed % 251, green, blue))


def plain(size: int, colour: tuple[int, int, int]) -> Callable[..., Image.Image]:
    """A raw writer's ``image``: every picture ``size`` x ``size`` and of one ``colour``, whatever its labels."""

    def blank(labels: dict, seed=None) -> Image.Image:
        return Image.new("RGB", (size, size), colour)

    return blank


def raw_copy(raw: ModuleType, folder: Path, **write) -> Path:
    """``folder`` after ``raw.write(folder, **write)`` (``raw`` a ``focus_eval.synth.raw_*`` module)."""
    raw.write(folder, **write)
    return folder


def columns(*fields: str) -> Callable:
    """``rows(load)``: each record of a reader's load as the tuple of its ``fields``, in the load's order."""

    def rows(load):
        return [tuple(getattr(r, field) for field in fields) for r in load.records]

    return rows

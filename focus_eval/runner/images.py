"""Image items for the runner: where each record's pixels come from (prepared cache or raw file), and the
picklable decode-and-transform step that DataLoader workers run on them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable



@dataclass(frozen=True)
class ImageItem:
    """One image to decode: its position in the work list, its file, and the size to draft-decode to."""

    index: int
    image_id: str
    path: str
    draft_size: int | None


def source_path(record, prepared_root: Path | None, size: int | None) -> Path:
    """The prepared copy of ``record`` when a current one exists for ``size`` (whole, and made from the source
    file as it is now), else the raw file."""
    if prepared_root is not None and size:
        from focus_eval.data.prepare import open_copies

        copy = open_copies(prepared_root, record.dataset, size).current(record)
        if copy is not None:
            return copy
    return Path(record.path)


def load_image(path: str, draft_size: int | None):
    from focus_eval.data.images import open_fundus

    return open_fundus(Path(path), size=draft_size)


class DecodeAndTransform:
    """Picklable item -> pixels for DataLoader workers: the decoded PIL image when ``transform`` is None,
    else ``transform.pixels(image)`` (uint8; the adapter normalises on its device), or ``transform(image)``
    for a plain callable."""

    def __init__(self, transform: Callable | None = None):
        self.transform = transform

    def __call__(self, item: ImageItem):
        image = load_image(item.path, item.draft_size)
        if self.transform is None:
            return image
        worker_half = getattr(self.transform, "pixels", None)
        return worker_half(image) if worker_half is not None else self.transform(image)

"""Image items for the runner: where each record's pixels come from (prepared cache or raw file), and a
torch Dataset that decodes and transforms them in worker processes, turning failures into recorded errors."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
from torch.utils.data import Dataset


@dataclass(frozen=True)
class ImageItem:
    """One image to decode: its position in the work list, its file, and the size to draft-decode to."""

    index: int
    image_id: str
    path: str
    draft_size: int | None


def source_path(record, prepared_root: Path | None, size: int | None) -> Path:
    """The prepared copy of ``record`` when one exists for ``size``, else the raw file."""
    if prepared_root is not None and size:
        from focus_eval.data.prepare import prepared_path

        candidate = prepared_path(prepared_root, record.dataset, size, record)
        if candidate.is_file():
            return candidate
    return Path(record.path)


def load_image(path: str, draft_size: int | None):
    from focus_eval.data.images import open_fundus

    return open_fundus(Path(path), size=draft_size)


class ImageDataset(Dataset):
    """Decodes and transforms items; a failing image yields (index, None, reason) instead of raising."""

    def __init__(self, items: list[ImageItem], transform: Callable):
        self.items = items
        self.transform = transform

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int):
        item = self.items[i]
        try:
            image = load_image(item.path, item.draft_size)
            return item.index, self.transform(image), None
        except Exception as exc:  # noqa: BLE001 - every decode failure becomes a recorded sample error
            return item.index, None, f"{type(exc).__name__}: {exc}"


def collate(batch):
    """Stack the good tensors; keep failures aside with their reasons."""
    good = [(i, t) for i, t, err in batch if err is None]
    bad = [(i, err) for i, t, err in batch if err is not None]
    indices = [i for i, _ in good]
    pixels = torch.stack([t for _, t in good]) if good else None
    return indices, pixels, bad

"""Image items for the runner: where each record's pixels come from (prepared cache or raw file), and the
picklable decode-and-transform step that DataLoader workers run on them."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable


@dataclass(frozen=True)
class ImageItem:
    """One image to decode: its position in the work list, its file, the size to draft-decode to, and whether
    the fundus crop is still to be done (a prepared copy is cropped already and is read as it is), and the
    corruption applied after reading (``--corruptions``; ``focus_eval.data.corruptions``)."""

    index: int
    image_id: str
    path: str
    draft_size: int | None
    crop: bool = True
    corruption: str | None = None


def default_workers(processes: int = 1, most: int = 16) -> int:
    """Loader workers per process: the cores this process may use, shared among ``processes``, less one for
    the process itself (which runs the model), at most ``most``."""
    import os

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(0, min(most, cores // max(1, processes) - 1))


def decode_size(preprocessing: dict | None) -> int | None:
    """The side a preset's images are decoded (and prepared) at: its input size, or the larger size a centre
    crop is taken from (``resize_to``), so that no later step upsamples a pre-shrunk image."""
    spec = preprocessing or {}
    sides = [int(spec[key]) for key in ("size", "resize_to") if spec.get(key)]
    return max(sides) if sides else None


def source_path(record, prepared_root: Path | None, size: int | None) -> Path:
    """The prepared copy of ``record`` when a current one exists for ``size`` (whole, and made from the source
    file as it is now), else the raw file."""
    if prepared_root is not None and size:
        from focus_eval.data.prepare import open_copies

        copy = open_copies(prepared_root, record.dataset, size).current(record)
        if copy is not None:
            return copy
    return Path(record.path)


def image_sources(records, prepared_root: Path | None, size: int | None, state=None) -> dict[str, tuple[Path, bool]]:
    """``{image_id: (file to read, crop still to do)}``: the current prepared copy at ``size`` where there is one
    (stale copies are rebuilt first, by the main process, while the others wait), else the raw file."""
    if prepared_root is not None and size and records and (state is None or state.is_main_process):
        from focus_eval.data.prepare import refresh_stale

        refresh_stale(records, prepared_root, records[0].dataset, size)
    if state is not None:
        # every process must see the same cache state, or their work lists (and so their shares) would differ
        state.wait_for_everyone()
    sources = {}
    for r in records:
        path = source_path(r, prepared_root, size)
        sources[r.image_id] = (path, path == Path(r.path))
    if prepared_root is not None and size:
        from focus_eval.data.content import save_digests

        save_digests()
    return sources


def load_image(path: str, draft_size: int | None, crop: bool = True, corruption: str | None = None,
               image_id: str = ""):
    """A record's pixels as every path decodes them: ``open_fundus`` (``open_image``: draft decoding, EXIF
    orientation, RGB; then the fundus crop and resize), then the corruption, seeded by the image id."""
    from focus_eval.data.images import open_fundus

    image = open_fundus(Path(path), size=draft_size, crop=crop)
    if corruption:
        from focus_eval.data.corruptions import apply

        image = apply(image, image_id, corruption)
    return image


class DecodeAndTransform:
    """Picklable item -> pixels for DataLoader workers: the decoded PIL image when ``transform`` is None,
    else ``transform.pixels(image)`` (uint8; the adapter normalises on its device), or ``transform(image)``
    for a plain callable."""

    def __init__(self, transform: Callable | None = None):
        self.transform = transform

    def __call__(self, item: ImageItem):
        return self.timed(item)[0]

    def timed(self, item: ImageItem) -> tuple[Any, dict[str, float]]:
        """The pixels and the seconds spent decoding (file, crop, resize) and preprocessing (the transform)."""
        start = time.perf_counter()
        image = load_image(item.path, item.draft_size, item.crop, item.corruption, item.image_id)
        decoded = time.perf_counter()
        if self.transform is not None:
            worker_half = getattr(self.transform, "pixels", None)
            image = worker_half(image) if worker_half is not None else self.transform(image)
        return image, {"decode": decoded - start, "preprocess": time.perf_counter() - decoded}

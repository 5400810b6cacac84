"""The encoder hot loop: decode and transform images in worker processes, run the model on large batches.

``iter_embeddings`` is shared by the runner and the throughput benchmark, so the benchmark measures the code
that evaluations run.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Sequence

import torch
from torch.utils.data import DataLoader, Dataset

from focus_eval.errors import FocusError


class TransformDataset(Dataset):
    """Item i -> (i, tensor, None), or (i, None, reason) when decoding or transforming fails."""

    def __init__(self, items: Sequence[Any], transform: Callable[[Any], torch.Tensor]):
        self.items = items
        self.transform = transform

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int):
        try:
            return index, self.transform(self.items[index]), None
        except Exception as exc:  # noqa: BLE001 - a bad image becomes a reported error, not a dead worker
            return index, None, f"{type(exc).__name__}: {exc}"


def _collate(batch):
    good = [(i, t) for i, t, err in batch if err is None]
    bad = [(i, err) for i, t, err in batch if err is not None]
    pixels = torch.stack([t for _, t in good]) if good else None
    return [i for i, _ in good], pixels, bad


def autocast_context(device: torch.device, dtype: torch.dtype | None):
    """Mixed precision on CUDA for a half-precision ``dtype``; plain float32 elsewhere."""
    if device.type == "cuda" and dtype in (torch.bfloat16, torch.float16):
        return torch.autocast("cuda", dtype=dtype)
    return contextlib.nullcontext()


def iter_embeddings(model_fn: Callable[[torch.Tensor], torch.Tensor], transform: Callable[[Any], torch.Tensor],
                    paths_or_items: Sequence[Any], batch_size: int = 256, num_workers: int = 0,
                    device: str | torch.device = "cpu", dtype: torch.dtype | None = None,
                    on_error: Callable[[int, str], None] | None = None,
                    prefetch_factor: int = 4) -> Iterator[tuple[list[int], torch.Tensor]]:
    """Yield (indices into ``paths_or_items``, float32 CPU embeddings) batch by batch, in input order.

    ``transform`` turns one item (a path, or anything the caller chooses) into a [C, H, W] tensor and runs in
    the DataLoader's worker processes, so it must be picklable. An item whose transform raises is passed to
    ``on_error(index, reason)``; without ``on_error`` it is a FocusError naming the item.
    """
    device = torch.device(device)
    workers = max(0, int(num_workers))
    loader = DataLoader(TransformDataset(paths_or_items, transform), batch_size=max(1, int(batch_size)),
                        shuffle=False, num_workers=workers, collate_fn=_collate,
                        pin_memory=device.type == "cuda", persistent_workers=False,
                        prefetch_factor=prefetch_factor if workers else None)
    with torch.inference_mode():
        for indices, pixels, bad in loader:
            for index, reason in bad:
                if on_error is None:
                    raise FocusError(f"{paths_or_items[index]}: {reason}")
                on_error(index, reason)
            if pixels is None:
                continue
            pixels = pixels.to(device, non_blocking=True)
            with autocast_context(device, dtype):
                embeddings = model_fn(pixels)
            yield indices, embeddings.float().cpu()

"""The encoder hot loop: decode and transform images in worker processes, run the model on large batches.

``iter_embeddings`` is shared by the runner and the throughput benchmark, so the benchmark measures the code
that evaluations run.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, Iterator, Sequence

import torch
from torch.utils.data import DataLoader, Dataset

from focus_eval.errors import FocusError
from focus_eval.runner.stages import StageClock


class TransformDataset(Dataset):
    """Item i -> (i, value, None, seconds), or (i, None, reason, seconds) when decoding or transforming fails;
    ``seconds`` is what decode and preprocess took (the transform's ``timed`` split, else all preprocess)."""

    def __init__(self, items: Sequence[Any], transform: Callable[[Any], Any]):
        self.items = items
        self.transform = transform

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int):
        start = time.perf_counter()
        try:
            timed = getattr(self.transform, "timed", None)
            if timed is not None:
                value, seconds = timed(self.items[index])
            else:
                value = self.transform(self.items[index])
                seconds = {"preprocess": time.perf_counter() - start}
            return index, value, None, seconds
        except Exception as exc:  # noqa: BLE001 - a bad image becomes a reported error, not a dead worker
            return index, None, f"{type(exc).__name__}: {exc}", {"decode": time.perf_counter() - start}


def split_batch(batch) -> tuple[list[int], list, list[tuple[int, str]], dict[str, float]]:
    """(indices, values, [(index, reason)], summed seconds) of a list of ``TransformDataset`` items."""
    good = [(i, value) for i, value, err, _ in batch if err is None]
    seconds: dict[str, float] = {}
    for *_, spent in batch:
        for name, value in spent.items():
            seconds[name] = seconds.get(name, 0.0) + value
    return [i for i, _ in good], [v for _, v in good], [(i, err) for i, _, err, _ in batch if err is not None], seconds


def _collate(batch):
    indices, tensors, bad, seconds = split_batch(batch)
    return indices, (torch.stack(tensors) if tensors else None), bad, seconds


def autocast_context(device: torch.device, dtype: torch.dtype | None):
    """Mixed precision on CUDA for a half-precision ``dtype``; plain float32 elsewhere."""
    if device.type == "cuda" and dtype in (torch.bfloat16, torch.float16):
        return torch.autocast("cuda", dtype=dtype)
    return contextlib.nullcontext()


def iter_embeddings(model_fn: Callable[[torch.Tensor], torch.Tensor], transform: Callable[[Any], torch.Tensor],
                    paths_or_items: Sequence[Any], batch_size: int = 256, num_workers: int = 0,
                    device: str | torch.device = "cpu", dtype: torch.dtype | None = None,
                    on_error: Callable[[int, str], None] | None = None, prefetch_factor: int = 4,
                    stages: StageClock | None = None) -> Iterator[tuple[list[int], torch.Tensor]]:
    """Yield (indices into ``paths_or_items``, float32 CPU embeddings) batch by batch, in input order.

    ``transform`` turns one item (a path, or anything the caller chooses) into a [C, H, W] tensor and runs in
    the DataLoader's worker processes, so it must be picklable. An item whose transform raises is passed to
    ``on_error(index, reason)``; without ``on_error`` it is a FocusError naming the item. ``stages`` (a
    ``StageClock``) receives the time of each stage.
    """
    device = torch.device(device)
    stages = stages or StageClock()
    workers = max(0, int(num_workers))
    # pinned host memory lets the copy to the device run without blocking this thread
    loader = DataLoader(TransformDataset(paths_or_items, transform), batch_size=max(1, int(batch_size)),
                        shuffle=False, num_workers=workers, collate_fn=_collate,
                        pin_memory=device.type == "cuda", persistent_workers=False,
                        prefetch_factor=prefetch_factor if workers else None)
    with torch.inference_mode():
        for indices, pixels, bad, seconds in stages.loader(loader):
            stages.add_worker(seconds, len(indices) + len(bad))
            for index, reason in bad:
                if on_error is None:
                    raise FocusError(f"{paths_or_items[index]}: {reason}")
                on_error(index, reason)
            if pixels is None:
                continue
            with stages.stage("host_to_device"):
                pixels = pixels.to(device, non_blocking=True)
            with stages.stage("model"), autocast_context(device, dtype):
                # reading the vectors back waits for the device, so the model's time ends here
                embeddings = model_fn(pixels).float().cpu()
            yield indices, embeddings

"""Embed a dataset's images once per encoder configuration, through the on-disk cache, across processes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from focus_eval.data.content import save_digests
from focus_eval.runner.batching import MemoryAdaptiveBatches
from focus_eval.runner.embed_cache import EmbeddingCache, cache_key_for
from focus_eval.runner.embed_loop import iter_embeddings
from focus_eval.runner.images import DecodeAndTransform, ImageItem, image_sources
from focus_eval.runner.stages import StageClock

SHARD_IMAGES = 1024  # write a cache shard at least this often, so an interrupted run loses little


def process_share(items: list, batch_size: int, rank: int, world: int) -> list:
    """This process's whole batches of the work list, interleaved by batch: every image lands in the same
    batch whatever the number of processes, so one process and many compute identical embeddings."""
    batches = [items[i:i + batch_size] for i in range(0, len(items), batch_size)]
    return [item for b in batches[rank::world] for item in b]


def embed_records(adapter, records, cache: EmbeddingCache, *, state, batch_size: int, num_workers: int,
                  prepared_root: Path | None = None, progress=None, dtype: torch.dtype | None = None,
                  batches: MemoryAdaptiveBatches | None = None, stages: StageClock | None = None,
                  corruption: str | None = None):
    """Return ({image_id: vector}, {image_id: error}) for ``records``, computing only what the cache lacks.

    Each process embeds an interleaved share of the missing images and writes its own shards; after a
    barrier every process reads the complete cache. ``stages`` receives the time of each stage.
    ``corruption`` (``--corruptions``, e.g. ``blur:3``) is applied to each image after it is read, prepared
    copy or raw file alike, and is part of every cache key: clean and corrupted vectors never meet.
    """
    # decode (and look for a prepared copy) at the size the transform reads, e.g. 256 before a 224 crop
    size = getattr(adapter.transform, "source_size", None) or adapter.preset.preprocessing.get("size")
    size = int(size) if size else None
    stages = stages or StageClock()
    width = getattr(adapter, "embed_dim", None) or None
    with stages.stage("start_up"):  # finding each image's file and cache key (its content digest)
        # a prepared copy whose source changed (or that was damaged) is written again before anyone reads it
        sources = image_sources(records, prepared_root, size, state)
        # a prepared copy is read as it is, without a second crop; its key says so, so that vectors of the same
        # file read another way are never taken for it
        keys = {image_id: cache_key_for(image_id, path) + ("" if crop else "|as-prepared")
                + (f"|corrupted:{corruption}" if corruption else "") for image_id, (path, crop) in sources.items()}
        save_digests()
        cached = cache.load(width)
    missing = sorted((r for r in records if keys[r.image_id] not in cached), key=lambda r: r.image_id)
    share = process_share(missing, batch_size, state.process_index, state.num_processes)
    items = [ImageItem(i, r.image_id, str(sources[r.image_id][0]), size, sources[r.image_id][1], corruption)
             for i, r in enumerate(share)]
    bar = progress(total=len(items), desc=f"embed {records[0].dataset}") if progress and items else None
    errors = _embed_items(adapter, items, keys, cache, rank=state.process_index, batch_size=batch_size,
                          num_workers=num_workers, dtype=dtype, batches=batches, bar=bar, stages=stages)
    state.wait_for_everyone()
    errors = gather_errors(errors, state)
    cached = cache.load(width)
    vectors = {r.image_id: cached[keys[r.image_id]] for r in records if keys[r.image_id] in cached}
    return vectors, errors


def _embed_items(adapter, items: list[ImageItem], keys: dict[str, str], cache: EmbeddingCache, *, rank: int,
                 batch_size: int, num_workers: int, dtype, batches: MemoryAdaptiveBatches | None, bar,
                 stages: StageClock) -> dict:
    """Embed ``items`` into cache shards of this process; returns {image_id: decode error}."""
    errors: dict[str, str] = {}
    if not items:
        return errors
    pending_keys: list[str] = []
    pending_vectors: list[np.ndarray] = []

    def failed(index: int, reason: str) -> None:
        errors[items[index].image_id] = reason
        if bar:
            bar.update(1)

    batches = batches or MemoryAdaptiveBatches(enabled=False)

    def model_fn(pixels):
        # workers send uint8; scaling and mean/std happen on the adapter's device
        return batches.run(lambda p: adapter.embed_images(adapter.transform.normalize(p)), [pixels], torch.cat)

    for indices, vectors in iter_embeddings(model_fn, DecodeAndTransform(adapter.transform), items,
                                            batch_size=batch_size, num_workers=num_workers,
                                            device=adapter.device, dtype=dtype, on_error=failed, stages=stages):
        with stages.stage("post_process"):
            pending_keys += [keys[items[i].image_id] for i in indices]
            pending_vectors.append(vectors.numpy())
            if bar:
                bar.update(len(indices))
            if len(pending_keys) >= shard_images():
                cache.write(pending_keys, np.concatenate(pending_vectors), rank=rank)
                pending_keys, pending_vectors = [], []
    with stages.stage("post_process"):
        if pending_keys:
            cache.write(pending_keys, np.concatenate(pending_vectors), rank=rank)
    if bar:
        bar.close()
    return errors


def shard_images() -> int:
    import os

    return int(os.environ.get("FOCUS_EMBED_SHARD_IMAGES", SHARD_IMAGES))


def gather_errors(errors: dict[str, str], state) -> dict[str, str]:
    """Every process's decode errors, merged (errors are few; objects travel through torch.distributed)."""
    if state.num_processes == 1:
        return errors
    import torch.distributed as dist

    gathered: list[dict[str, str]] = [{} for _ in range(state.num_processes)]
    dist.all_gather_object(gathered, errors)
    merged: dict[str, str] = {}
    for part in gathered:
        merged.update(part)
    return merged

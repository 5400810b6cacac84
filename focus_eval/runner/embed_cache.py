"""On-disk embedding cache: one folder per (encoder cache key, dataset), shards of (image key, vector).

An image key is the image id plus a fingerprint of its file (size and modification time), so a changed or
regenerated image is embedded again. Shards are written atomically; an interrupted run loses at most the
shard in progress and resumes from the rest.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import numpy as np


def image_fingerprint(path: Path) -> str:
    st = os.stat(path)
    return f"{st.st_size}-{st.st_mtime_ns}"


class EmbeddingCache:
    """Embeddings of one dataset under one encoder configuration."""

    def __init__(self, root: Path, cache_key: str, dataset: str):
        self.dir = Path(root) / cache_key / dataset
        self.dir.mkdir(parents=True, exist_ok=True)

    def load(self) -> dict[str, np.ndarray]:
        """All cached vectors, keyed by ``image_id|fingerprint``."""
        out: dict[str, np.ndarray] = {}
        for shard in sorted(self.dir.glob("shard-*.npz")):
            try:
                with np.load(shard, allow_pickle=False) as data:
                    keys, vectors = data["keys"], data["vectors"]
            except (OSError, ValueError, KeyError):
                continue  # a shard cut short by a crash: its images are embedded again
            for k, v in zip(keys.tolist(), vectors):
                out[k] = v
        return out

    def write(self, keys: list[str], vectors: np.ndarray, rank: int = 0) -> Path:
        if len(keys) != len(vectors):
            raise ValueError("keys and vectors differ in length")
        name = f"shard-r{rank}-{uuid.uuid4().hex[:12]}.npz"
        tmp = self.dir / (name + ".tmp")
        with open(tmp, "wb") as fh:
            np.savez(fh, keys=np.array(keys, dtype=str), vectors=np.asarray(vectors, dtype=np.float32))
        final = self.dir / name
        os.replace(tmp, final)
        return final


def cache_key_for(image_id: str, path: Path) -> str:
    return f"{image_id}|{image_fingerprint(path)}"

"""On-disk embedding cache: one folder per (encoder cache key, dataset), shards of (image key, vector).

An image key is the image id plus the content digest of the file read (``data/content.py``) and the decoding
rule's version, so a changed or regenerated image (or a rebuilt prepared copy), whatever its size and times, or
an image that a newer rule decodes differently, is embedded again. Shards are written atomically and checked when
read: a shard that cannot be read, or whose keys and vectors do not fit together or have another width than the
encoder's, is reported, removed, and its images embedded again.
"""

from __future__ import annotations

import contextlib
import io
import sys
import uuid
import zipfile
from pathlib import Path

import numpy as np

from focus_eval.data import images
from focus_eval.data.content import file_digest
from focus_eval.files import atomic_write_bytes


def image_fingerprint(path: Path) -> str:
    """The file's content digest and the decoding rule's version: what its vector was computed from."""
    return f"{file_digest(path)}-d{images.DECODE_VERSION}"


class EmbeddingCache:
    """Embeddings of one dataset under one encoder configuration."""

    def __init__(self, root: Path, cache_key: str, dataset: str):
        self.dir = Path(root) / cache_key / dataset
        self.dir.mkdir(parents=True, exist_ok=True)

    def load(self, width: int | None = None) -> dict[str, np.ndarray]:
        """All cached vectors, keyed by ``image_id|fingerprint``; shards that fail ``shard_problem`` (with
        ``width`` the encoder's vector width, when known) are dropped with a warning and deleted."""
        out: dict[str, np.ndarray] = {}
        for shard in sorted(self.dir.glob("shard-*.npz")):
            keys, vectors, problem = read_shard(shard, width)
            if problem is not None:
                print(f"focus-eval: embedding cache {shard}: {problem}; its images are embedded again",
                      file=sys.stderr)
                with contextlib.suppress(FileNotFoundError):  # another process may have removed it already
                    shard.unlink()
                continue
            for k, v in zip(keys.tolist(), vectors):
                out[k] = v
        return out

    def write(self, keys: list[str], vectors: np.ndarray, rank: int = 0) -> Path:
        if len(keys) != len(vectors):
            raise ValueError("keys and vectors differ in length")
        buffer = io.BytesIO()
        np.savez(buffer, keys=np.array(keys, dtype=str), vectors=np.asarray(vectors, dtype=np.float32))
        return atomic_write_bytes(self.dir / f"shard-r{rank}-{uuid.uuid4().hex[:12]}.npz", buffer.getvalue())


def read_shard(path: Path, width: int | None = None) -> tuple[np.ndarray, np.ndarray, str | None]:
    """(keys, vectors, None) for a sound shard, else (empty, empty, what is wrong with it)."""
    empty = np.empty(0, dtype=str), np.empty((0, 0), dtype=np.float32)
    try:
        with np.load(path, allow_pickle=False) as data:
            keys, vectors = data["keys"], data["vectors"]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        return *empty, f"unreadable ({type(exc).__name__}: {exc})"
    problem = shard_problem(keys, vectors, width)
    return (*empty, problem) if problem else (keys, vectors, None)


def shard_problem(keys: np.ndarray, vectors: np.ndarray, width: int | None) -> str | None:
    """What makes a shard's arrays unusable, or None."""
    if keys.ndim != 1 or keys.dtype.kind != "U":
        return f"keys are not a list of strings (shape {keys.shape}, dtype {keys.dtype})"
    if vectors.ndim != 2 or vectors.dtype.kind != "f":
        return f"vectors are not a float matrix (shape {vectors.shape}, dtype {vectors.dtype})"
    if len(keys) != len(vectors):
        return f"{len(keys)} keys but {len(vectors)} vectors"
    if width and vectors.shape[1] != width:
        return f"vectors of width {vectors.shape[1]}, the encoder gives {width}"
    return None


def cache_key_for(image_id: str, path: Path) -> str:
    return f"{image_id}|{image_fingerprint(path)}"

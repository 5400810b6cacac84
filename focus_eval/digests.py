"""The project's digests in one place: file sha256 (plain and remembered), model-folder digest, canonical-JSON
digest and text digest; preset hashes, cache keys and training records are all built from these."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

# Files of a local model folder whose bytes decide what the model computes.
MODEL_FILE_SUFFIXES = frozenset({".safetensors", ".bin", ".pth", ".pt", ".json"})
_CHUNK = 1 << 22
# edges_sha256 reads this much from each end of a file
EDGE_BYTES = 64 * 1024


def text_sha256(text: str) -> str:
    """sha256 hex digest of ``text`` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def json_digest(value: Any) -> str:
    """sha256 of ``value`` as JSON with sorted keys (anything not JSON-native written with ``str``)."""
    return text_sha256(json.dumps(value, sort_keys=True, default=str))


def file_sha256(path: str | os.PathLike) -> str:
    """sha256 hex digest of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def cached_file_sha256(path: str | os.PathLike) -> str:
    """:func:`file_sha256`, remembered per (path, size, mtime) in the cache so large checkpoints are hashed once."""
    from focus_eval.resources import cache_dir

    path = Path(path).resolve()
    stat = path.stat()
    memo = cache_dir("sha256") / f"{text_sha256(f'{path}|{stat.st_size}|{stat.st_mtime_ns}')}.txt"
    if memo.is_file():
        return memo.read_text().strip()
    value = file_sha256(path)
    from focus_eval.files import atomic_write_text

    atomic_write_text(memo, value)
    return value


def folder_digest(folder: str | os.PathLike, suffixes: frozenset[str] = MODEL_FILE_SUFFIXES) -> str:
    """A digest of a local model folder: the relative name and sha256 of every file with one of ``suffixes``."""
    folder = Path(folder)
    parts = [f"{path.relative_to(folder)}:{cached_file_sha256(path)}" for path in sorted(folder.rglob("*"))
             if path.is_file() and path.suffix in suffixes]
    return text_sha256("\n".join(parts))


def edges_sha256(path: str | os.PathLike, size: int | None = None) -> str:
    """sha256 of a file's first and last EDGE_BYTES (the whole file when it is shorter than both together):
    a cheap content check for large images, which rarely change in the middle alone."""
    size = os.stat(path).st_size if size is None else size
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        if size <= 2 * EDGE_BYTES:
            digest.update(handle.read())
        else:
            digest.update(handle.read(EDGE_BYTES))
            handle.seek(size - EDGE_BYTES)
            digest.update(handle.read(EDGE_BYTES))
    return digest.hexdigest()

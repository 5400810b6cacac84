"""The project's digests in one place: file sha256 (plain and remembered), model-folder digest, canonical-JSON
digest and text digest; preset hashes, cache keys and training records are all built from these."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

# Files of a local model folder whose bytes decide what the model computes.
MODEL_FILE_SUFFIXES = frozenset({".safetensors", ".bin", ".pth", ".pt", ".json"})
_CHUNK = 1 << 22
# A digest is remembered for a file only when the file's ctime is at least this much older than the moment it was
# read: a change within the same timestamp tick as the one before could otherwise keep the identity unchanged.
RACY_NS = 2 * 10**9


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
    """:func:`file_sha256`, remembered in the cache so large checkpoints are hashed once, per file identity:
    path, device, inode, size, mtime_ns and ctime_ns. A rewrite that keeps the size and puts the mtime back
    (``cp -p``, ``rsync -a``) still sets the ctime to the time of the change, so it is hashed again."""
    from focus_eval.resources import cache_dir

    path = Path(path).resolve()
    st = path.stat()
    identity = f"{path}|{st.st_dev}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}"
    memo = cache_dir("sha256") / f"{text_sha256(identity)}.txt"
    if memo.is_file():
        return memo.read_text().strip()
    read_at = time.time_ns()
    value = file_sha256(path)
    if st.st_ctime_ns < read_at - RACY_NS:
        from focus_eval.files import atomic_write_text

        atomic_write_text(memo, value)
    return value


def folder_digest(folder: str | os.PathLike, suffixes: frozenset[str] = MODEL_FILE_SUFFIXES) -> str:
    """A digest of a local model folder: the relative name and sha256 of every file with one of ``suffixes``."""
    folder = Path(folder)
    parts = [f"{path.relative_to(folder)}:{cached_file_sha256(path)}" for path in sorted(folder.rglob("*"))
             if path.is_file() and path.suffix in suffixes]
    return text_sha256("\n".join(parts))


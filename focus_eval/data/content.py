"""Content digests of image files: what the embedding cache, the prepared image cache and the unit fingerprint
know an image by, so that a file replaced by a different one is noticed whatever its size and times.

A digest is blake2b (16 bytes) of the file's whole bytes. Hashing every image on every run would read a whole
dataset each time, so a digest is remembered with the file's identity: (device, inode, size, mtime_ns,
ctime_ns). That is safe because writing a file's contents sets its ctime to the current time, and nothing short
of changing the system clock sets ctime back: ``cp -p``, ``rsync -a``, ``tar x`` and ``os.utime`` restore mtime
and atime, but the ctime becomes the time of that restore. A same-size replacement whose mtime was put back
therefore has another ctime (or, renamed into place, another inode) and is hashed again. Remaining gap: a write
in the same timestamp tick as the file's previous change, after the file was hashed; so a digest is remembered
only when the file's ctime is at least ``RACY_NS`` older than the moment its bytes were read (git's rule for
"racy" index entries), and younger files are hashed each time.

The memo of one folder's files is one JSON file under focus-eval's cache (``image-digests/``); ``save_digests``
merges new entries into it under its lock. A memo that cannot be read or written costs speed only (files are
hashed again), and is reported once.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

from focus_eval.digests import RACY_NS

DIGEST_SIZE = 16


def bytes_digest(data: bytes) -> str:
    """The content digest of a file's bytes (blake2b, ``DIGEST_SIZE`` bytes, hex)."""
    return hashlib.blake2b(data, digest_size=DIGEST_SIZE).hexdigest()


def identity(st: os.stat_result) -> list[int]:
    """What a remembered digest is valid for: (device, inode, size, mtime_ns, ctime_ns)."""
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def read_with_digest(path: str | os.PathLike) -> tuple[bytes, str, list[int], int]:
    """(bytes, digest, identity, read_at_ns) of a file, read once: decode from the bytes, and hand the rest to
    ``remember`` (in the process that keeps the memo)."""
    read_at = time.time_ns()
    with open(path, "rb") as handle:
        st = os.fstat(handle.fileno())
        data = handle.read()
    return data, bytes_digest(data), identity(st), read_at


def file_digest(path: str | os.PathLike) -> str:
    """The content digest of a file: remembered when its identity is unchanged, else read and hashed."""
    path = Path(path)
    memo = _memo(path.parent)
    known = memo.entries.get(path.name)
    if isinstance(known, list) and len(known) == 6 and known[:5] == identity(os.stat(path)):
        return known[5]
    _, digest, ident, read_at = read_with_digest(path)
    memo.remember(path.name, ident, digest, read_at)
    return digest


def remember(path: str | os.PathLike, ident: list[int], digest: str, read_at: int) -> None:
    """Keep a digest computed elsewhere (a worker that read the file to decode it)."""
    path = Path(path)
    _memo(path.parent).remember(path.name, ident, digest, read_at)


def save_digests() -> None:
    """Write the digests remembered since the last save into their folders' memo files."""
    for memo in _MEMOS.values():
        memo.save()


class _FolderMemo:
    """The remembered digests of one folder's files: name -> identity + [digest]."""

    def __init__(self, folder: Path):
        from focus_eval.digests import text_sha256
        from focus_eval.resources import cache_dir

        self.folder = folder
        self.entries: dict[str, list] = {}
        self.new: dict[str, list] = {}
        try:
            self.file = cache_dir("image-digests") / f"{text_sha256(str(folder.resolve()))[:32]}.json"
        except OSError as exc:
            self.file = None
            _warn(f"the image digest memo cannot be kept ({exc}); images are hashed on every run")
            return
        self.entries = _read(self.file)

    def remember(self, name: str, ident: list[int], digest: str, read_at: int) -> None:
        if ident[4] > read_at - RACY_NS:
            return  # changed too recently to be told apart from a change in the same timestamp tick
        self.entries[name] = self.new[name] = [*ident, digest]

    def save(self) -> None:
        if not self.new or self.file is None:
            return
        from focus_eval.files import atomic_write_text, locked

        try:
            with locked(self.file):
                merged = {**_read(self.file), **self.new}
                atomic_write_text(self.file, json.dumps(merged, separators=(",", ":")))
        except OSError as exc:
            _warn(f"the image digest memo {self.file} cannot be written ({exc}); its images are hashed again")
        self.new = {}


_MEMOS: dict[tuple[str, str], _FolderMemo] = {}
_WARNED: set[str] = set()


def _memo(folder: Path) -> _FolderMemo:
    key = (os.environ.get("FOCUS_CACHE", ""), str(folder))  # the cache folder may change within one process
    if key not in _MEMOS:
        _MEMOS[key] = _FolderMemo(folder)
    return _MEMOS[key]


def _read(file: Path) -> dict[str, list]:
    if not file.is_file():
        return {}
    try:
        entries = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        _warn(f"the image digest memo {file} is unreadable ({exc}); its images are hashed again")
        return {}
    return entries if isinstance(entries, dict) else {}


def _warn(message: str) -> None:
    if message not in _WARNED:
        _WARNED.add(message)
        print(f"focus-eval: {message}", file=sys.stderr)

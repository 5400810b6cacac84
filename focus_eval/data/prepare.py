"""The prepared image cache: fundus-cropped, resized JPEGs written once per (dataset, size) by worker processes.

Layout (one file per source image, the source's path relative to the dataset folder plus ``.jpg``; a name that
would then be too long for the file system ends in a digest of the source's name instead, ``copy_relpath``):

    DATA_ROOT/.prepared/v<PREPARE_VERSION>/<dataset>/<size>/<relpath>.jpg
    DATA_ROOT/.prepared/v<PREPARE_VERSION>/<dataset>/<size>/sources.json   the source each copy was made from
    DATA_ROOT/.prepared/v<PREPARE_VERSION>/<dataset>/<size>/corrupt.json   source files that could not be decoded

``sources.json`` maps each relpath to the stamp of the copy: the content digest of the source it was made from
(``data/content.py``), the decoding rule it was decoded with (``DECODE_VERSION``) and the copy's own size. A
copy is used only while its source has that digest, the rule is the current one and the copy has its recorded
size; anything else is stale and written again. ``PREPARE_VERSION`` changes whenever the crop or encoding
changes, so an old cache is never reused by mistake.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sys
import multiprocessing
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from focus_eval.data import content, images
from focus_eval.data.images import open_fundus
from focus_eval.data.records import ImageRecord
from focus_eval.errors import DataError, FocusError
from focus_eval.files import NAME_MAX, atomic_write_bytes, atomic_write_text, locked, shortened
from focus_eval.progress import bar as progress_bar

PREPARE_VERSION = 1
JPEG_QUALITY = 95
CORRUPT_FILE = "corrupt.json"
SOURCES_FILE = "sources.json"
# finished copies are recorded in sources.json at least this often, so an interrupted prepare keeps its work
SAVE_EVERY = 500
COPY_SUFFIX = ".jpg"


def prepared_dir(data_root: str | os.PathLike, dataset: str, size: int) -> Path:
    return Path(data_root) / ".prepared" / f"v{PREPARE_VERSION}" / dataset / str(int(size))


def prepared_path(data_root: str | os.PathLike, dataset: str, size: int, record: ImageRecord) -> Path:
    """Where the prepared copy of ``record``'s image lives (it may not exist yet)."""
    return prepared_dir(data_root, dataset, size) / copy_relpath(record.relpath)


def copy_relpath(relpath: str) -> str:
    """The prepared copy's path under its size folder: the source's ``relpath`` plus ``.jpg``; a file name that
    would then pass ``NAME_MAX`` bytes keeps its first bytes and ends in a digest of the whole name instead
    (``<start>~<digest>.jpg``), so every name the file system allows has a copy, and two names never share one."""
    folder, _, name = relpath.rpartition("/")
    copy = name + COPY_SUFFIX
    if len(os.fsencode(copy)) > NAME_MAX:
        tail = f"~{hashlib.blake2b(os.fsencode(name), digest_size=8).hexdigest()}{COPY_SUFFIX}"
        copy = shortened(name, NAME_MAX - len(tail)) + tail
    return f"{folder}/{copy}" if folder else copy


def read_corrupt(data_root: str | os.PathLike, dataset: str, size: int) -> dict[str, str]:
    """relpath -> reason for the source images the last prepare run could not decode."""
    path = prepared_dir(data_root, dataset, size) / CORRUPT_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


class PreparedCopies:
    """The prepared copies of one dataset at one size, and the source stamp each was made from."""

    def __init__(self, data_root: str | os.PathLike, dataset: str, size: int):
        self.folder = prepared_dir(data_root, dataset, size)
        self.sources_file = self.folder / SOURCES_FILE
        self.stamps = _read_stamps(self.sources_file)

    def target(self, record: ImageRecord) -> Path:
        return self.folder / copy_relpath(record.relpath)

    def current(self, record: ImageRecord) -> Path | None:
        """The copy of ``record``'s image if it is whole, was decoded by the current rule and was made from the
        source's bytes as they are now (its content digest, a ``stat`` while the file is untouched), else None."""
        stamp = self.stamps.get(record.relpath)
        if stamp is None or stamp.get("decode") != images.DECODE_VERSION:
            return None
        target = self.target(record)
        try:
            if target.stat().st_size != stamp.get("copy_size"):
                return None
            if content.file_digest(record.path) != stamp.get("digest"):
                return None
        except OSError:
            return None
        return target

    def save(self, stamps: dict[str, dict[str, Any]]) -> None:
        """Merge new stamps into sources.json, under its lock, atomically."""
        if not stamps:
            return
        with locked(self.sources_file):
            # another prepare may have recorded copies since this one read the file
            merged = {**_read_stamps(self.sources_file), **stamps}
            atomic_write_text(self.sources_file, json.dumps(merged, sort_keys=True, separators=(",", ":")))
        self.stamps.update(stamps)


def _read_stamps(path: Path) -> dict[str, dict[str, Any]]:
    if not path.is_file():
        return {}
    try:
        stamps = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"focus-eval: {path} is unreadable ({exc}); its copies count as stale", file=sys.stderr)
        return {}
    return stamps if isinstance(stamps, dict) else {}


_OPEN: dict[Path, tuple[tuple[int, int, int], PreparedCopies]] = {}


def open_copies(data_root: str | os.PathLike, dataset: str, size: int) -> PreparedCopies:
    """``PreparedCopies`` read once per state of its sources.json (a later prepare makes it read again)."""
    folder = prepared_dir(data_root, dataset, size)
    try:
        st = (folder / SOURCES_FILE).stat()
        version = (st.st_ino, st.st_mtime_ns, st.st_size)
    except OSError:
        version = (0, 0, 0)
    known = _OPEN.get(folder)
    if known is not None and known[0] == version:
        return known[1]
    copies = PreparedCopies(data_root, dataset, size)
    _OPEN[folder] = (version, copies)
    return copies


@dataclass
class PrepareReport:
    """Counts from one prepare run of one dataset at one size (``stale``: copies rebuilt as their source
    changed or the copy was damaged; they count in ``written`` too)."""

    dataset: str
    size: int
    total: int = 0
    written: int = 0
    already_prepared: int = 0
    stale: int = 0
    corrupt: dict[str, str] = field(default_factory=dict)


def _prepare_one(job: tuple[str, str, int]) -> tuple[str, str | None, dict[str, Any] | None, tuple | None]:
    """Read one image once, hash and decode those bytes, crop, resize and write the copy; returns (target, error
    or None, stamp, (identity, read time) of the source for the digest memo). Runs in a worker."""
    source, target, size = job
    try:
        data, digest, ident, read_at = content.read_with_digest(source)
        image = open_fundus(data, size)
    except FileNotFoundError:
        return target, str(DataError("image file not found", file=source)), None, None
    except OSError as exc:
        return target, str(exc), None, None
    except DataError as exc:
        return target, str(DataError(str(exc), file=source)), None, None
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=JPEG_QUALITY)
    with _unwinding_on_term():
        atomic_write_bytes(target, buffer.getvalue())
    stamp = {"digest": digest, "decode": images.DECODE_VERSION, "copy_size": len(buffer.getvalue())}
    return target, None, stamp, (ident, read_at)


def prepare_records(records: Iterable[ImageRecord], data_root: str | os.PathLike, dataset: str, size: int,
                    workers: int | None = None, progress: bool | None = None) -> PrepareReport:
    """Write the prepared copy of every record's image that has no current one (missing, or stale: its source
    changed or the copy is damaged). Corrupt sources are counted and listed in the report (and in
    corrupt.json); the run goes on."""
    report = PrepareReport(dataset, size)
    copies = PreparedCopies(data_root, dataset, size)
    jobs, relpaths, sources, seen = [], {}, {}, set()
    for record in records:
        report.total += 1
        seen.add(record.relpath)
        if copies.current(record) is not None:
            report.already_prepared += 1
            continue
        report.stale += record.relpath in copies.stamps
        target = copies.target(record)
        jobs.append((str(record.path), str(target), size))
        relpaths[str(target)] = record.relpath
        sources[str(target)] = record.path
    if jobs:
        _check_writable(copies.folder)
    workers = max(1, workers or os.cpu_count() or 1)
    bar = progress_bar(len(jobs), f"prepare {dataset} {size}px", enabled=progress is not False and bool(jobs))
    fresh: dict[str, dict[str, Any]] = {}
    results = _run(jobs, workers)
    try:
        with bar:
            for target, error, stamp, read in results:
                if error is None:
                    report.written += 1
                    fresh[relpaths[target]] = stamp
                    content.remember(sources[target], read[0], stamp["digest"], read[1])
                else:
                    report.corrupt[relpaths[target]] = error
                if len(fresh) >= SAVE_EVERY:
                    copies.save(fresh)
                    content.save_digests()
                    fresh = {}
                bar.update(1)
    finally:
        results.close()  # an interrupt or error ends the workers before the copies written so far are recorded
        copies.save(fresh)
        content.save_digests()
    _write_corrupt(data_root, dataset, size, seen, report.corrupt)
    return report


def _check_writable(folder: Path) -> None:
    # a read-only or full disk is the command line's file system error (one line naming the folder, exit 1)
    folder.mkdir(parents=True, exist_ok=True)


def _run(jobs: list[tuple[str, str, int]], workers: int):
    if workers == 1 or len(jobs) < 2:
        yield from map(_prepare_one, jobs)
        return
    chunk = max(1, min(64, len(jobs) // (workers * 8) or 1))
    pool = multiprocessing.Pool(workers, initializer=_worker_signals)
    finished = False
    try:
        yield from pool.imap(_prepare_one, jobs, chunksize=chunk)
        finished = True
    finally:
        if finished:  # every copy written: the workers leave on their own, no signal sent
            pool.close()
            pool.join()
        else:  # an error, SIGINT or SIGTERM in the parent, or the results left unread: end the workers at once
            pool.terminate()


# whether this process is a prepare worker (the parent's signal handlers are the command line's)
_in_worker = False


def _worker_signals() -> None:
    """Workers leave SIGINT to the parent (which ends them) and end on SIGTERM: at once, by the default action
    (no Python handler, which could wait for ever: a signal that lands just before a worker blocks on a lock of
    the pool's queue runs its handler only when the wait ends), except while a copy is being written, when
    they unwind (SystemExit), so that the temporary file is removed (the atomic writer cleans up on any
    exception)."""
    global _in_worker
    _in_worker = True
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextlib.contextmanager
def _unwinding_on_term():
    """In a worker, SIGTERM unwinds (SystemExit) for the duration of the block; elsewhere nothing changes."""
    if not _in_worker:
        yield
        return
    signal.signal(signal.SIGTERM, _unwind)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _unwind(signum, frame) -> None:
    raise SystemExit(128 + signum)


def _write_corrupt(data_root, dataset: str, size: int, seen: set[str], corrupt: dict[str, str]) -> None:
    """Record this run's corrupt files; entries for files seen this run and now fine are dropped."""
    folder = prepared_dir(data_root, dataset, size)
    path = folder / CORRUPT_FILE
    known = {k: v for k, v in read_corrupt(data_root, dataset, size).items() if k not in seen}
    known.update(corrupt)
    if known:
        atomic_write_text(path, json.dumps(dict(sorted(known.items())), indent=1))
    elif path.is_file():
        path.unlink()


def prepare_dataset(name: str, data_root: str | os.PathLike, size: int, workers: int | None = None,
                    progress: bool | None = None) -> PrepareReport:
    """Prepare every image of a dataset (all cohorts, all splits) at ``size``."""
    from focus_eval.data.registry import read_dataset

    load = read_dataset(name, data_root)
    return prepare_records(load.records, data_root, name, size, workers, progress)


def refresh_stale(records: list[ImageRecord], data_root: str | os.PathLike, dataset: str, size: int) -> int:
    """Rebuild the copies recorded in sources.json that are no longer current (their source changed, the copy
    was damaged, or an older decoding rule made it) and return how many were written. Images never prepared are left to ``datasets
    prepare``; a cache that cannot be written is left as it is (runs then read those images raw)."""
    copies = PreparedCopies(data_root, dataset, size)
    stale = [r for r in records if r.relpath in copies.stamps and copies.current(r) is None]
    content.save_digests()
    try:
        if not stale:
            return 0
        report = prepare_records(stale, data_root, dataset, size, workers=1, progress=False)
    except (OSError, FocusError) as exc:
        print(f"focus-eval: {dataset}: the prepared images at {size}px cannot be updated ({exc}); stale copies "
              "are skipped and their source files read instead", file=sys.stderr)
        return 0
    print(f"focus-eval: {dataset}: rebuilt {report.written} prepared image(s) at {size}px whose source changed, "
          "whose copy was damaged or that an older decoding rule made", file=sys.stderr)
    return report.written

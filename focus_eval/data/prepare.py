"""The prepared image cache: fundus-cropped, resized JPEGs written once per (dataset, size) by worker processes.

Layout (one file per source image, the source's path relative to the dataset folder plus ``.jpg``):

    DATA_ROOT/.prepared/v<PREPARE_VERSION>/<dataset>/<size>/<relpath>.jpg
    DATA_ROOT/.prepared/v<PREPARE_VERSION>/<dataset>/<size>/corrupt.json   source files that could not be decoded

``PREPARE_VERSION`` changes whenever the crop or encoding changes, so an old cache is never reused by mistake.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from tqdm import tqdm

from focus_eval.data.images import open_fundus
from focus_eval.data.records import ImageRecord
from focus_eval.errors import DataError, FocusError

PREPARE_VERSION = 1
JPEG_QUALITY = 95
CORRUPT_FILE = "corrupt.json"


def prepared_dir(data_root: str | os.PathLike, dataset: str, size: int) -> Path:
    return Path(data_root) / ".prepared" / f"v{PREPARE_VERSION}" / dataset / str(int(size))


def prepared_path(data_root: str | os.PathLike, dataset: str, size: int, record: ImageRecord) -> Path:
    """Where the prepared copy of ``record``'s image lives (it may not exist yet)."""
    return prepared_dir(data_root, dataset, size) / (record.relpath + ".jpg")


def read_corrupt(data_root: str | os.PathLike, dataset: str, size: int) -> dict[str, str]:
    """relpath -> reason for the source images the last prepare run could not decode."""
    path = prepared_dir(data_root, dataset, size) / CORRUPT_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


@dataclass
class PrepareReport:
    """Counts from one prepare run of one dataset at one size."""

    dataset: str
    size: int
    total: int = 0
    written: int = 0
    already_prepared: int = 0
    corrupt: dict[str, str] = field(default_factory=dict)


def _prepare_one(job: tuple[str, str, int]) -> tuple[str, str | None]:
    """Decode, crop, resize and write one image; returns (target, error or None). Runs in a worker."""
    source, target, size = job
    try:
        image = open_fundus(source, size)
    except DataError as exc:
        return target, str(exc)
    out = Path(target)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + f".{os.getpid()}.part")
    image.save(partial, format="JPEG", quality=JPEG_QUALITY)
    os.replace(partial, out)  # an interrupted run never leaves a half-written file under the final name
    return target, None


def prepare_records(records: Iterable[ImageRecord], data_root: str | os.PathLike, dataset: str, size: int,
                    workers: int | None = None, progress: bool | None = None) -> PrepareReport:
    """Write the prepared copy of every record's image that is not there yet. Corrupt sources are counted
    and listed in the report (and in corrupt.json); the run goes on."""
    report = PrepareReport(dataset, size)
    jobs, relpaths, seen = [], {}, set()
    for record in records:
        report.total += 1
        seen.add(record.relpath)
        target = prepared_path(data_root, dataset, size, record)
        if target.is_file() and target.stat().st_size > 0:
            report.already_prepared += 1
            continue
        jobs.append((str(record.path), str(target), size))
        relpaths[str(target)] = record.relpath
    if jobs:
        _check_writable(prepared_dir(data_root, dataset, size))
    workers = max(1, workers or os.cpu_count() or 1)
    bar = tqdm(total=len(jobs), desc=f"prepare {dataset} {size}px", unit="img",
               disable=(None if progress is None else not progress))
    with bar:
        for target, error in _run(jobs, workers):
            if error is None:
                report.written += 1
            else:
                report.corrupt[relpaths[target]] = error
            bar.update(1)
    _write_corrupt(data_root, dataset, size, seen, report.corrupt)
    return report


def _check_writable(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FocusError(f"cannot write the prepared image cache at {folder}: {exc.strerror or exc}") from None


def _run(jobs: list[tuple[str, str, int]], workers: int):
    if workers == 1 or len(jobs) < 2:
        yield from map(_prepare_one, jobs)
        return
    chunk = max(1, min(64, len(jobs) // (workers * 8) or 1))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(_prepare_one, jobs, chunksize=chunk)


def _write_corrupt(data_root, dataset: str, size: int, seen: set[str], corrupt: dict[str, str]) -> None:
    """Record this run's corrupt files; entries for files seen this run and now fine are dropped."""
    folder = prepared_dir(data_root, dataset, size)
    path = folder / CORRUPT_FILE
    known = {k: v for k, v in read_corrupt(data_root, dataset, size).items() if k not in seen}
    known.update(corrupt)
    if known:
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(dict(sorted(known.items())), indent=1))
    elif path.is_file():
        path.unlink()


def prepare_dataset(name: str, data_root: str | os.PathLike, size: int, workers: int | None = None,
                    progress: bool | None = None) -> PrepareReport:
    """Prepare every image of a dataset (all cohorts, all splits) at ``size``."""
    from focus_eval.data.registry import read_dataset

    load = read_dataset(name, data_root)
    return prepare_records(load.records, data_root, name, size, workers, progress)

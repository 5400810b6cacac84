"""Verification of results that others computed (docs/SUBMITTING.md): each results line recomputed from its
sample file, checked against the installed task and focus-eval version, and its samples checked against the
dataset (or the task's published test-split digest). Each line ends as a ``LineVerdict``
(``focus_eval.results.verdict``): verified, mismatch or unverifiable, with its reasons and its submitter.

    verify(paths, data_root=None, include_paths=()) -> list[LineVerdict]

takes results folders, model folders, ``results.jsonl`` files and submission bundles (a bundle is checked on
arrival first: ``results.bundle.check_bundle``; a refused one raises ``BundleRefused``). It reads and writes
nothing but what it is given and the dataset under ``data_root``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from focus_eval.results.bundle import LIMITS, BundleLimits
from focus_eval.results.verdict import LineVerdict


def results_files(path: Path, limits: BundleLimits = LIMITS) -> tuple[list[Path], str | None]:
    """The results files under ``path`` and who submitted them (a bundle's submitter; None otherwise)."""
    from focus_eval.results.bundle import check_bundle, is_bundle
    from focus_eval.results.collect import discover

    path = Path(path)
    if is_bundle(path):
        bundle = check_bundle(path, limits)
        return discover([bundle.results_root]).results_files, bundle.submitter
    found = discover([path]).results_files
    if not found:
        from focus_eval.errors import FocusError

        raise FocusError(f"{path}: no results.jsonl to verify (compare files are not verified)")
    return found, None


def verify(paths: Iterable[str | os.PathLike], data_root: str | os.PathLike | None = None,
           include_paths: Iterable[str | os.PathLike] = (), limits: BundleLimits = LIMITS,
           index=None) -> list[LineVerdict]:
    """A verdict for every line of every results file under ``paths`` (see the module docstring); ``index``, a
    ``TaskIndex`` already read (with ``include_paths``), spares reading the task files again."""
    from focus_eval.data.registry import optional_data_root
    from focus_eval.task.index import TaskIndex
    from focus_eval.verification.dataset import DataCheck
    from focus_eval.verification.lines import verify_results_file

    index = index if index is not None else TaskIndex(include_paths)
    data = DataCheck(index, optional_data_root(data_root))
    sources = [results_files(Path(p), limits) for p in paths]
    return [v for files, submitter in sources for results in files
            for v in verify_results_file(results, index, data, submitter)]

"""Find the leaderboard's input files under each RESULTS_DIR: results lines and fine-tuning comparison files.

A RESULTS_DIR is an ``--output-path`` folder (``<dir>/<model>/results.jsonl``), a model folder
(``<dir>/results.jsonl``), or a file given directly (``results.jsonl`` or ``compare*.jsonl``). The results of
``--limit`` runs beside them (``<model>/limit-N/results.jsonl``) are found too, to be marked as such. Comparison files
written by ``focus-eval compare`` are found as ``<dir>/compare*.jsonl`` and ``<dir>/*/compare.jsonl``.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from focus_eval.errors import FocusError
from focus_eval.results.layout import RESULTS_FILE, limit_dir_name

RESULTS_NAME = RESULTS_FILE
LIMITED = limit_dir_name("*")
COMPARE_PATTERN = "compare*.jsonl"


@dataclass
class SiteInputs:
    """The files one leaderboard build reads, each listed once in discovery order."""

    results_files: list[Path] = field(default_factory=list)
    compare_files: list[Path] = field(default_factory=list)

    def add(self, other: "SiteInputs") -> None:
        self.results_files = _unique([*self.results_files, *other.results_files])
        self.compare_files = _unique([*self.compare_files, *other.compare_files])


def discover(paths: Iterable[Path | str]) -> SiteInputs:
    """All input files under ``paths``; a path that holds none of them is an error naming what was looked for."""
    found = SiteInputs()
    for path in map(Path, paths):
        one = _discover_one(path)
        if not one.results_files and not one.compare_files:
            raise FocusError(
                f"{path}: no results found (looked for {path}/{RESULTS_NAME}, {path}/*/{RESULTS_NAME}, "
                f"{path}/{COMPARE_PATTERN} and {path}/*/compare.jsonl)")
        found.add(one)
    return found


def _discover_one(path: Path) -> SiteInputs:
    if not path.exists():
        raise FocusError(f"{path}: no such file or folder")
    if path.is_file():
        return _classify_file(path)
    results = [path / RESULTS_NAME] if (path / RESULTS_NAME).is_file() else []
    results += sorted(p for p in path.glob(f"*/{RESULTS_NAME}") if p.is_file())
    # --limit runs sit beside the full results (<model>/limit-N/); they are read to be marked, not ranked
    results += sorted(p for p in [*path.glob(f"{LIMITED}/{RESULTS_NAME}"), *path.glob(f"*/{LIMITED}/{RESULTS_NAME}")]
                      if p.is_file())
    compares = sorted(p for p in path.glob(COMPARE_PATTERN) if p.is_file())
    compares += sorted(p for p in path.glob("*/compare.jsonl") if p.is_file())
    return SiteInputs(results_files=results, compare_files=compares)


def _classify_file(path: Path) -> SiteInputs:
    if path.name == RESULTS_NAME:
        return SiteInputs(results_files=[path])
    if fnmatch.fnmatch(path.name, COMPARE_PATTERN):
        return SiteInputs(compare_files=[path])
    raise FocusError(f"{path}: expected a results folder, a {RESULTS_NAME} file or a {COMPARE_PATTERN} file")


def _unique(paths: list[Path]) -> list[Path]:
    seen: set[Path] = set()
    kept = []
    for path in paths:
        key = path.resolve()
        if key not in seen:
            seen.add(key)
            kept.append(path)
    return kept

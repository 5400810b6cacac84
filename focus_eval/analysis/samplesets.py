"""The per-image rows the statistical analyses (``ranks``, ``pairwise``, ``operating-points``,
``recalibration``) work from, read from the results folders' sample files alone: which results lines they
compare, each configuration's name, and the images of one task that every compared configuration scored.

A configuration is what the main table calls one: model, method, adapter, run conventions and submitter
(``Entry.config``).
Compared lines come through the one pairing step (``results.identity.pair``): binary, on included tasks (proxy
and underpowered tasks only when asked), of the task version most lines of the task have, plain (a prompt
variant, label rule, corruption or label budget is the fragility reports'), with answers and coverage at the
floor, and not ``--limit`` runs unless asked; the lines left out are named once in the notes. Untrained baselines
are compared too, and ranked among themselves (as on the main table).
"""

from __future__ import annotations

import json
import math
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np

from focus_eval.analysis.base import ReportOptions
from focus_eval.analysis.summary import included
from focus_eval.errors import DataError
from focus_eval.files import read_jsonl_rows
from focus_eval.results.collect import Collection, Entry
from focus_eval.results.identity import Pairing, configuration_text, pair
from focus_eval.results.layout import SAMPLES_SUFFIX, unit_stem

# methods whose sample lines carry a normalised yes-score (P(yes) / (P(yes) + P(no))) for thresholds
NORMALISED_SCORE_METHODS = ("prompt", "knowledge_prompt")


def config_label(entry: Entry) -> str:
    """The name a configuration goes by in the statistical tables: ``model · method [+ adapter] [conventions]
    [from submitter]``."""
    line = entry.line
    return configuration_text(line.model, line.method, line.adapter, entry.convention_text, entry.submitter)


def not_compared(entry: Entry, include_proxy: bool) -> str | None:
    """Why a binary line that is otherwise comparable stays out of the paired statistics, or None."""
    if not included([entry], include_proxy):
        return "a proxy or underpowered task (--include-proxy counts it)"
    return None


def compared(collection: Collection, options: ReportOptions, varies: str = "configuration") -> Pairing:
    """The binary results lines that enter the comparisons, and those left out with their reasons; within
    ``shared_reads`` worked out once for the analyses of one build."""
    key = ("compared", id(collection.entries), options.include_limited, options.include_proxy, varies)
    memo = _SHARED[-1] if _SHARED else {}
    if key not in memo or memo[key][0] is not collection.entries:
        binary = [e for e in collection.entries if not e.line.output_type]
        memo[key] = (collection.entries, pair(binary, varies, include_limited=options.include_limited, min_group=1,
                                              plain=True, keep=lambda e: not_compared(e, options.include_proxy)))
    return memo[key][1]


def compared_entries(collection: Collection, options: ReportOptions) -> list[Entry]:
    """The binary results lines that enter the comparisons."""
    return compared(collection, options).entries


def sample_file(entry: Entry) -> Path:
    return entry.sample_dir / f"{unit_stem(entry.line.task, entry.line.method)}{SAMPLES_SUFFIX}"


_SHARED: list[dict[Path, dict[str, list[dict]]]] = []


@contextmanager
def shared_reads() -> Iterator[None]:
    """Within the block, each sample file is read once, whichever analyses ask for its rows (a site build runs
    all four); outside it nothing is kept."""
    _SHARED.append({})
    try:
        yield
    finally:
        _SHARED.pop()


_SCORED = "scored rows"  # the key of _scored's memo in a shared_reads scope (no path is a str)


def _split_rows(path: Path) -> dict[str, list[dict]]:
    lines = [line for line in path.read_bytes().split(b"\n") if line.strip()]
    try:  # the whole file in one parse; a line that is no JSON is then found and named line by line
        parsed = json.loads(b"[" + b",".join(lines) + b"]")
    except ValueError:
        parsed = None
    if parsed is None or len(parsed) != len(lines):
        parsed = _parse_lines(path)
    out: dict[str, list[dict]] = {}
    for row in parsed:
        if isinstance(row, dict):
            out.setdefault(str(row.get("split", "test")), []).append(row)
    return out


def _parse_lines(path: Path) -> list:
    rows = []
    for number, line in enumerate(path.read_bytes().split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:
            problem = next((p for n, _, p in read_jsonl_rows(path) if n == number and p), "not valid JSON")
            raise DataError(problem, file=str(path), row=number) from None
    return rows


def read_rows(entry: Entry, split: str = "test") -> list[dict] | None:
    """The rows of one split of the line's sample file (rows without a split count as test); None without a
    file. A row that is not JSON is an error naming the file and row."""
    path = sample_file(entry)
    if "/" in entry.line.task or "/" in entry.line.method or not path.is_file():
        return None
    if not _SHARED:
        return _split_rows(path).get(split, [])
    if path not in _SHARED[-1]:
        _SHARED[-1][path] = _split_rows(path)
    return _SHARED[-1][path].get(split, [])


def score_of(row: dict, normalised: bool) -> float | None:
    """The row's usable score: none for an error row; ``score_norm`` first where asked and present."""
    label = row.get("label")
    if row.get("error") is not None or label.__class__ is not int or label not in (0, 1):
        return None
    value = row.get("score_norm") if normalised and row.get("score_norm") is not None else row.get("score")
    kind = value.__class__
    return float(value) if (kind is float or kind is int) and math.isfinite(value) else None


@dataclass(frozen=True)
class Aligned:
    """The images of one task every compared configuration scored: labels, patients, scores (configs x
    images), and how many scored images of some configuration were left out (another lacked them, or the
    labels disagree)."""

    task: str
    labels: list[str]
    image_ids: np.ndarray
    patients: np.ndarray
    y: np.ndarray
    scores: np.ndarray
    dropped: int
    disagree: int = 0  # of the dropped: images whose labels differ between the sample files

    @property
    def n(self) -> int:
        return int(self.y.size)


def _scored(rows: Sequence[dict]) -> dict[str, dict]:
    """Image id -> row, for the rows with a usable score; within ``shared_reads`` worked out once per rows list
    (the analyses of one build align the same files several times). The list is kept with its result, so its
    id cannot be reused while the entry stands."""
    if not _SHARED:
        return {str(r["image_id"]): r for r in rows if score_of(r, False) is not None}
    memo = _SHARED[-1].setdefault(_SCORED, {})
    found = memo.get(id(rows))
    if found is None or found[0] is not rows:
        found = memo[id(rows)] = (rows, {str(r["image_id"]): r for r in rows if score_of(r, False) is not None})
    return found[1]


def align(task: str, entries: Sequence[Entry], rows: Sequence[Sequence[dict]]) -> Aligned:
    """Join the configurations' scored rows of one task on the image id. An image whose label differs between
    sample files (e.g. tasks of the same name under different label rules) is dropped and counted."""
    scored = [_scored(rs) for rs in rows]
    shared = sorted(set.intersection(*(set(s) for s in scored))) if scored else []
    union = set().union(*(set(s) for s in scored)) if scored else set()
    common = [i for i in shared if len({s[i]["label"] for s in scored}) == 1]
    y = np.array([scored[0][i]["label"] for i in common], dtype=float)
    scores = np.array([[float(s[i]["score"]) for i in common] for s in scored], dtype=float)
    patients = np.array([str(scored[0][i].get("patient_id", i)) for i in common], dtype=object)
    return Aligned(task=task, labels=[config_label(e) for e in entries], image_ids=np.array(common, dtype=object),
                   patients=patients, y=y, scores=scores.reshape(len(entries), len(common)),
                   dropped=len(union) - len(common), disagree=len(shared) - len(common))


def by_task(entries: Iterable[Entry]) -> dict[str, list[Entry]]:
    """Lines grouped by task, tasks in name order, lines in configuration-name order."""
    out: dict[str, list[Entry]] = {}
    for e in sorted(entries, key=lambda e: (e.line.task, config_label(e))):
        out.setdefault(e.line.task, []).append(e)
    return out


def with_samples(entries: Sequence[Entry], split: str = "test") -> tuple[list[Entry], list[list[dict]], list[str]]:
    """(lines that have rows of ``split``, their rows, one note per line that has none)."""
    kept, rows, missing = [], [], []
    for e in entries:
        found = read_rows(e, split)
        if found and _scored(found):
            kept.append(e)
            rows.append(found)
        elif found:
            missing.append(f"{config_label(e)} on {e.line.task}: no {split} row with a score in its sample file")
        else:
            missing.append(f"{config_label(e)} on {e.line.task}: no {split} rows in a sample file")
    return kept, rows, missing


def task_streams(entries: Iterable[Entry]) -> dict[str, int]:
    """Each task's stream of resamples (``metrics.resamples.Resamples``): its place among the tasks' names,
    so every analysis draws the same resamples for a task and different tasks draw independently."""
    return {task: i for i, task in enumerate(sorted({e.line.task for e in entries}))}


class ReplicateCache:
    """Every configuration's AUROC replicates on a task's aligned images, computed once: a configuration's
    replicates depend only on its scores, the images' patients and the task's stream, not on which other
    configurations it is compared with, so ``ranks`` and ``pairwise`` share them."""

    def __init__(self, n_boot: int, seed: int):
        self.n_boot, self.seed = n_boot, seed
        self.store: dict[tuple, np.ndarray] = {}

    def replicates(self, aligned: Aligned, stream: int) -> np.ndarray:
        """(1 + n_boot, M) for the configurations of ``aligned`` (row 0 the point estimates)."""
        from focus_eval.metrics.paired import auroc_replicates

        images = (aligned.task, stream, hash(tuple(aligned.image_ids)), aligned.n)
        missing = [j for j, m in enumerate(aligned.labels) if (images, m) not in self.store]
        if missing:
            values = auroc_replicates(aligned.y, aligned.scores[missing], aligned.patients, self.n_boot, self.seed,
                                      stream)
            for column, j in enumerate(missing):
                self.store[(images, aligned.labels[j])] = values[:, column]
        return np.stack([self.store[(images, m)] for m in aligned.labels], axis=1)

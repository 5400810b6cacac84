"""Rank intervals: how sure is the order of the main table? For the mean AUROC over all included tasks, per
target and per task, every configuration's rank under a paired patient-clustered bootstrap, its 95% rank
interval, and the share of resamples in which it is first (``p_first``, a tie for first split evenly).
Untrained baselines are ranked among themselves, as on the main table (scopes ``untrained:...``).

Paired: each task's resample of patients is drawn once and applied to every configuration at once, so all are
compared on the same patients; a mean over tasks averages, replicate by replicate, the tasks' AUROCs, each task
resampled independently (its own stream of draws). Only images every compared configuration scored are used,
and a mean over tasks uses only the tasks every compared configuration has samples for (both counted in the
notes). A configuration whose rank interval reaches the leader's is statistically tied with it. The lines ranked
are those the main table ranks (``samplesets.compared``); the others are named once in the notes.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from focus_eval.analysis.base import ReportOptions, Table
from focus_eval.analysis.samplesets import (Aligned, ReplicateCache, align, by_task, compared, config_label,
                                            task_streams, with_samples)
from focus_eval.errors import FocusError
from focus_eval.metrics.paired import rank_interval, replicate_ranks, share_first
from focus_eval.results.collect import Collection, Entry

COLUMNS = ("scope", "model", "rank", "rank_low", "rank_high", "p_first")


@dataclass(frozen=True)
class RankRow:
    """One configuration in one scope: its AUROC (mean over the scope's tasks) on the shared images, its rank
    and 95% rank interval, its share of first places, and whether it leads or is tied with the leader."""

    scope: str
    model: str
    auroc: float | None
    rank: int
    rank_low: int
    rank_high: int
    p_first: float
    status: str = ""  # "leader", "tied" (interval reaches the leader's) or ""

    @property
    def tied(self) -> bool:
        return self.status == "tied"


@dataclass
class Ranking:
    rows: list[RankRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def scope(self, name: str) -> list[RankRow]:
        return [r for r in self.rows if r.scope == name]


class _Tasks:
    """Each task's lines with samples, aligned on demand for a set of configurations (cached), and the stream
    of resamples that belongs to the task."""

    def __init__(self, entries: list[Entry], notes: list[str], streams: dict[str, int], cache: ReplicateCache):
        self.lines: dict[str, dict[str, tuple[Entry, list[dict]]]] = {}
        for task, group in by_task(entries).items():
            kept, rows, missing = with_samples(group)
            notes.extend(missing)
            if kept:
                self.lines[task] = {config_label(e): (e, r) for e, r in zip(kept, rows)}
        self.stream, self.cache = streams, cache
        self.aligned: dict[tuple, Aligned] = {}

    def replicates(self, task: str, models: tuple[str, ...], options: ReportOptions) -> tuple[Aligned, np.ndarray]:
        if (task, models) not in self.aligned:
            pairs = [self.lines[task][m] for m in models]
            self.aligned[(task, models)] = align(task, [e for e, _ in pairs], [r for _, r in pairs])
        aligned = self.aligned[(task, models)]
        return aligned, self.cache.replicates(aligned, self.stream[task])


def rank_rows(scope: str, models: tuple[str, ...], values: np.ndarray) -> list[RankRow]:
    """Rows of one scope from (1 + B, M) values (row 0 the point estimate), best first."""
    point = values[0]
    rank = replicate_ranks(point[None, :])[0]
    resampled = values[1:]
    resampled = resampled[np.isfinite(resampled).any(axis=1)] if resampled.size else resampled
    ranks = replicate_ranks(resampled) if len(resampled) else rank[None, :]
    first = share_first(resampled) if len(resampled) else share_first(point[None, :])
    intervals = [rank_interval(ranks[:, j]) for j in range(len(models))]
    leaders = [j for j in range(len(models)) if rank[j] == 1]
    reach = max(intervals[j][1] for j in leaders) if leaders else 0
    rows = []
    for j, model in enumerate(models):
        status = "leader" if j in leaders else ("tied" if intervals[j][0] <= reach else "")
        rows.append(RankRow(scope, model, float(point[j]) if np.isfinite(point[j]) else None, int(rank[j]),
                            *intervals[j], float(first[j]), status))
    return sorted(rows, key=lambda r: (r.rank, r.model))


def _scope(name: str, tasks: list[str], data: _Tasks, options: ReportOptions, notes: list[str]) -> list[RankRow]:
    """One scope over ``tasks``: the configurations with samples on any of them, on the tasks all of them have."""
    tasks = [t for t in tasks if t in data.lines]
    models = tuple(sorted({m for t in tasks for m in data.lines[t]}))
    shared = [t for t in tasks if all(m in data.lines[t] for m in models)]
    if len(models) < 2 or not shared:
        if len(models) >= 2:
            notes.append(f"{name}: no task that all {len(models)} configurations have samples for; not ranked")
        return []
    if len(shared) < len(tasks):
        notes.append(f"{name}: {len(tasks) - len(shared)} of {len(tasks)} task(s) left out (not every "
                     f"configuration has samples for them: {', '.join(sorted(set(tasks) - set(shared)))})")
    per_task = [data.replicates(t, models, options) for t in shared]
    empty = [a.task for a, _ in per_task if not (a.y.size and 0 < a.y.sum() < a.y.size)]
    if empty:
        notes.append(f"{name}: {len(empty)} task(s) left out, no image of both classes scored by every "
                     f"configuration: {', '.join(empty)}")
        per_task = [(a, v) for a, v in per_task if a.task not in empty]
    if not per_task:
        return []
    dropped = sum(a.dropped for a, _ in per_task)
    if dropped:
        notes.append(f"{name}: {dropped} image(s) dropped, not scored by every configuration")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a replicate in which no task has an AUROC
        values = np.nanmean(np.stack([v for _, v in per_task]), axis=0)
    return rank_rows(name, models, values)


def ranking(collection: Collection, options: ReportOptions, cache: ReplicateCache | None = None) -> Ranking:
    """Every scope: ``overall``, ``target:<name>`` per target, ``task:<name>`` per task; trained configurations
    ranked among themselves, untrained baselines apart (their scopes prefixed ``untrained:``)."""
    out = Ranking()
    pairing = compared(collection, options)
    entries = pairing.entries
    streams, cache = task_streams(entries), cache or ReplicateCache(options.n_boot, options.seed)
    for untrained, prefix in ((False, ""), (True, "untrained:")):
        data = _Tasks([e for e in entries if bool(e.line.untrained) == untrained], out.notes, streams, cache)
        tasks = sorted(data.lines)
        targets = sorted({_target(data, t) or "" for t in tasks} - {""})
        out.rows += _scope(f"{prefix}overall", tasks, data, options, out.notes)
        for target in targets:
            out.rows += _scope(f"{prefix}target:{target}", [t for t in tasks if _target(data, t) == target], data,
                               options, out.notes)
        for task in tasks:
            out.rows += _scope(f"{prefix}task:{task}", [task], data, options, out.notes)
    out.notes += pairing.notes()
    return out


def _target(data: _Tasks, task: str) -> str | None:
    return next(iter(data.lines[task].values()))[0].line.target


def ranks_table(result: Ranking, n_boot: int) -> Table:
    table = Table(COLUMNS, title=f"Rank intervals (paired patient bootstrap, {n_boot} resamples; AUROC)")
    for r in result.rows:
        table.add(r.scope, r.model, r.rank, r.rank_low, r.rank_high, r.p_first)
    tied = [f"{r.scope}: {r.model}" for r in result.rows if r.tied]
    table.notes = list(result.notes)
    if tied:
        table.notes.append("statistically tied with the leader (rank intervals overlap): " + "; ".join(tied))
    return table


@dataclass(frozen=True)
class RankIntervals:
    """``focus-eval report ranks``."""

    name: str = "ranks"
    summary: str = ("rank intervals and P(first) by paired patient bootstrap, overall, per target and per task; "
                    "ties with the leader marked")
    inputs: tuple[str, ...] = ("results",)

    varies: str = "configuration"

    def compute(self, collection: Collection, options: ReportOptions = ReportOptions()) -> Table:
        if not compared(collection, options).entries:
            raise FocusError("no binary results lines under " + ", ".join(map(str, collection.paths)))
        result = ranking(collection, options)
        table = ranks_table(result, options.n_boot)
        if not result.rows:
            table.notes.append("nothing to rank: no two trained (or two untrained) configurations have test samples "
                               "on a shared binary task")
        return table


ANALYSIS = RankIntervals()

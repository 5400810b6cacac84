"""Pairwise AUROC differences: for every pair of configurations on every binary task both have samples for,
delta = AUROC(a) - AUROC(b) on the images both scored, with a paired patient-clustered bootstrap interval and
bootstrap-percentile p (``metrics.bootstrap``: one resample of patients applied to both), DeLong's z test beside
it (image-level, from DeLong's covariance of correlated AUROCs), and both adjustments for the number of
comparisons shown: Holm's step-down (family-wise error) and Benjamini-Hochberg's q (false discovery rate, the
``q`` column). A difference is called significant when q < 0.05 and its interval excludes zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
from scipy.stats import norm

from focus_eval.analysis.base import ReportOptions, Table
from focus_eval.analysis.samplesets import (Aligned, ReplicateCache, align, by_task, compared_entries, task_streams,
                                            with_samples)
from focus_eval.analysis.significance import SIGNIFICANCE_Q
from focus_eval.errors import FocusError
from focus_eval.metrics.bootstrap import bh_qvalues, bootstrap_p, summarize
from focus_eval.metrics.paired import delong, holm
from focus_eval.results.collect import Collection, Entry

COLUMNS = ("task", "model_a", "model_b", "delta", "ci_low", "ci_high", "p", "p_delong", "q", "p_holm")


@dataclass
class PairRow:
    """One comparison: AUROC(a) - AUROC(b) on ``n`` shared images of one task."""

    task: str
    target: str | None
    model_a: str
    model_b: str
    auroc_a: float | None
    auroc_b: float | None
    delta: float | None
    ci: list[float | None]
    p: float | None
    p_delong: float | None
    n: int
    dropped: int
    q: float | None = None
    p_holm: float | None = None

    @property
    def significant(self) -> bool:
        excludes = None not in self.ci and (self.ci[0] > 0 or self.ci[1] < 0)
        return self.q is not None and self.q < SIGNIFICANCE_Q and excludes

    @property
    def winner(self) -> str | None:
        if not self.significant or self.delta is None:
            return None
        return self.model_a if self.delta > 0 else self.model_b


@dataclass
class Pairwise:
    rows: list[PairRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def task(self, name: str) -> list[PairRow]:
        return [r for r in self.rows if r.task == name]


def _pair(aligned: Aligned, values: np.ndarray, cov: np.ndarray | None, i: int, j: int, target) -> PairRow:
    """Configuration i against j of ``aligned``, from their replicates and DeLong's covariance."""
    deltas = values[:, i] - values[:, j]
    delta, ci = summarize(deltas)
    p_delong = None
    if cov is not None and delta is not None:
        variance = cov[i, i] + cov[j, j] - 2 * cov[i, j]
        p_delong = float(2 * norm.sf(abs(delta) / np.sqrt(variance))) if variance > 1e-15 else None
    a, b = (float(v) if np.isfinite(v) else None for v in values[0, [i, j]])
    return PairRow(aligned.task, target, aligned.labels[i], aligned.labels[j], a, b, delta, ci,
                   bootstrap_p(deltas[1:]) if delta is not None else None, p_delong, aligned.n, aligned.dropped)


def _delong_cov(aligned: Aligned) -> np.ndarray | None:
    if min(aligned.y.sum(), (1 - aligned.y).sum()) < 2:
        return None
    return delong(aligned.y, aligned.scores)[1]


def task_pairs(task: str, entries: list[Entry], rows: list[list[dict]], cache: ReplicateCache,
               stream: int) -> list[PairRow]:
    """Every pair of one task's configurations. When all scored the same images the replicates and DeLong's
    covariance are computed once for all; otherwise each pair is aligned on the images both scored."""
    target = entries[0].line.target
    joint = align(task, entries, rows)
    if joint.dropped == 0:
        values, cov = cache.replicates(joint, stream), _delong_cov(joint)
        return [_pair(joint, values, cov, i, j, target) for i, j in combinations(range(len(entries)), 2)]
    out = []
    for i, j in combinations(range(len(entries)), 2):
        aligned = align(task, [entries[i], entries[j]], [rows[i], rows[j]])
        out.append(_pair(aligned, cache.replicates(aligned, stream), _delong_cov(aligned), 0, 1, target))
    return out


def pairwise(collection: Collection, options: ReportOptions, cache: ReplicateCache | None = None) -> Pairwise:
    """Every pair on every task; q and Holm's p over all the comparisons returned."""
    out = Pairwise()
    entries = compared_entries(collection, options)
    streams, cache = task_streams(entries), cache or ReplicateCache(options.n_boot, options.seed)
    for task, group in by_task(entries).items():
        kept, rows, missing = with_samples(group)
        out.notes.extend(missing)
        if len(kept) > 1:
            out.rows += task_pairs(task, kept, rows, cache, streams[task])
    for r, q, h in zip(out.rows, bh_qvalues([r.p for r in out.rows]), holm([r.p for r in out.rows])):
        r.q, r.p_holm = q, h
    dropped = sum(r.dropped for r in out.rows)
    if dropped:
        out.notes.append(f"{dropped} image(s) left out of comparisons: scored by one configuration of a pair only")
    if out.rows:
        out.notes.append(f"q: Benjamini-Hochberg over the {len(out.rows)} comparisons; p_holm: Holm over the same")
    return out


def pairwise_table(result: Pairwise, n_boot: int) -> Table:
    table = Table(COLUMNS, title=f"Pairwise AUROC differences (a - b), paired patient bootstrap ({n_boot} "
                                 "resamples) and DeLong", notes=list(result.notes))
    for r in result.rows:
        table.add(r.task, r.model_a, r.model_b, r.delta, *r.ci, r.p, r.p_delong, r.q, r.p_holm)
    return table


@dataclass(frozen=True)
class Matrix:
    """Per target: for each ordered pair (row, column), the tasks where row's AUROC is significantly higher, and
    the tasks both have."""

    target: str
    models: list[str]
    wins: dict[tuple[str, str], int]
    shared: dict[tuple[str, str], int]


def matrices(result: Pairwise) -> list[Matrix]:
    out = []
    for target in sorted({r.target or "" for r in result.rows}):
        rows = [r for r in result.rows if (r.target or "") == target]
        models = sorted({m for r in rows for m in (r.model_a, r.model_b)})
        wins: dict[tuple[str, str], int] = {}
        shared: dict[tuple[str, str], int] = {}
        for r in rows:
            for a, b in ((r.model_a, r.model_b), (r.model_b, r.model_a)):
                shared[(a, b)] = shared.get((a, b), 0) + 1
                wins[(a, b)] = wins.get((a, b), 0) + (r.winner == a)
        out.append(Matrix(target, models, wins, shared))
    return out


@dataclass(frozen=True)
class PairwiseComparisons:
    """``focus-eval report pairwise``."""

    name: str = "pairwise"
    summary: str = ("AUROC difference of every pair of configurations per task: paired bootstrap interval and p, "
                    "DeLong's p, Holm and Benjamini-Hochberg adjustment")
    inputs: tuple[str, ...] = ("results",)

    def compute(self, collection: Collection, options: ReportOptions = ReportOptions()) -> Table:
        result = pairwise(collection, options)
        if not result.rows:
            raise FocusError("no two configurations with test samples on a shared binary task under "
                             + ", ".join(map(str, collection.paths)))
        return pairwise_table(result, options.n_boot)


ANALYSIS = PairwiseComparisons()

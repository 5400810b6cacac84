"""Pairwise AUROC differences: for every pair of configurations on every binary task both have samples for,
delta = AUROC(a) - AUROC(b) on the images both scored, with a paired patient-clustered bootstrap interval and
bootstrap-percentile p (``metrics.bootstrap``: one resample of patients applied to both), DeLong's z test beside
it (image-level, from DeLong's covariance of correlated AUROCs), and both adjustments for the number of
comparisons shown: Holm's step-down (family-wise error) and Benjamini-Hochberg's q (false discovery rate, the
``q`` column). A difference is called significant when q < 0.05 and its interval excludes zero.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
from scipy.stats import norm

from focus_eval.analysis.base import ReportOptions, Table
from focus_eval.analysis.samplesets import (Aligned, ReplicateCache, align, by_task, compared, config_label,
                                            score_of, task_streams, with_samples)
from focus_eval.analysis.significance import SIGNIFICANCE_Q
from focus_eval.errors import FocusError
from focus_eval.metrics.bootstrap import bh_qvalues
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


def _pairs(aligned: Aligned, values: np.ndarray, cov: np.ndarray | None, pairs: list[tuple[int, int]],
           target) -> list[PairRow]:
    """Configurations i against j of ``aligned`` for each (i, j), from their replicates (row 0 the point
    estimates) and DeLong's covariance, all pairs at once."""
    i, j = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    deltas = values[:, i] - values[:, j]
    rest = deltas[1:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a pair without a defined replicate
        low, high = np.nanpercentile(rest, [2.5, 97.5], axis=0) if len(rest) else (np.full(len(pairs), np.nan),) * 2
    b = np.isfinite(rest).sum(axis=0)
    p_boot = np.minimum(1.0, 2 * np.minimum((1 + (rest <= 0).sum(axis=0)) / (b + 1), (1 + (rest >= 0).sum(axis=0)) / (b + 1)))
    p_delong = np.full(len(pairs), np.nan)
    if cov is not None:
        variance = cov[i, i] + cov[j, j] - 2 * cov[i, j]
        ok = variance > 1e-15
        p_delong[ok] = 2 * norm.sf(np.abs(deltas[0, ok]) / np.sqrt(variance[ok]))
    out = []
    for k, (a, c) in enumerate(pairs):
        delta = _number(deltas[0, k])
        ci = [None, None] if delta is None or not b[k] else [float(low[k]), float(high[k])]
        out.append(PairRow(aligned.task, target, aligned.labels[a], aligned.labels[c], _number(values[0, a]),
                           _number(values[0, c]), delta, ci, float(p_boot[k]) if delta is not None and b[k] else None,
                           _number(p_delong[k]) if delta is not None else None, aligned.n, aligned.dropped))
    return out


def _number(value) -> float | None:
    return float(value) if np.isfinite(value) else None


def _delong_cov(aligned: Aligned) -> np.ndarray | None:
    if min(aligned.y.sum(), (1 - aligned.y).sum()) < 2:
        return None
    return delong(aligned.y, aligned.scores)[1]


def _image_sets(rows: list[list[dict]]) -> list[list[int]]:
    """Configurations grouped by the images (and labels) they scored: within a group every pair shares them."""
    groups: dict[int, list[int]] = {}
    for k, found in enumerate(rows):
        key = hash(tuple(sorted((str(r["image_id"]), r.get("label")) for r in found if score_of(r, False) is not None)))
        groups.setdefault(key, []).append(k)
    return list(groups.values())


def task_pairs(task: str, entries: list[Entry], rows: list[list[dict]], cache: ReplicateCache,
               stream: int) -> list[PairRow]:
    """Every pair of one task's configurations, each on the images both scored. Configurations that scored the
    same images form a group; the pairs of two groups (or within one) share one alignment, one set of replicates
    and one DeLong covariance."""
    target, groups, out = entries[0].line.target, _image_sets(rows), []
    for g, first in enumerate(groups):
        for second in groups[g:]:
            members = first if second is first else first + second
            aligned = align(task, [entries[k] for k in members], [rows[k] for k in members])
            if second is first:
                pairs = list(combinations(range(len(first)), 2))
            else:
                pairs = [(a, len(first) + c) for a in range(len(first)) for c in range(len(second))]
            if pairs:
                out += _pairs(aligned, cache.replicates(aligned, stream), _delong_cov(aligned), pairs, target)
    order = {label: k for k, label in enumerate(config_label(e) for e in entries)}
    for r in out:  # a before b in name order, whichever group came first
        if order[r.model_a] > order[r.model_b]:
            r.model_a, r.model_b, r.auroc_a, r.auroc_b = r.model_b, r.model_a, r.auroc_b, r.auroc_a
            r.delta = None if r.delta is None else -r.delta
            r.ci = [None, None] if None in r.ci else [-r.ci[1], -r.ci[0]]
    return sorted(out, key=lambda r: (order[r.model_a], order[r.model_b]))


def pairwise(collection: Collection, options: ReportOptions, cache: ReplicateCache | None = None) -> Pairwise:
    """Every pair on every task; q and Holm's p over all the comparisons returned."""
    out = Pairwise()
    pairing = compared(collection, options)
    entries = pairing.entries
    streams, cache = task_streams(entries), cache or ReplicateCache(options.n_boot, options.seed)
    alone = []
    for task, group in by_task(entries).items():
        kept, rows, missing = with_samples(group)
        out.notes.extend(missing)
        if len(kept) > 1:
            out.rows += task_pairs(task, kept, rows, cache, streams[task])
        else:
            alone += [f"{config_label(e)} on {task}" for e in kept]
    for r, q, h in zip(out.rows, bh_qvalues([r.p for r in out.rows]), holm([r.p for r in out.rows])):
        r.q, r.p_holm = q, h
    dropped = sum(r.dropped for r in out.rows)
    if dropped:
        out.notes.append(f"{dropped} image(s) left out of comparisons: scored by one configuration of a pair only")
    if out.rows:
        out.notes.append(f"q: Benjamini-Hochberg over the {len(out.rows)} comparisons; p_holm: Holm over the same")
    if alone:
        out.notes.append(f"{len(alone)} line(s) alone on their task with samples, nothing to compare them with: "
                         + "; ".join(alone))
    out.notes += pairing.notes()
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
    varies: str = "configuration"

    def compute(self, collection: Collection, options: ReportOptions = ReportOptions()) -> Table:
        result = pairwise(collection, options)
        if not result.rows:
            raise FocusError("no two configurations with test samples on a shared binary task under "
                             + ", ".join(map(str, collection.paths)))
        return pairwise_table(result, options.n_boot)


ANALYSIS = PairwiseComparisons()

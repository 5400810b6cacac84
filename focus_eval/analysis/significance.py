"""The statistics the pages and reports state: shared ranks for ties, the interval of a mean of task scores,
and when a comparison may be called significant."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import fmean
from typing import Iterable, Sequence

import numpy as np

from focus_eval.metrics.bootstrap import mean_of_tasks
from focus_eval.results.schema import LOWER_IS_BETTER

SIGNIFICANCE_Q = 0.05
# A mean over fewer comparisons than this says little about in-domain vs out-of-domain transfer in general.
MIN_COMPARISONS = 3
RANK_DIGITS = 3


def competition_ranks(values: Sequence[float | None], digits: int = RANK_DIGITS,
                      lower_is_better: bool = False) -> list[int | None]:
    """Ranks 1, 2, 2, 4 ...: values equal at the shown precision share a rank; a missing value has none."""
    keyed = [(round(v, digits) * (1 if lower_is_better else -1), i) for i, v in enumerate(values) if v is not None]
    keyed.sort()
    ranks: list[int | None] = [None] * len(values)
    previous, rank = None, 0
    for position, (key, index) in enumerate(keyed, start=1):
        if key != previous:
            rank, previous = position, key
        ranks[index] = rank
    return ranks


@dataclass(frozen=True)
class Mean:
    """A mean of task scores with its 95% interval (None when some task has no bootstrap replicates) and its
    task count."""

    value: float | None
    ci: tuple[float, float] | None
    n: int


def mean_of_scores(scores: Iterable[tuple[float | None, np.ndarray | None]]) -> Mean:
    """Unweighted mean of the task scores; its interval is the one rule for a mean of task scores that group
    lines use (``metrics.bootstrap.mean_of_tasks``): replicate b of the mean is the mean of the tasks' bootstrap
    replicate b, each task resampled over its own patients. ``scores`` are (value, replicates) pairs, the
    replicates with the point estimate first, or None when the task's samples are not at hand."""
    present = [(v, r) for v, r in scores if v is not None]
    if not present:
        return Mean(None, None, 0)
    value = fmean(v for v, _ in present)
    if any(r is None for _, r in present):
        return Mean(value, None, len(present))
    ci = mean_of_tasks([r for _, r in present])[1]
    return Mean(value, None if None in ci else (ci[0], ci[1]), len(present))


@dataclass(frozen=True)
class Verdict:
    """What a comparison page says about one delta: a status, the words shown, and the style class."""

    status: str  # better, worse, not-significant, underpowered, no-estimate
    text: str

    @property
    def significant(self) -> bool:
        return self.status in ("better", "worse")


def verdict(metric: str, delta: float | None, ci: Sequence[float | None] | None, q: float | None,
            underpowered: bool) -> Verdict:
    """Significant only when q < 0.05, the comparison is powered and its interval excludes zero; the direction
    then follows the metric (for ECE and gaps, lower is better)."""
    if delta is None:
        return Verdict("no-estimate", "no estimate")
    if underpowered:
        return Verdict("underpowered", "not significant (underpowered)")
    excludes_zero = bool(ci) and None not in ci and (ci[0] > 0 or ci[1] < 0)
    if q is None or q >= SIGNIFICANCE_Q or not excludes_zero or delta == 0:
        return Verdict("not-significant", "not significant")
    improved = (delta < 0) if metric in LOWER_IS_BETTER else (delta > 0)
    return Verdict("better", "\u25b2 better, significant") if improved else \
        Verdict("worse", "\u25bc worse, significant")

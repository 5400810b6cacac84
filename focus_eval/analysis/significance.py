"""The statistics the pages and reports state: shared ranks for ties, the interval of a mean of task scores,
and when a comparison may be called significant."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import fmean
from typing import Iterable, Sequence

from focus_eval.results.schema import LOWER_IS_BETTER

SIGNIFICANCE_Q = 0.05
Z95 = 1.959964
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
    """A mean of task scores with a 95% interval (None when some task has no interval) and its task count."""

    value: float | None
    ci: tuple[float, float] | None
    n: int


def mean_with_interval(pairs: Iterable[tuple[float | None, Sequence[float | None] | None]],
                       low: float = 0.0, high: float = 1.0) -> Mean:
    """Unweighted mean of the values; its interval combines the tasks' 95% intervals as independent normal
    errors (standard error = interval width / (2 x 1.96)), clipped to [low, high]."""
    present = [(v, ci) for v, ci in pairs if v is not None]
    if not present:
        return Mean(None, None, 0)
    mean = fmean(v for v, _ in present)
    if any(not ci or None in ci for _, ci in present):
        return Mean(mean, None, len(present))
    se = math.sqrt(sum(((ci[1] - ci[0]) / (2 * Z95)) ** 2 for _, ci in present)) / len(present)
    return Mean(mean, (max(low, mean - Z95 * se), min(high, mean + Z95 * se)), len(present))


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

"""The statistics the pages state: shared ranks for ties, the interval of a mean of task scores, when a
comparison may be called significant, and numbers printed with enough digits to tell small values apart."""

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
# A paired comparison needs 10 positives and 10 negatives to be powered (the SPEC's 10-positive rule).
MIN_POSITIVES = 10
MIN_PAIRED = 2 * MIN_POSITIVES
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


def fmt_signed(value: float | None) -> str:
    """A delta with its sign and enough digits: three decimals from 0.001 on, else two significant digits
    (+1.7e-06), and a plain 0 for an exact zero."""
    if value is None:
        return "\u2014"
    if value == 0:
        return "0"
    if abs(value) >= 0.0005:
        return f"{value:+.3f}"
    return f"{value:+.2g}"


def fmt_p(value: float | None) -> str:
    """A p or q value: three decimals, or two significant digits below 0.001 (so 0.0004 does not read 0)."""
    if value is None:
        return "\u2014"
    if value == 0:
        return "0"
    return f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"


def nice_step(span: float, count: int = 5) -> float:
    """A 1, 2 or 5 x 10^k step that cuts ``span`` into about ``count`` intervals."""
    raw = span / max(count, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def nice_ticks(low: float, high: float, count: int = 5) -> tuple[list[float], float]:
    """Evenly spaced round tick values covering [low, high], and the step between them."""
    if high <= low:
        high = low + 1e-9 if low else 1.0
    step = nice_step(high - low, count)
    first = math.floor(low / step + 1e-9) * step
    ticks, value = [], first
    while value <= high + step * 1e-6:
        ticks.append(0.0 if abs(value) < step * 1e-9 else value)
        value += step
    if ticks[-1] < high - step * 1e-6:
        ticks.append(ticks[-1] + step)
    return ticks, step


def tick_label(value: float, step: float, signed: bool = False) -> str:
    """A tick's text with just the decimals its step needs, so neighbouring ticks never read the same."""
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    if step * 10 ** decimals % 1 > 1e-6:  # e.g. 0.25: one more digit
        decimals += 1
    if value == 0:
        return "0"
    text = f"{value:+.{decimals}f}" if signed else f"{value:.{decimals}f}"
    return text

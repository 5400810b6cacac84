"""Numbers as the pages print them: deltas and p values with enough digits to tell small values apart, and
round axis ticks."""

from __future__ import annotations

import math


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

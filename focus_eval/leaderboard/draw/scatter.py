"""Geometry of the scatter charts of the FOCUS views: one dot per (x, y) pair on shared round-ticked axes, an
optional diagonal (y = x) and a legend. Like ``charts`` and ``figures``, coordinates and plain text only; the
templates draw and escape them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from focus_eval.leaderboard.draw.charts import Text, _r
from focus_eval.leaderboard.draw.figures import Dot
from focus_eval.leaderboard.draw.numbers import nice_ticks, tick_label

LEFT, TOP, BOTTOM_PAD, RIGHT_PAD = 56.0, 24.0, 44.0, 16.0


@dataclass(frozen=True)
class XY:
    """One pair to plot, its tooltip and style class (``series family-vm``, say)."""

    x: float
    y: float
    title: str
    css: str = ""


@dataclass(frozen=True)
class Scatter:
    title: str
    width: float
    height: float
    left: float
    top: float
    right: float
    bottom: float
    dots: list[Dot]
    ticks: list[Text]
    titles: list[Text]
    grid_x: list[float] = field(default_factory=list)
    grid_y: list[float] = field(default_factory=list)
    diagonal: tuple[float, float, float, float] | None = None
    legend: list[Text] = field(default_factory=list)


def _axis(values: Sequence[float], low: float | None, high: float | None) -> tuple[list[float], float]:
    lo = min([*values, *([low] if low is not None else [])], default=0.0)
    hi = max([*values, *([high] if high is not None else [])], default=1.0)
    return nice_ticks(lo, hi if hi > lo else lo + 0.001, 5)


def scatter(points: Sequence[XY], title: str, x_title: str, y_title: str, *, x_range=(None, None),
            y_range=(None, None), diagonal: bool = False, legend: Sequence[tuple[str, str]] = (),
            width: float = 420.0, height: float = 340.0) -> Scatter:
    """Dots on x and y axes covering every value and the given ranges; ``diagonal`` shares one range between
    both axes and draws y = x; ``legend`` is (label, css) pairs written above the plot."""
    xs, ys = [p.x for p in points], [p.y for p in points]
    if diagonal:
        xs = ys = xs + ys
        x_range = y_range = (min(v for v in (x_range[0], y_range[0], 1.0) if v is not None),
                             max(v for v in (x_range[1], y_range[1], 0.0) if v is not None))
    x_ticks, x_step = _axis(xs, *x_range)
    y_ticks, y_step = _axis(ys, *y_range)
    left, right, top, bottom = LEFT, width - RIGHT_PAD, TOP, height - BOTTOM_PAD

    def sx(v: float) -> float:
        return _r(left + (v - x_ticks[0]) / ((x_ticks[-1] - x_ticks[0]) or 1.0) * (right - left))

    def sy(v: float) -> float:
        return _r(bottom - (v - y_ticks[0]) / ((y_ticks[-1] - y_ticks[0]) or 1.0) * (bottom - top))

    dots = [Dot(x=sx(p.x), y=sy(p.y), title=p.title, css=p.css) for p in points]
    ticks = [Text(x=sx(v), y=bottom + 14, text=tick_label(v, x_step), anchor="middle") for v in x_ticks]
    ticks += [Text(x=left - 6, y=sy(v) + 4, text=tick_label(v, y_step), anchor="end") for v in y_ticks]
    titles = [Text(x=(left + right) / 2, y=bottom + 32, text=x_title, anchor="middle", css="axis-title"),
              Text(x=14, y=(top + bottom) / 2, text=y_title, anchor="middle", rotate=-90.0, css="axis-title")]
    line = None
    if diagonal:
        lo, hi = max(x_ticks[0], y_ticks[0]), min(x_ticks[-1], y_ticks[-1])
        line = (sx(lo), sy(lo), sx(hi), sy(hi))
    keys, x = [], left
    for label, css in legend:
        keys.append(Text(x=x, y=top - 10, text=label, css=f"legend {css}"))
        x += 12 + 7 * len(label)
    return Scatter(title=title, width=width, height=height, left=left, top=top, right=right, bottom=bottom,
                   dots=dots, ticks=ticks, titles=titles, grid_x=[sx(v) for v in x_ticks],
                   grid_y=[sy(v) for v in y_ticks], diagonal=line, legend=keys)

"""Geometry of the strip charts of the paper's views: one row of dots per group (family, domain, method...),
rows gathered under band headings, a titled value axis with round ticks, and a mean marker per row.

Like ``charts``, this computes coordinates and plain text only; the templates draw and escape them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import fmean
from typing import Sequence

from focus_eval.leaderboard.draw.charts import Text, _clip, _r
from focus_eval.leaderboard.draw.numbers import nice_ticks, tick_label

ROW_H, BAND_H, LEFT, RIGHT_PAD, TOP = 26.0, 24.0, 210.0, 24.0, 20.0


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    title: str
    css: str = ""


@dataclass(frozen=True)
class Point:
    """One value to plot: where it goes, what its tooltip says, and a style class (series, status)."""

    value: float
    title: str
    css: str = ""


@dataclass(frozen=True)
class StripGroup:
    """A row of dots under a band heading (the band is drawn once, above its first row)."""

    band: str
    label: str
    points: list[Point]
    mean: bool = True


@dataclass(frozen=True)
class Strip:
    title: str
    width: float
    height: float
    left: float
    right: float
    top: float
    bottom: float
    labels: list[Text]
    bands: list[Text]
    dots: list[Dot]
    means: list[Dot]
    ticks: list[Text]
    grid: list[float]
    x_title: Text
    zero: float | None = None
    rules: list[float] = field(default_factory=list)
    reference: Text | None = None


def strip(groups: Sequence[StripGroup], title: str, x_title: str, low: float | None = None,
          high: float | None = None, signed: bool = False, width: float = 720.0,
          reference: float | None = None) -> Strip:
    """Dots of every group on one shared value axis, which covers ``low``, ``high`` and every value;
    ``reference`` draws a dashed line (chance, for AUROC)."""
    values = [p.value for g in groups for p in g.points]
    lo = min([*values, *([low] if low is not None else [])], default=0.0)
    hi = max([*values, *([high] if high is not None else [])], default=1.0)
    if signed:  # deltas: an axis symmetric around zero, so the zero line sits in the middle
        lo, hi = -max(abs(lo), abs(hi)), max(abs(lo), abs(hi))
    ticks, step = nice_ticks(lo, hi if hi > lo else lo + 0.001, 5)
    left, right = LEFT, width - RIGHT_PAD

    def sx(v: float) -> float:
        return _r(left + (v - ticks[0]) / ((ticks[-1] - ticks[0]) or 1.0) * (right - left))

    labels, bands, dots, means, rules, y = [], [], [], [], [], TOP
    band = None
    for group in groups:
        if group.band and group.band != band:
            band = group.band
            bands.append(Text(x=4, y=y + BAND_H * 0.68, text=_clip(band, 60), css="band"))
            rules.append(y + BAND_H - 2)
            y += BAND_H
        mid = y + ROW_H / 2
        labels.append(Text(x=left - 8, y=mid + 4, text=_clip(group.label, 34), anchor="end", title=group.label))
        for i, point in enumerate(group.points):
            jitter = ((i * 7) % 11 - 5) * 1.2  # spreads overlapping dots vertically, the same on every build
            dots.append(Dot(x=sx(point.value), y=_r(mid + jitter), title=point.title, css=point.css))
        if group.points and group.mean:
            mean = fmean(p.value for p in group.points)
            means.append(Dot(x=sx(mean), y=_r(mid), title=f"{group.label}: mean {mean:.3f} of "
                                                              f"{len(group.points)}"))
        y += ROW_H
    bottom = y + 4
    tick_texts = [Text(x=sx(v), y=bottom + 14, text=tick_label(v, step, signed), anchor="middle") for v in ticks]
    axis_title = Text(x=(left + right) / 2, y=bottom + 32, text=x_title, anchor="middle", css="axis-title")
    zero = sx(0.0) if ticks[0] < 0 < ticks[-1] else None
    marker = None
    if reference is not None and ticks[0] <= reference <= ticks[-1]:
        marker = Text(x=sx(reference), y=TOP - 2, text="chance", anchor="middle", css="reference")
    return Strip(title=title, width=width, height=bottom + 40, left=left, right=right, top=TOP, bottom=bottom,
                 labels=labels, bands=bands, dots=dots, means=means, ticks=tick_texts,
                 grid=[sx(v) for v in ticks], x_title=axis_title, zero=zero, rules=rules, reference=marker)

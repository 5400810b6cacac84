"""Chart geometry for the inline SVGs (heatmap, radar, reliability diagram, forest plot).

Functions here only compute coordinates, colours and plain-text labels; the templates draw them, so every
label passes through the template engine's escaping.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

from focus_eval.leaderboard.calibration import Calibration
from focus_eval.leaderboard.groups import Configuration, TaskInfo

# Colour-blind-safe (Okabe-Ito) series colours for the radar chart.
SERIES_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442", "#000000")
# AUROC colour scale: below chance in orange, then light to dark blue from 0.5 to 1.
_SCALE = ((0.5, (239, 243, 255)), (0.7, (158, 202, 225)), (0.85, (49, 130, 189)), (1.0, (8, 48, 107)))
_BELOW_CHANCE = (253, 208, 162)


@dataclass(frozen=True)
class Text:
    x: float
    y: float
    text: str
    href: str | None = None
    anchor: str = "start"
    rotate: float = 0.0
    title: str = ""
    css: str = ""


@dataclass(frozen=True)
class Cell:
    x: float
    y: float
    w: float
    h: float
    fill: str
    text: str
    text_fill: str
    title: str
    css: str = ""


@dataclass(frozen=True)
class Heatmap:
    width: float
    height: float
    cells: list[Cell]
    row_labels: list[Text]
    col_labels: list[Text]
    legend: list[Cell]


def heatmap(configs: Sequence[Configuration], tasks: Sequence[TaskInfo], model_slugs: dict[str, str]) -> Heatmap:
    """Configurations (rows) by tasks (columns), coloured by AUROC; a missing cell is grey with a dash."""
    cell_w, cell_h = 40.0, 24.0
    left = min(330.0, max(120.0, _text_width(max((c.label for c in configs), key=len, default="")) + 14))
    # Column labels run up and to the right at 55 degrees: reserve their height above and their reach beyond.
    label_px = _text_width(max((t.name + " *" for t in tasks), key=len, default=""))
    top, reach = min(200.0, label_px * 0.82 + 14), min(170.0, label_px * 0.58)
    cells, rows = [], []
    by_key = {(c.model, c.method, c.adapter, e.line.task): e for c in configs for e in c.entries}
    for i, config in enumerate(configs):
        y = top + i * cell_h
        rows.append(Text(x=left - 8, y=y + cell_h * 0.68, text=_clip(config.label, 46), anchor="end",
                         href=f"models/{model_slugs[config.model]}.html", title=config.label,
                         css="untrained" if config.untrained else ""))
        for j, task in enumerate(tasks):
            entry = by_key.get((config.model, config.method, config.adapter, task.name))
            cells.append(_heat_cell(left + j * cell_w, y, cell_w, cell_h, config.label, task.name, entry))
    cols = [Text(x=left + (j + 0.5) * cell_w, y=top - 6, text=_clip(t.name + (" *" if t.proxy else ""), 30),
                 href=f"tasks/{t.slug}.html", rotate=-55.0, title=t.name, css="proxy" if t.proxy else "")
            for j, t in enumerate(tasks)]
    grid_bottom = top + len(configs) * cell_h
    return Heatmap(width=left + len(tasks) * cell_w + reach + 8, height=grid_bottom + 46, cells=cells, row_labels=rows,
                   col_labels=cols, legend=_legend(left, grid_bottom + 16))


def _heat_cell(x: float, y: float, w: float, h: float, row: str, task: str, entry) -> Cell:
    value = entry.metric("auroc") if entry is not None else None
    title = f"{row} on {task}: AUROC {_fmt(value)}"
    css = []
    if entry is not None:
        ci = entry.metric_ci("auroc")
        if ci and None not in ci:
            title += f" [{_fmt(ci[0])}, {_fmt(ci[1])}]"
        if entry.underpowered:
            css.append("underpowered")
            title += " (underpowered)"
        if entry.contamination:
            css.append("contaminated")
            title += f" (contaminated: {entry.contamination})"
    if value is None:
        return Cell(x, y, w, h, "#f1f1f1", "\u2014", "#777777", title, " ".join(css + ["missing"]))
    fill = auroc_colour(value)
    text = f"{value:.2f}".lstrip("0") if value < 1 else "1.0"
    return Cell(x, y, w, h, fill, text, _ink(fill), title, " ".join(css))


def _legend(x: float, y: float) -> list[Cell]:
    steps = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    return [Cell(x + i * 44, y, 44, 14, auroc_colour(v), "< 0.5" if v < 0.5 else f"{v:.1f}", _ink(auroc_colour(v)),
                 "AUROC below 0.5 (worse than chance)" if v < 0.5 else f"AUROC {v:.1f}") for i, v in enumerate(steps)]


def auroc_colour(value: float) -> str:
    if value < 0.5:
        return _hex(_BELOW_CHANCE)
    for (v0, c0), (v1, c1) in zip(_SCALE, _SCALE[1:]):
        if value <= v1:
            t = (value - v0) / (v1 - v0)
            return _hex(tuple(round(a + (b - a) * t) for a, b in zip(c0, c1)))
    return _hex(_SCALE[-1][1])


def _hex(rgb) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def _ink(fill: str) -> str:
    r, g, b = (int(fill[i:i + 2], 16) for i in (1, 3, 5))
    return "#ffffff" if 0.299 * r + 0.587 * g + 0.114 * b < 140 else "#1a1a1a"


@dataclass(frozen=True)
class RadarSeries:
    label: str
    colour: str
    polygon: str
    points: list[tuple[float, float, str]]
    values: list[float | None]
    untrained: bool


@dataclass(frozen=True)
class Radar:
    size: float
    axes: list[tuple[float, float, Text]]
    rings: list[str]
    centre: float
    series: list[RadarSeries]
    axis_labels: list[str]


RADAR_AXES = (("accuracy", "Accuracy"), ("auroc", "AUROC"), ("auprc", "AUPRC"), ("calibration", "1 \u2212 ECE"),
              ("fairness", "Fairness"), ("quality", "Quality"), ("shift", "Shift"))


def radar_values(config: Configuration) -> list[float | None]:
    s = config.summary
    ece = s.means["ece"]
    named = {"calibration": None if ece is None else 1.0 - ece, "fairness": s.fairness.value,
             "quality": s.quality.value, "shift": s.shift}
    return [named[k] if k in named else s.means[k] for k, _ in RADAR_AXES]


def radar(configs: Sequence[Configuration], size: float = 420.0) -> Radar:
    """One polygon per configuration on 0..1 axes; a missing value leaves its axis without a vertex."""
    centre, radius = size / 2, size / 2 - 70
    angles = [-math.pi / 2 + 2 * math.pi * i / len(RADAR_AXES) for i in range(len(RADAR_AXES))]
    axes = []
    for (key, label), a in zip(RADAR_AXES, angles):
        lx, ly = centre + (radius + 16) * math.cos(a), centre + (radius + 16) * math.sin(a)
        anchor = "middle" if abs(math.cos(a)) < 0.3 else ("start" if math.cos(a) > 0 else "end")
        axes.append((_r(centre + radius * math.cos(a)), _r(centre + radius * math.sin(a)),
                     Text(x=_r(lx), y=_r(ly + 4), text=label, anchor=anchor)))
    rings = [_polygon([(centre + radius * f * math.cos(a), centre + radius * f * math.sin(a)) for a in angles])
             for f in (0.25, 0.5, 0.75, 1.0)]
    series = []
    for i, config in enumerate(configs):
        values = radar_values(config)
        points = [(centre + radius * v * math.cos(a), centre + radius * v * math.sin(a), f"{label}: {v:.3f}")
                  for v, a, (_, label) in zip(values, angles, RADAR_AXES) if v is not None]
        series.append(RadarSeries(label=config.label, colour=SERIES_COLOURS[i % len(SERIES_COLOURS)],
                                  polygon=_polygon([(x, y) for x, y, _ in points]),
                                  points=[(_r(x), _r(y), t) for x, y, t in points], values=values,
                                  untrained=config.untrained))
    return Radar(size=size, axes=axes, rings=rings, centre=centre, series=series,
                 axis_labels=[label for _, label in RADAR_AXES])


@dataclass(frozen=True)
class Reliability:
    size: float
    left: float
    top: float
    plot: float
    points: list[tuple[float, float, float, str]]
    line: str
    ticks: list[Text] = field(default_factory=list)


def reliability(calibration: Calibration, size: float = 190.0) -> Reliability:
    """Observed positive rate against mean score per bin; dot area follows the bin's row count."""
    left, top, plot = 34.0, 8.0, size - 34.0 - 10.0
    biggest = max((b.count for b in calibration.bins), default=1)

    def at(score: float, rate: float) -> tuple[float, float]:
        return left + score * plot, top + (1 - rate) * plot

    points = []
    for b in calibration.bins:
        x, y = at(b.mean_score, b.mean_label)
        title = (f"scores {b.lower:.1f}\u2013{b.upper:.1f}: n = {b.count}, mean score {b.mean_score:.3f}, "
                 f"positive rate {b.mean_label:.3f}")
        points.append((_r(x), _r(y), _r(2.0 + 4.0 * math.sqrt(b.count / biggest)), title))
    ticks = [Text(x=left + v * plot, y=top + plot + 13, text=f"{v:g}", anchor="middle") for v in (0, 0.5, 1)]
    ticks += [Text(x=left - 5, y=top + (1 - v) * plot + 4, text=f"{v:g}", anchor="end") for v in (0, 0.5, 1)]
    return Reliability(size=size, left=left, top=top, plot=plot, points=points,
                       line=" ".join(f"{x},{y}" for x, y, _, _ in points), ticks=ticks)


@dataclass(frozen=True)
class ForestRow:
    label: str
    y: float
    x: float | None
    lo: float | None
    hi: float | None
    title: str
    css: str


@dataclass(frozen=True)
class Forest:
    width: float
    height: float
    left: float
    right: float
    zero: float
    rows: list[ForestRow]
    ticks: list[Text]


def forest(items: Sequence[tuple[str, float | None, tuple | None, str, str]], width: float = 640.0) -> Forest:
    """Point estimates with intervals around a zero line; items are (label, estimate, ci, tooltip, css)."""
    left, right, row_h = 190.0, width - 20.0, 26.0
    values = [v for _, est, ci, _, _ in items for v in (est, *(ci or ())) if v is not None] or [0.0]
    span = max(abs(min(values)), abs(max(values)), 0.01) * 1.15

    def sx(v: float) -> float:
        return _r(left + (v + span) / (2 * span) * (right - left))

    rows = []
    for i, (label, est, ci, title, css) in enumerate(items):
        lo, hi = (ci if ci else (None, None))
        rows.append(ForestRow(label=label, y=20 + i * row_h, x=None if est is None else sx(est),
                              lo=None if lo is None else sx(lo), hi=None if hi is None else sx(hi),
                              title=title, css=css))
    bottom = 20 + len(items) * row_h
    ticks = [Text(x=sx(v), y=bottom + 14, text=f"{v:+.2f}" if v else "0", anchor="middle")
             for v in (-span, -span / 2, 0.0, span / 2, span)]
    return Forest(width=width, height=bottom + 24, left=left, right=right, zero=sx(0.0), rows=rows, ticks=ticks)


def _text_width(text: str, px_per_char: float = 6.6) -> float:
    """Rough width of 11 px label text; the SVG has no layout engine to ask."""
    return min(len(text), 46) * px_per_char


def _polygon(points: list[tuple[float, float]]) -> str:
    return " ".join(f"{_r(x)},{_r(y)}" for x, y in points)


def _r(value: float) -> float:
    return round(value, 1)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _fmt(value: float | None) -> str:
    return "\u2014" if value is None else f"{value:.3f}"

"""Chart geometry for the inline SVGs (heatmap, radar, reliability diagram, forest plot).

Functions here only compute coordinates, colours and plain-text labels; the templates draw them, so every
label passes through the template engine's escaping.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

from focus_eval.leaderboard.draw.calibration import Calibration
from focus_eval.leaderboard.draw.numbers import nice_ticks, tick_label
from focus_eval.leaderboard.pages.groups import Configuration, TaskInfo
from focus_eval.results.power import MIN_POSITIVES

# Colour-blind-safe (Okabe-Ito) series colours for the radar chart.
SERIES_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442", "#000000")
# AUROC colour scale: below chance in orange, then light to dark blue from 0.5 to 1.
_SCALE = ((0.5, (239, 243, 255)), (0.7, (158, 202, 225)), (0.85, (33, 113, 181)), (1.0, (8, 48, 107)))
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
    bands: list[Text] = field(default_factory=list)
    band_boxes: list[tuple[float, float, float, float]] = field(default_factory=list)


BASELINE_BAND = "Untrained baselines"


def heatmap(configs: Sequence[Configuration], tasks: Sequence[TaskInfo], model_slugs: dict[str, str],
            family_label=str, target_label=str) -> Heatmap:
    """Configurations (rows, in family bands, untrained baselines last) by tasks (columns, in target bands),
    coloured by AUROC; a missing cell is grey with a dash. Each cell's text holds its interval."""
    cell_w, cell_h, band_h = 40.0, 24.0, 20.0
    left = min(330.0, max(120.0, _text_width(max((c.label for c in configs), key=len, default="")) + 14))
    # Column labels run up and to the right at 55 degrees above the target band: reserve their height and reach.
    label_px = _text_width(max((t.name + " *" for t in tasks), key=len, default=""))
    top, reach = min(200.0, label_px * 0.82 + 14) + band_h, min(170.0, label_px * 0.58)
    by_key = {(*c.key, e.line.task): e for c in configs for e in c.entries}
    cells, rows, bands, y = [], [], [], top
    for band, members in _row_bands(configs, family_label):
        bands.append(Text(x=4, y=y + band_h * 0.7, text=band, css="band"))
        y += band_h
        for config in members:
            rows.append(Text(x=left - 8, y=y + cell_h * 0.68, text=_clip(config.label, 46), anchor="end",
                             href=f"models/{model_slugs[config.model]}.html", title=config.label,
                             css="untrained" if config.untrained else ""))
            for j, task in enumerate(tasks):
                entry = by_key.get((*config.key, task.name))
                cells.append(_heat_cell(left + j * cell_w, y, cell_w, cell_h, config.label, task.name, entry))
            y += cell_h
    cols = [Text(x=left + (j + 0.5) * cell_w, y=top - band_h - 6, text=_clip(t.name + (" *" if t.proxy else ""), 30),
                 href=f"tasks/{t.slug}.html", rotate=-55.0, title=t.name, css="proxy" if t.proxy else "")
            for j, t in enumerate(tasks)]
    boxes, column_bands = [], []
    for start, count, target in _runs([t.target for t in tasks]):
        boxes.append((left + start * cell_w, top - band_h - 2, count * cell_w - 1, band_h - 4))
        column_bands.append(Text(x=left + (start + count / 2) * cell_w, y=top - band_h / 2 + 2,
                                 text=_clip(target_label(target), max(3, int(count * cell_w / 7))),
                                 anchor="middle", css="band", title=target_label(target)))
    return Heatmap(width=left + len(tasks) * cell_w + reach + 8, height=y + 8, cells=cells, row_labels=rows,
                   col_labels=cols, legend=_legend(), bands=bands + column_bands, band_boxes=boxes)


def _row_bands(configs: Sequence[Configuration], family_label) -> list[tuple[str, list[Configuration]]]:
    """Consecutive configurations of one family under its name; untrained ones in a band of their own, last."""
    bands: list[tuple[str, list[Configuration]]] = []
    for config in configs:
        if config.untrained:
            continue
        name = family_label(config.family)
        if not bands or bands[-1][0] != name:
            bands.append((name, []))
        bands[-1][1].append(config)
    baselines = [c for c in configs if c.untrained]
    return bands + ([(BASELINE_BAND, baselines)] if baselines else [])


def _runs(values: Sequence) -> list[tuple[int, int, object]]:
    """(start, length, value) of each run of equal neighbouring values."""
    runs: list[tuple[int, int, object]] = []
    for i, value in enumerate(values):
        if runs and runs[-1][2] == value:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1, value)
        else:
            runs.append((i, 1, value))
    return runs


def _heat_cell(x: float, y: float, w: float, h: float, row: str, task: str, entry) -> Cell:
    value = entry.metric("auroc") if entry is not None else None
    title = f"{row} on {task}: AUROC {_fmt(value)}"
    css = []
    if entry is not None:
        ci = entry.metric_ci("auroc")
        title += f", 95% interval [{_fmt(ci[0])}, {_fmt(ci[1])}]" if ci and None not in ci else ", no interval"
        if entry.underpowered:
            css.append("underpowered")
            title += f" (underpowered: fewer than {MIN_POSITIVES} test positives)"
        if entry.contamination:
            css.append("contaminated")
            title += f" (contaminated: {entry.contamination})"
    else:
        title += " (not evaluated)"
    if value is None:
        return Cell(x, y, w, h, "#f1f1f1", "\u2014", "#595959", title, " ".join(css + ["missing"]))
    fill = auroc_colour(value)
    text = f"{value:.2f}".lstrip("0") if value < 1 else "1.0"
    return Cell(x, y, w, h, fill, text, ink(fill), title, " ".join(css))


def _legend() -> list[Cell]:
    steps = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    return [Cell(0, 0, 44, 14, auroc_colour(v), "< 0.5" if v < 0.5 else f"{v:.1f}", ink(auroc_colour(v)),
                 "AUROC below 0.5 (worse than chance)" if v < 0.5 else f"AUROC {v:.1f}") for v in steps]


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


def luminance(colour: str) -> float:
    """WCAG relative luminance of a ``#rrggbb`` colour."""
    def channel(c: int) -> float:
        v = c / 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(int(colour[i:i + 2], 16)) for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two ``#rrggbb`` colours (1 to 21)."""
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def ink(fill: str) -> str:
    """White or black text, whichever contrasts more with ``fill`` (one of them always reaches 4.5:1)."""
    return max(("#ffffff", "#000000"), key=lambda text: contrast(fill, text))


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
    titles: list[Text] = field(default_factory=list)
    height: float = 0.0


def reliability(calibration: Calibration, size: float = 200.0) -> Reliability:
    """Observed positive rate against mean score per bin; dot area follows the bin's row count."""
    left, top, plot = 44.0, 8.0, size - 44.0 - 10.0
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
    titles = [Text(x=left + plot / 2, y=top + plot + 28, text="mean predicted score", anchor="middle", css="axis-title"),
              Text(x=12, y=top + plot / 2, text="observed positive rate", anchor="middle", rotate=-90.0,
                   css="axis-title")]
    return Reliability(size=size, left=left, top=top, plot=plot, points=points,
                       line=" ".join(f"{x},{y}" for x, y, _, _ in points), ticks=ticks, titles=titles,
                       height=top + plot + 34)


@dataclass(frozen=True)
class ForestRow:
    label: str
    y: float
    x: float | None
    lo: float | None
    hi: float | None
    title: str
    css: str
    lines: tuple[str, ...] = ()  # the label as drawn: one line, or two


@dataclass(frozen=True)
class Forest:
    width: float
    height: float
    left: float
    right: float
    zero: float
    rows: list[ForestRow]
    ticks: list[Text]
    title: Text | None = None


def forest(items: Sequence[tuple[str, float | None, tuple | None, str, str]], width: float = 640.0,
           x_title: str = "delta (fine-tuned \u2212 base)") -> Forest:
    """Point estimates with intervals around a zero line; items are (label, estimate, ci, tooltip, css).
    Ticks are round values with the digits their spacing needs, so no two read the same. A label longer than
    ``FOREST_LINE`` characters is drawn on two lines, split at a `` \u00b7 `` (each line shortened to that length
    if it must be; the row's tooltip has it whole), and the label column is as wide as its longest line: no label
    starts left of the chart, and on a phone the labels fit the screen while the plot beside them scrolls."""
    lines = [_label_lines(label) for label, *_ in items]
    longest = max((len(line) for parts in lines for line in parts), default=0)
    left = max(190.0, longest * FOREST_PX_PER_CHAR + 16)
    width += left - 190.0
    right, row_h = width - 20.0, 36.0 if any(len(parts) > 1 for parts in lines) else 26.0
    values = [v for _, est, ci, _, _ in items for v in (est, *(ci or ())) if v is not None] or [0.0]
    span = max(abs(min(values)), abs(max(values))) * 1.15 or 0.001
    tick_values, step = nice_ticks(-span, span, 4)
    low, high = tick_values[0], tick_values[-1]

    def sx(v: float) -> float:
        return _r(left + (v - low) / (high - low) * (right - left))

    rows = []
    for i, (label, est, ci, title, css) in enumerate(items):
        lo, hi = (ci if ci else (None, None))
        rows.append(ForestRow(label=label, y=20 + i * row_h, x=None if est is None else sx(est),
                              lo=None if lo is None else sx(lo), hi=None if hi is None else sx(hi),
                              title=title, css=css, lines=lines[i]))
    bottom = 20 + len(items) * row_h
    ticks = [Text(x=sx(v), y=bottom + 14, text=tick_label(v, step, signed=True), anchor="middle")
             for v in tick_values]
    title = Text(x=(left + right) / 2, y=bottom + 32, text=x_title, anchor="middle", css="axis-title")
    return Forest(width=width, height=bottom + 40, left=left, right=right, zero=sx(0.0), rows=rows, ticks=ticks,
                  title=title)


FOREST_LINE = 36  # the longest line of a forest label (12 px text: about 260 px, within a phone's screen)
FOREST_PX_PER_CHAR = 7.2  # 12 px label text, a little wider than the average character, so no label is cut


def _label_lines(label: str) -> tuple[str, ...]:
    """A forest label as one line, or two split at the `` \u00b7 `` that leaves the longer line shortest."""
    if len(label) <= FOREST_LINE:
        return (label,)
    parts = label.split(" \u00b7 ")
    if len(parts) < 2:
        return (_clip(label, FOREST_LINE),)
    joined = [(" \u00b7 ".join(parts[:k]), " \u00b7 ".join(parts[k:])) for k in range(1, len(parts))]
    first, second = min(joined, key=lambda halves: max(map(len, halves)))
    return (_clip(first, FOREST_LINE), _clip(second, FOREST_LINE))


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

"""The figures of the statistics pages as inline SVG (every text escaped): rank intervals, a pairwise win matrix,
operating points against a screening endpoint."""

from __future__ import annotations

from typing import Sequence

from markupsafe import Markup, escape

from focus_eval.leaderboard.draw.charts import auroc_colour, ink

ROW = 22.0
LABEL_CHARS = 44


def _clip(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "\u2026"


def _svg(width: float, height: float, css: str, title: str, body: list[str]) -> Markup:
    head = (f'<svg class="chart {css}" viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" '
            f'height="{height:.0f}" role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>')
    return Markup(head + "".join(body) + "</svg>")


def rank_intervals(rows: Sequence, title: str) -> Markup:
    """One line per configuration from its rank interval's low to high end, a dot at its rank; the leader and
    those tied with it drawn in the accent colour."""
    n_ranks = max([r.rank_high for r in rows] + [1])
    left, width = 300.0, 320.0
    step = width / max(n_ranks - 1, 1)
    x = lambda rank: left + (rank - 1) * step  # noqa: E731
    body = [f'<text class="axis-title" x="{left + width / 2:.1f}" y="14" text-anchor="middle">rank (1 = best); '
            'line: 95% rank interval</text>']
    for k in range(1, n_ranks + 1):
        body.append(f'<text class="tick" x="{x(k):.1f}" y="30" text-anchor="middle">{k}</text>'
                    f'<line class="grid" x1="{x(k):.1f}" x2="{x(k):.1f}" y1="34" y2="{40 + ROW * len(rows):.1f}"/>')
    for i, r in enumerate(rows):
        y = 46 + ROW * i
        css = "series-accent" if r.status in ("leader", "tied") else "series-muted"
        tip = escape(f"{r.model}: rank {r.rank} ({r.rank_low}\u2013{r.rank_high}), P(first) {r.p_first:.3f}"
                     + (", tied with the leader" if r.tied else ""))
        body.append(f'<g class="{css}"><title>{tip}</title>'
                    f'<text x="{left - 8:.1f}" y="{y + 4:.1f}" text-anchor="end">{escape(_clip(r.model))}</text>'
                    f'<line class="interval" x1="{x(r.rank_low):.1f}" x2="{x(r.rank_high):.1f}" y1="{y:.1f}" '
                    f'y2="{y:.1f}" stroke="currentColor" stroke-width="3"/>'
                    f'<circle cx="{x(r.rank):.1f}" cy="{y:.1f}" r="5" fill="currentColor"/></g>')
    return _svg(left + width + 30, 52 + ROW * len(rows), "rank-intervals", title, body)


def win_matrix(matrix, title: str) -> Markup:
    """Cell (row, column): on how many of the tasks both have the row's AUROC is significantly higher; the
    shade is the share of those tasks."""
    models = matrix.models
    cell, left, top = 30.0, 300.0, 40.0
    body = [f'<text class="axis-title" x="{left:.1f}" y="14">row significantly better than column (tasks won / '
            'shared)</text>']
    for j, m in enumerate(models):
        body.append(f'<text class="tick" x="{left + cell * j + cell / 2:.1f}" y="{top - 6:.1f}" '
                    f'text-anchor="middle"><title>{escape(m)}</title>{j + 1}</text>')
    for i, a in enumerate(models):
        y = top + cell * i
        body.append(f'<text x="{left - 8:.1f}" y="{y + cell / 2 + 4:.1f}" text-anchor="end">{i + 1}. '
                    f'{escape(_clip(a))}</text>')
        for j, b in enumerate(models):
            shared = matrix.shared.get((a, b), 0)
            if i == j or not shared:
                continue
            wins = matrix.wins.get((a, b), 0)
            fill = auroc_colour(0.5 + 0.5 * wins / shared)
            body.append(f'<g><title>{escape(f"{a} vs {b}: better on {wins} of {shared} task(s)")}</title>'
                        f'<rect x="{left + cell * j:.1f}" y="{y:.1f}" width="{cell - 2:.1f}" height="{cell - 2:.1f}" '
                        f'fill="{fill}"/><text x="{left + cell * j + cell / 2 - 1:.1f}" y="{y + cell / 2 + 3:.1f}" '
                        f'text-anchor="middle" fill="{ink(fill)}">{wins}/{shared}</text></g>')
    return _svg(left + cell * len(models) + 20, top + cell * len(models) + 10, "win-matrix", title, body)


def operating_plot(points: Sequence, endpoint, title: str) -> Markup:
    """Sensitivity against specificity, one dot per (configuration, test set) at one rule; the endpoint's
    region (both above its values) shaded."""
    size, left, top = 260.0, 46.0, 24.0
    at = lambda v: left + v * size  # noqa: E731
    up = lambda v: top + (1 - v) * size  # noqa: E731
    body = [f'<rect class="frame" x="{left}" y="{top}" width="{size}" height="{size}" fill="none" stroke="#999"/>']
    if endpoint is not None:
        body.append(f'<rect class="endpoint" x="{at(endpoint.specificity):.1f}" y="{top}" '
                    f'width="{size * (1 - endpoint.specificity):.1f}" height="{size * endpoint.sensitivity:.1f}" '
                    f'fill="#2a9d8f" fill-opacity="0.15"><title>{escape(endpoint.name)}: sensitivity &gt; '
                    f'{endpoint.sensitivity:g} and specificity &gt; {endpoint.specificity:g}</title></rect>')
    for v in (0, 0.5, 1):
        body.append(f'<text class="tick" x="{at(v):.1f}" y="{top + size + 14:.1f}" text-anchor="middle">{v:g}</text>'
                    f'<text class="tick" x="{left - 6:.1f}" y="{up(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
    body.append(f'<text class="axis-title" x="{left + size / 2:.1f}" y="{top + size + 30:.1f}" '
                f'text-anchor="middle">specificity</text><text class="axis-title" x="12" y="{top + size / 2:.1f}" '
                f'text-anchor="middle" transform="rotate(-90 12 {top + size / 2:.1f})">sensitivity</text>')
    for p in points:
        if p.sensitivity is None or p.specificity is None:
            continue
        css = "series-accent" if p.meets else "series-muted"
        shape = "circle" if p.task == p.source_task else "rect"
        tip = escape(f"{p.model} on {p.task} (threshold from {p.source_task}, {p.rule}): sensitivity "
                     f"{p.sensitivity:.3f}, specificity {p.specificity:.3f}")
        x, y = at(p.specificity), up(p.sensitivity)
        mark = (f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="currentColor"/>' if shape == "circle" else
                f'<rect x="{x - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" fill="none" stroke="currentColor"/>')
        body.append(f'<g class="{css}"><title>{tip}</title>{mark}</g>')
    return _svg(left + size + 16, top + size + 40, "operating-points", title, body)

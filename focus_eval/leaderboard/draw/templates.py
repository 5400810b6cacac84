"""The template environment: Jinja2 with autoescaping on, loading from the shipped ``leaderboard/templates``."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import jinja2
from markupsafe import Markup, escape

from focus_eval.analysis.significance import Mean
from focus_eval.leaderboard.draw import marks as cells
from focus_eval.leaderboard.draw.catalog import Catalog
from focus_eval.leaderboard.draw.numbers import fmt_p, fmt_signed
from focus_eval.leaderboard.draw.subgroups import AttributeGroups
from focus_eval.resources import resource_dir

EM_DASH = "\u2014"
BETTER_MARK = " \u25b2"
GROUP_SEPARATOR = " \u00b7 "


def environment(catalog: Catalog, templates: Path | None = None) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates or resource_dir("leaderboard") / "templates")),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(num=fmt_number, sortval=sort_value, interval=fmt_interval, count=fmt_count, signed=fmt_signed,
                       pval=fmt_p, date=fmt_date)
    env.filters["label"] = lambda value, section: catalog.label(section, value)
    env.globals.update(catalog=catalog, value_cell=value_cell, count_cell=count_cell, mean_cell=mean_cell,
                       gap_cell=gap_cell, delta_cell=delta_cell, answers_cell=answers_cell, badge=cells.badge,
                       badges=cells.badges,
                       convention_badges=cells.convention_badges, row_open=cells.row_open,
                       model_link=cells.model_link, task_link=cells.task_link, not_ranked=cells.not_ranked,
                       left_out_flag=cells.left_out_flag, state_badge=cells.state_badge,
                       verification_badge=cells.verification_badge)
    env.globals["EM_DASH"] = EM_DASH
    return env


def fmt_number(value: float | None, digits: int = 3) -> str:
    return EM_DASH if value is None else f"{value:.{digits}f}"


def fmt_count(value: float | None) -> str:
    if value is None:
        return EM_DASH
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def sort_value(value: float | None) -> str:
    """The ``data-value`` the table script sorts on; empty means missing (sorted last)."""
    return "" if value is None else repr(float(value))


def fmt_interval(pair: Sequence[float | None] | None, digits: int = 3) -> str:
    if not pair or all(v is None for v in pair):
        return ""
    return f"[{fmt_number(pair[0], digits)}, {fmt_number(pair[1], digits)}]"


def fmt_date(stamp: str | None) -> str:
    """The date of an ISO time stamp (``2026-05-07T12:00:00Z`` -> ``2026-05-07``), or a dash."""
    return EM_DASH if not stamp else str(stamp)[:10]


def value_cell(value: float | None, ci: Sequence[float | None] | None = None, bold: bool = False, css: str = "",
               digits: int = 3, href: str | None = None) -> Markup:
    """A numeric table cell: the value (or a dash), its interval below, and the key the table script sorts on;
    with ``href`` the value links there (a results line's score to its per-image page).

    Written in Python rather than as a template macro because the big tables call it ~10^5 times per build;
    the numbers are formatted here and contain no markup, the class names and the address are escaped.
    """
    classes = " ".join(c for c in ("num", "null" if value is None else "", css) if c)
    inner = fmt_number(value, digits)
    if href and value is not None:
        inner = f'<a class="score-link" href="{escape(href)}" title="per-image predictions">{inner}</a>'
    if bold:
        inner = f"<strong>{inner}</strong>"
    interval = fmt_interval(ci, digits) if ci else ""
    if interval:
        inner += f'<span class="ci">{interval}</span>'
    return Markup(f'<td class="{escape(classes)}" data-value="{sort_value(value)}">{inner}</td>')


def count_cell(value: float | None) -> Markup:
    return Markup(f'<td class="num" data-value="{sort_value(value)}">{fmt_count(value)}</td>')


def answers_cell(entry) -> Markup:
    """A line's coverage (a prompt method's share of readable answers) and how many answers its answer-based
    scores rest on (``k of n``)."""
    cell = value_cell(entry.line.coverage)
    answers, n = entry.answers, entry.line.n
    if answers is None or n is None:
        return cell
    return Markup(str(cell).replace("</td>", f'<span class="count">{fmt_count(answers)} of {fmt_count(n)}'
                                              f"</span></td>"))


def mean_cell(mean: Mean, bold: bool = False, css: str = "") -> Markup:
    """A mean of task scores: the value, its interval, and how many tasks it covers."""
    cell = value_cell(mean.value, mean.ci, bold=bold, css=css)
    if mean.n:
        cell = Markup(str(cell).replace("</td>", f'<span class="count">{mean.n} task{"s" if mean.n != 1 else ""}'
                                                   f"</span></td>"))
    return cell


def gap_cell(value: float | None, ci: Sequence[float | None] | None, groups: AttributeGroups | None,
             gap: str) -> Markup:
    """A gap with its interval and, when the sample file was read, each group's value with the better group
    marked (for a positive-prediction rate, the higher one, which is neither better nor worse)."""
    interval = fmt_interval(ci) if ci else ""
    inner = fmt_number(value) + (f'<span class="ci">{interval}</span>' if interval else "")
    if groups is not None:
        better = groups.better(gap)
        parts = [f"{escape(g.label)} {fmt_number(g.values.get(gap))}" + (BETTER_MARK if g.label == better else "")
                 for g in groups.groups]
        title = f"better: {better}" if better else ("higher: " + (groups.higher(gap) or "neither"))
        inner += f'<span class="groups" title="{escape(title)}">{GROUP_SEPARATOR.join(parts)}</span>'
    css = "num null" if value is None else "num"
    return Markup(f'<td class="{css}" data-value="{sort_value(value)}">{inner}</td>')


def delta_cell(value: float | None, ci: Sequence[float | None] | None, status: str) -> Markup:
    """A delta with its sign and enough digits to show a small one, coloured by its verdict."""
    interval = ""
    if ci and None not in ci:
        interval = f'<span class="ci">[{fmt_signed(ci[0])}, {fmt_signed(ci[1])}]</span>'
    return Markup(f'<td class="num delta status-{escape(status)}" data-value="{sort_value(value)}">'
                  f"{fmt_signed(value)}{interval}</td>")

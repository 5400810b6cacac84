"""The template environment: Jinja2 with autoescaping on, loading from the shipped ``leaderboard/templates``."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import jinja2
from markupsafe import Markup, escape

from focus_eval.leaderboard.catalog import Catalog
from focus_eval.resources import resource_dir

EM_DASH = "\u2014"


def environment(catalog: Catalog, templates: Path | None = None) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates or resource_dir("leaderboard") / "templates")),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(num=fmt_number, sortval=sort_value, interval=fmt_interval, count=fmt_count)
    env.filters["label"] = lambda value, section: catalog.label(section, value)
    env.globals.update(catalog=catalog, value_cell=value_cell, count_cell=count_cell)
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



def value_cell(value: float | None, ci: Sequence[float | None] | None = None, bold: bool = False, css: str = "",
               digits: int = 3) -> Markup:
    """A numeric table cell: the value (or a dash), its interval below, and the key the table script sorts on.

    Written in Python rather than as a template macro because the big tables call it ~10^5 times per build;
    the numbers are formatted here and contain no markup, the class names are escaped.
    """
    classes = " ".join(c for c in ("num", "null" if value is None else "", css) if c)
    inner = fmt_number(value, digits)
    if bold:
        inner = f"<strong>{inner}</strong>"
    interval = fmt_interval(ci, digits) if ci else ""
    if interval:
        inner += f'<span class="ci">{interval}</span>'
    return Markup(f'<td class="{escape(classes)}" data-value="{sort_value(value)}">{inner}</td>')


def count_cell(value: float | None) -> Markup:
    return Markup(f'<td class="num" data-value="{sort_value(value)}">{fmt_count(value)}</td>')

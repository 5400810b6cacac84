"""The select boxes above a table: one per row attribute that takes more than one value among its rows."""

from __future__ import annotations

from typing import Sequence

from focus_eval.leaderboard.draw.catalog import Catalog
from focus_eval.results.collect import Entry

FILTERS = (("family", "Family", "families"), ("domain", "Domain", "domains"), ("method", "Method", "methods"),
           ("target", "Target", "targets"), ("dataset", "Dataset", None))
Options = list[tuple[str, str, list[tuple[str, str]]]]


def filter_options(entries: Sequence[Entry], catalog: Catalog, keys: Sequence[str] | None = None) -> Options:
    """(attribute, label, [(value, shown text)]) for the attributes that take more than one value."""
    options = []
    for key, label, section in FILTERS:
        if keys is not None and key not in keys:
            continue
        values = {getattr(e.line, key) for e in entries} - {None, ""}
        order = (lambda v, s=section: catalog.order(s, v)) if section else (lambda v: (0, v))
        if len(values) > 1:
            options.append((key, label, [(v, catalog.label(section, v) if section else v)
                                         for v in sorted(values, key=order)]))
    return options

"""The fairness and robustness pages: every gap with its interval, the per-group values behind it and which
group fares better, the distribution of gaps by family, and the paper's per-configuration scores.

A model whose AUROC cannot be told from chance has small gaps for free: such lines are marked, drawn hollow,
and left out of the Fairness and Quality scores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from focus_eval.analysis.summary import FAIRNESS_SUMMARY_GAPS, QUALITY_GROUP, chance_level
from focus_eval.leaderboard.draw.csvdata import CsvTable
from focus_eval.leaderboard.draw.figures import Point, StripGroup, strip
from focus_eval.leaderboard.draw.filters import filter_options
from focus_eval.leaderboard.draw.subgroups import AttributeGroups, has_groups
from focus_eval.leaderboard.pages.site import Site
from focus_eval.leaderboard.pages.views import ViewPage
from focus_eval.results.collect import Entry
from focus_eval.results.schema import FAIRNESS_GAPS, QUALITY_GAPS


@dataclass(frozen=True)
class GapRow:
    """One (results line, attribute) of a gap table."""

    entry: Entry
    attribute: str
    block: dict[str, Any]
    groups: AttributeGroups | None
    chance: bool


def gap_rows(site: Site, section: str, attributes: Callable[[Entry], Sequence[str]]) -> list[GapRow]:
    rows = []
    for e in site.entries:
        view = site.samples.get(e.key)
        for attribute in attributes(e):
            block = getattr(e.line, section).get(attribute)
            if has_groups(block):
                rows.append(GapRow(entry=e, attribute=attribute, block=block, chance=chance_level(e),
                                   groups=view.groups.get(attribute) if view else None))
    return rows


def fairness_view(site: Site) -> ViewPage:
    rows = gap_rows(site, "fairness", lambda e: sorted(e.line.fairness))
    attributes = sorted({r.attribute for r in rows})
    filters = filter_options([r.entry for r in rows], site.catalog)
    if len(attributes) > 1:
        filters.append(("attribute", "Attribute", [(a, site.catalog.label("attributes", a)) for a in attributes]))
    page = _page(site, "fairness", "Fairness", rows, FAIRNESS_GAPS, FAIRNESS_SUMMARY_GAPS, filters)
    page.summary = "age and sex gaps with per-group values, by family"
    return page


def robustness_view(site: Site) -> ViewPage:
    rows = gap_rows(site, "robustness", lambda e: [QUALITY_GROUP])
    page = _page(site, "robustness", "Robustness", rows, QUALITY_GAPS, QUALITY_GAPS,
                 filter_options([r.entry for r in rows], site.catalog))
    page.summary = "image-quality gaps with per-group values, by family"
    return page


def _page(site: Site, name: str, title: str, rows: list[GapRow], gaps: Sequence[str], shown: Sequence[str],
          filters) -> ViewPage:
    return ViewPage(name=name, title=title, template=f"{name}.html", csv={name: _csv(rows, gaps)}, context={
        "rows": rows, "gaps": gaps, "covered": len({id(r.entry) for r in rows}), "total": len(site.entries),
        "filters": filters, "configs": site.configs,
        "figure": _figure(site, rows, shown), "n_chance": len({id(r.entry) for r in rows if r.chance}),
        "group": QUALITY_GROUP})


def _figure(site: Site, rows: list[GapRow], gaps: Sequence[str]):
    """Gaps of trained, ranked lines under the default conventions: a band per (attribute, gap), a row of dots per
    family."""
    label, ranked = site.catalog.label, {id(e) for e in site.ranked if not e.conventions}
    groups = []
    for attribute in sorted({r.attribute for r in rows}):
        for gap in gaps:
            band = f"{label('attributes', attribute)} \u00b7 {site.catalog.metric(gap).label}"
            by_family: dict[str, list[Point]] = {}
            for r in rows:
                value = r.block.get(gap)
                if r.attribute != attribute or value is None or r.entry.line.untrained or id(r.entry) not in ranked:
                    continue
                family = label("families", r.entry.line.family)
                by_family.setdefault(family, []).append(Point(value, _dot_title(r, gap, value),
                                                              "chance" if r.chance else
                                                              f"series family-{r.entry.line.family}"))
            groups += [StripGroup(band=band, label=f, points=p) for f, p in by_family.items()]
    if not groups:
        return None
    return strip(groups, "Gaps by family", "gap between the two groups (lower is better); hollow: AUROC at chance",
                 low=0.0)


def _dot_title(row: GapRow, gap: str, value: float) -> str:
    e = row.entry
    text = f"{e.model} \u00b7 {e.line.method} on {e.line.task}: {gap.replace('_', ' ')} {value:.3f}"
    return text + (" (AUROC at chance level)" if row.chance else "")


def _csv(rows: list[GapRow], gaps: Sequence[str]) -> CsvTable:
    """One row per (results line, attribute): each gap with its interval, both groups' values and the group
    that fares better."""
    per_gap = [f"{gap}{part}" for gap in gaps for part in ("", "_ci_low", "_ci_high", "_a", "_b", "_better")]
    table = CsvTable(("model", "method", "adapter", "conventions", "family", "task", "dataset", "attribute",
                      "n_min", "group_a", "n_a", "group_b", "n_b", "chance_level", *per_gap))
    for r in rows:
        e, (a, b) = r.entry, (r.groups.groups if r.groups else (None, None))
        cells = []
        for gap in gaps:
            ci = r.block.get(f"{gap}_ci") or [None, None]
            cells += [r.block.get(gap), *ci, a.values.get(gap) if a else None, b.values.get(gap) if b else None,
                      r.groups.better(gap) if r.groups else None]
        table.add(e.model, e.line.method, e.line.adapter, e.convention_text or None, e.line.family, e.line.task,
                  e.line.dataset, r.attribute, r.block.get("n_min"), a.label if a else None, a.n if a else None,
                  b.label if b else None, b.n if b else None, r.chance, *cells)
    return table


def _fmt(value: float | None) -> str:
    return "\u2014" if value is None else f"{value:.3f}"

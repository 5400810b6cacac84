"""The fragility page: how far scores and rankings move under prompt paraphrases, image corruptions, label
budgets and other label rules, drawn from the four analyses' tables (``analysis.prompt_sensitivity``,
``corruptions``, ``label_efficiency``, ``label_rules``), each with its chart, its CSV and its stability
sentence per target; the overview repeats the sentences.

Lines of these runs (a results line whose identity moves a variant axis: a prompt variant, corruption, label
budget or label rule; ``results.identity``) are left out of the main rankings: they are the same task asked
another way, not another task."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from focus_eval.analysis.base import ReportOptions, Table
from focus_eval.errors import FocusError
from focus_eval.leaderboard.draw import charts
from focus_eval.leaderboard.pages.site import Site
from focus_eval.leaderboard.pages.views import ViewPage

@dataclass(frozen=True)
class Section:
    name: str
    title: str
    table: Table
    sentences: list[str]
    forest: object | None


def _items(name: str, table: Table) -> tuple[list, str]:
    """Forest items (label, estimate, interval, tooltip, css) for one analysis's table, and the axis title."""
    rows = [dict(zip(table.columns, r)) for r in table.rows]
    if name == "prompt-sensitivity":
        return [(f"{r['model']} \u00b7 {r['task']}", 0.0, (r["min"] - r["mean"], r["max"] - r["mean"]),
                 f"mean {r['mean']:.3f}, SD {r['sd']:.3f} over {r['variants']} variants", "not-significant")
                for r in rows], "score over variants \u2212 their mean (min to max)"
    if name == "corruptions":
        return [(f"{r['model']} \u00b7 {r['task']} \u00b7 {r['corruption']}:{r['severity']}", -r["drop"], None,
                 f"clean {r['clean']:.3f}, corrupted {r['corrupted']:.3f}", "worse" if r["drop"] > 0 else "better")
                for r in rows], "corrupted \u2212 clean"
    if name == "label-efficiency":
        full = {(r["model"], r["task"]): r["mean"] for r in rows if r["fraction"] == 1.0}
        return [(f"{r['model']} \u00b7 {r['task']} \u00b7 {r['patients']} patients", r["mean"] - full[key],
                 (r["min"] - full[key], r["max"] - full[key]), f"{r['seeds']} seed(s), mean {r['mean']:.3f}",
                 "not-significant") for r in rows if r["fraction"] < 1
                and (key := (r["model"], r["task"])) in full], "budget \u2212 every patient (range over seeds)"
    return [(f"{r['model']} \u00b7 {r['task']} \u00b7 {r['rule']}", r["change"], None,
             f"own rule {r['own']:.3f}, {r['rule']} {r['under_rule']:.3f}", "not-significant")
            for r in rows], "other rule \u2212 the task's own rule"


def sections(site: Site) -> list[Section]:
    """One section per analysis that finds lines of its kind."""
    from focus_eval.analysis import ANALYSES

    collection = SimpleNamespace(entries=site.entries, paths=[])
    options = ReportOptions(include_limited=site.include_limited)
    out = []
    for name, title in (("prompt-sensitivity", "Prompt paraphrases"), ("corruptions", "Image corruptions"),
                        ("label-efficiency", "Label budgets"), ("label-rule-sensitivity", "Label rules")):
        try:
            table = ANALYSES.get(name).compute(collection, options)
        except FocusError:
            continue
        items, x_title = _items(name, table)
        sentences = [n for n in table.notes if "stable" in n or "no ranking" in n or "no pair" in n]
        out.append(Section(name, title, table, sentences, charts.forest(items, x_title=x_title) if items else None))
    return out


def fragility_view(site: Site) -> ViewPage | None:
    found = sections(site)
    if not found:
        return None
    return ViewPage(name="fragility", title="Fragility", template="fragility.html",
                    summary="how far rankings move under paraphrases, corruptions, label budgets and label rules",
                    csv={s.name: s.table for s in found},
                    context={"sections": found, "stability": [(s.title, t) for s in found for t in s.sentences]})

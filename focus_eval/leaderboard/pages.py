"""Page contexts: what each page of the site shows, rendered through the shipped templates."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

import jinja2

from focus_eval.leaderboard import charts
from focus_eval.leaderboard.calibration import Calibration
from focus_eval.leaderboard.catalog import Catalog
from focus_eval.leaderboard.compare import DOMAIN_LABELS, CompareData
from focus_eval.leaderboard.entries import Entry, GroupLine
from focus_eval.leaderboard.groups import Configuration, ModelInfo, TableBlock, TaskInfo
from focus_eval.leaderboard.summary import QUALITY_GROUP, included
from focus_eval.results.schema import FAIRNESS_GAPS, LOWER_IS_BETTER, METRICS, QUALITY_GAPS

FILTERS = (("family", "Family", "families"), ("domain", "Domain", "domains"), ("method", "Method", "methods"),
           ("target", "Target", "targets"), ("dataset", "Dataset", None))
SIGNIFICANCE_Q = 0.05


@dataclass(frozen=True)
class CalibrationView:
    """The reliability diagram of one results line, or the reason it has none."""

    entry: Entry
    chart: charts.Reliability | None
    calibration: Calibration | None
    note: str | None


@dataclass
class Site:
    """Everything one build shows."""

    catalog: Catalog
    entries: list[Entry]
    tasks: list[TaskInfo]
    models: list[ModelInfo]
    configs: list[Configuration]
    top: list[Configuration]
    table: list[TableBlock]
    calibrations: dict[tuple, CalibrationView]
    compare: CompareData
    include_proxy: bool
    model_slugs: dict[str, str]
    task_slugs: dict[str, str]
    group_lines: list[GroupLine] = field(default_factory=list)


def render_pages(env: jinja2.Environment, site: Site) -> dict[str, str]:
    """Relative page path -> HTML for every page of the site."""
    pages = {
        "index.html": _render(env, "index.html", site, "", "overview", "Overview", **overview_context(site)),
        "fairness.html": _render(env, "fairness.html", site, "", "fairness", "Fairness", **fairness_context(site)),
        "robustness.html": _render(env, "robustness.html", site, "", "robustness", "Robustness",
                                   **robustness_context(site)),
    }
    if site.compare:
        pages["finetune.html"] = _render(env, "finetune.html", site, "", "finetune", "Fine-tuning",
                                         **finetune_context(site))
    task_page = env.get_template("task.html")
    for task in site.tasks:
        pages[f"tasks/{task.slug}.html"] = _render(
            env, task_page, site, "../", "tasks", task.name, task=task,
            calibrations=[site.calibrations[e.key] for e in task.entries],
            filters=filter_options(task.entries, site.catalog))
    model_page = env.get_template("model.html")
    for model in site.models:
        pages[f"models/{model.slug}.html"] = _render(
            env, model_page, site, "../", "models", model.name, model=model,
            filters=filter_options(model.entries, site.catalog))
    return pages


def _render(env: jinja2.Environment, template: Any, site: Site, root: str, active: str, title: str,
            **context: Any) -> str:
    template = env.get_template(template) if isinstance(template, str) else template
    return template.render(root=root, active=active, title=title, has_finetune=bool(site.compare),
                           model_slugs=site.model_slugs, task_slugs=site.task_slugs, metrics=METRICS,
                           include_proxy=site.include_proxy, **context)


def overview_context(site: Site) -> dict[str, Any]:
    table_entries = [e for e in site.entries if not e.line.adapter]
    return {
        "heatmap": charts.heatmap(site.configs, site.tasks, site.model_slugs) if site.configs else None,
        "table": site.table,
        "table_filters": filter_options(table_entries, site.catalog, keys=("family", "method", "target")),
        "radar": charts.radar(site.top) if site.top else None,
        "tasks": site.tasks,
        "models": site.models,
        "counts": {"lines": len(site.entries), "files": len({e.source for e in site.entries}),
                   "models": len(site.models), "tasks": len(site.tasks), "configs": len(site.configs)},
        "flag_counts": Counter(flag for e in site.entries for flag in e.flags),
        "group_lines": site.group_lines,
        "n_excluded": 0 if site.include_proxy else len(site.entries) - len(included(site.entries)),
    }


def has_groups(block: dict[str, Any] | None) -> bool:
    """Whether a gap block describes real groups: some gap was computed, or groups exist but are too small."""
    if not block:
        return False
    return (block.get("n_min") or 0) > 0 or any(block.get(g) is not None for g in (*FAIRNESS_GAPS, *QUALITY_GAPS))


def fairness_context(site: Site) -> dict[str, Any]:
    rows = [(e, attribute, block) for e in site.entries for attribute, block in sorted(e.line.fairness.items())
            if has_groups(block)]
    attributes = sorted({attribute for _, attribute, _ in rows})
    return {
        "rows": rows,
        "gaps": FAIRNESS_GAPS,
        "covered": len({id(e) for e, _, _ in rows}),
        "total": len(site.entries),
        "filters": filter_options([e for e, _, _ in rows], site.catalog)
        + ([("attribute", "Attribute", [(a, site.catalog.label("attributes", a)) for a in attributes])]
           if len(attributes) > 1 else []),
        "configs": site.configs,
    }


def robustness_context(site: Site) -> dict[str, Any]:
    rows = [(e, e.line.robustness[QUALITY_GROUP]) for e in site.entries if has_groups(e.line.robustness.get(QUALITY_GROUP))]
    return {
        "rows": rows,
        "gaps": QUALITY_GAPS,
        "group": QUALITY_GROUP,
        "covered": len(rows),
        "total": len(site.entries),
        "filters": filter_options([e for e, _ in rows], site.catalog),
        "configs": site.configs,
    }


def finetune_context(site: Site) -> dict[str, Any]:
    data, catalog = site.compare, site.catalog
    summaries = sorted(data.summaries, key=lambda s: (s.metric, s.domain))
    items = [(f"{_metric_label(catalog, s.metric)} \u00b7 {_domain_label(s.domain)}", s.mean_delta, s.ci,
              f"mean delta {_signed(s.mean_delta)}, q = {_plain(s.q)}", verdict(s.metric, s.mean_delta, s.ci))
             for s in summaries]
    comparisons = sorted(data.comparisons, key=lambda c: (c.metric, c.domain, c.adapter or "", c.test_task or ""))
    return {
        "summaries": summaries,
        "forest": charts.forest(items) if items else None,
        "comparisons": comparisons,
        "other_kinds": sorted(data.other_kinds.items()),
        "filters": _compare_filters(comparisons),
        "verdict": verdict,
        "significance_q": SIGNIFICANCE_Q,
        "metric_label": lambda metric: _metric_label(catalog, metric),
        "domain_label": _domain_label,
    }


def verdict(metric: str, delta: float | None, ci: Sequence[float | None] | None) -> str:
    """``better``/``worse`` when the interval excludes zero (direction-aware), else empty."""
    if delta is None or not ci or None in ci or ci[0] <= 0 <= ci[1]:
        return ""
    improved = (delta < 0) if metric in LOWER_IS_BETTER else (delta > 0)
    return "better" if improved else "worse"


def filter_options(entries: Sequence[Entry], catalog: Catalog,
                   keys: Sequence[str] | None = None) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """Select boxes for the row attributes that take more than one value among ``entries``."""
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


def _compare_filters(comparisons) -> list[tuple[str, str, list[tuple[str, str]]]]:
    options = []
    for key, label in (("metric", "Metric"), ("domain", "Domain"), ("target", "Target"),
                       ("base_model", "Base model"), ("train_dataset", "Trained on"), ("test_dataset", "Tested on")):
        values = sorted({str(getattr(c, key)) for c in comparisons if getattr(c, key) is not None})
        if len(values) > 1:
            labels = [_domain_label(v) if key == "domain" else v for v in values]
            options.append((key, label, list(zip(values, labels))))
    return options


def _metric_label(catalog: Catalog, metric: str) -> str:
    info = catalog.metrics.get(metric) or catalog.gaps.get(metric)
    return info.label if info else metric


def _domain_label(domain: str) -> str:
    return DOMAIN_LABELS.get(domain, domain)


def _signed(value: float | None) -> str:
    return "\u2014" if value is None else f"{value:+.3f}"


def _plain(value: float | None) -> str:
    return "\u2014" if value is None else f"{value:.3g}"

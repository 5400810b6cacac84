"""Page contexts: what each page of the site shows, rendered through the shipped templates, and the CSV files
behind its figures."""

from __future__ import annotations

from collections import Counter
from typing import Any

import jinja2

from focus_eval.analysis.significance import competition_ranks
from focus_eval.analysis.summary import included
from focus_eval.leaderboard.draw import charts
from focus_eval.leaderboard.draw.card import card_html
from focus_eval.leaderboard.draw.filters import filter_options
from focus_eval.leaderboard.pages.maintable import main_csv
from focus_eval.leaderboard.pages.model_cards import model_card
from focus_eval.leaderboard.pages.downloads import main_table_csv
from focus_eval.leaderboard.pages.sample_pages import CELLS, rows_csv, rows_html, sample_page
from focus_eval.leaderboard.pages.site import Site
from focus_eval.leaderboard.pages.statistics import task_statistics
from focus_eval.leaderboard.pages.views import ViewPage, view_pages
from focus_eval.results.collect import Entry
from focus_eval.results.collect import line_provenance
from focus_eval.results.identity import set_aside
from focus_eval.results.schema import CLASS_METRICS, METRICS


def render_site(env: jinja2.Environment, site: Site) -> tuple[dict[str, str], dict[str, str]]:
    """(relative page path -> HTML, relative data path -> CSV text) for the whole site."""
    views = view_pages(site)
    nav = [("index.html", "Overview", "overview"), ("index.html#tasks", "Tasks", "tasks"),
           ("index.html#models", "Models", "models")]
    nav += [(f"{v.name}.html", v.title, v.name) for v in views]
    common = {"nav": nav, "site": site}
    pages = {"index.html": _render(env, "index.html", common, "index.html", "", "overview", site.title,
                                   **overview_context(site, views))}
    pages["benchmark-card.html"] = _render(env, "benchmark_card.html", common, "benchmark-card.html", "",
                                           "benchmark-card", "Benchmark card", card=card_html())
    data = {"data/main.csv": main_csv(site.main, site.targets, site.left_out).to_csv()}
    for view in views:
        pages[f"{view.name}.html"] = _render(env, view.template, common, f"{view.name}.html", "", view.name,
                                             view.title, view=view, **view.context)
        data.update({f"data/{name}.csv": table.to_csv() for name, table in view.csv.items()})
    task_page = env.get_template("task.html")
    for task in site.tasks:
        path = f"tasks/{task.slug}.html"
        primary = task.entries[0].primary_metric
        pages[path] = _render(env, task_page, common, path, "../", "tasks", task.name, task=task,
                              ranks=task_ranks(task.entries, site), filters=filter_options(task.entries, site.catalog),
                              samples=[site.samples[e.key] for e in task.entries], primary=primary,
                              sample_links=site.sample_links, metrics=CLASS_METRICS if primary != "auroc" else METRICS,
                              **task_statistics(site, task.name))
    samples = _sample_pages(env, common, site)
    pages.update({path: html for path, (html, _) in samples.items()})
    data.update({csv_path: text for _, (_, (csv_path, text)) in samples.items()})
    data["data/main-table.csv"] = main_table_csv(site.main, site.targets).to_csv()
    model_page = env.get_template("model.html")
    for model in site.models:
        path = f"models/{model.slug}.html"
        pages[path] = _render(env, model_page, common, path, "../", "models", model.name, model=model,
                              card=model_card(model, site.runs, site.ranked, site.include_proxy),
                              rows=[r for r in site.main if r.config.model == model.name],
                              provenance=[(e, line_provenance(e, site.runs.run_of(e))) for e in model.entries],
                              filters=filter_options(model.entries, site.catalog), sample_links=site.sample_links)
    return pages, data


def _sample_pages(env: jinja2.Environment, common: dict[str, Any], site: Site) -> dict[str, tuple]:
    """One page per results line with a sample file, its test images' predictions: page path -> (HTML, (path of
    its rows as CSV, the CSV))."""
    template, by_key = env.get_template("samples.html"), {e.key: e for e in site.entries}
    pages = {}
    for key, path in site.sample_links.items():
        view = site.samples.get(key)
        page = sample_page(by_key[key], path, site.thumbs, view.rows if view is not None else None,
                           site.asked.get(key))
        html = _render(env, template, common, path, "../../", "tasks", f"{page.entry.line.task}: {page.entry.model}",
                       page=page, cells=CELLS, rows_html=rows_html)
        pages[path] = (html, (page.csv_path, rows_csv(page)))
    return pages


def _render(env: jinja2.Environment, template: Any, common: dict[str, Any], path: str, root: str, active: str,
            title: str, **context: Any) -> str:
    template = env.get_template(template) if isinstance(template, str) else template
    site: Site = common["site"]
    context.setdefault("metrics", METRICS)
    return template.render(root=root, active=active, title=title, page_path=path, site_title=site.title,
                           base_url=site.base_url, nav=common["nav"], synthetic=site.synthetic,
                           model_slugs=site.model_slugs, task_slugs=site.task_slugs,
                           include_proxy=site.include_proxy, include_limited=site.include_limited,
                           submitted=site.submitted, verified=site.verified,
                           include_unverified=site.include_unverified, **context)


def task_ranks(entries: list[Entry], site: Site) -> dict[tuple, int | None]:
    """Ranks by each line's primary metric (AUROC for a binary task, FunBench F1 for a multi-class one) among
    trained lines that nothing sets aside (``results.identity.set_aside``: ``--limit`` runs only with
    ``--include-limited``, no line without answers, of low coverage or of another task version); lines equal at
    three decimals share a rank; untrained baselines get none."""
    eligible = [e for e in entries if set_aside(e, site.include_limited) is None and not e.line.untrained]
    ranks = competition_ranks([e.metric(e.primary_metric) for e in eligible])
    return {e.key: rank for e, rank in zip(eligible, ranks)}


def overview_context(site: Site, views: list[ViewPage]) -> dict[str, Any]:
    label = site.catalog.label
    ranked = {id(e) for e in site.ranked}
    table_entries = [e for e in site.ranked if not e.line.adapter]
    return {
        "main": site.main,
        "sample_links": site.sample_links,
        "targets": site.targets,
        "main_filters": _main_filters(site),
        # columns: the tasks of the ranked lines (a fragility run's copies of a task are on the Fragility page)
        "heatmap": charts.heatmap(site.configs, [t for t in site.tasks if any(id(e) in ranked for e in t.entries)],
                                  site.model_slugs, lambda f: label("families", f),
                                  lambda t: label("targets", t)) if site.configs else None,
        "table": site.table,
        "table_filters": filter_options(table_entries, site.catalog, keys=("family", "method", "target")),
        "radar": charts.radar(site.top) if site.top else None,
        "tasks": site.tasks,
        "models": site.models,
        "views": [(v.name, v.title, v.summary) for v in views],
        "counts": {"lines": len(site.entries), "files": len({e.source for e in site.entries}),
                   "models": len(site.models), "tasks": len(site.tasks), "configs": len(site.configs)},
        "flag_counts": Counter(flag for e in site.entries for flag in e.flags),
        "left_out": Counter(item.reason.partition(": ")[0] for item in site.left_out),
        "group_lines": [g for g in site.group_lines if site.include_limited or not g.limited],
        "n_limited_groups": 0 if site.include_limited else sum(g.limited for g in site.group_lines),
        "n_excluded": 0 if site.include_proxy else len(site.ranked) - len(included(site.ranked)),
        "n_limited": 0 if site.include_limited else site.n_limited,
        "has_trained": site.has_trained,
        # one sentence per target and fragility analysis: whether its ranking holds (pages.fragility_page)
        "stability": next((v.context["stability"] for v in views if v.name == "fragility"), []),
    }


def _main_filters(site: Site) -> list[tuple[str, str, list[tuple[str, str]]]]:
    entries = [r.config.entries[0] for r in site.main]
    return filter_options(entries, site.catalog, keys=("family", "domain", "method"))

"""The paper's views, one page each, built from the results alone: the domain split, the per-dataset table,
AUROC by family per dataset and calibration by family (fairness, robustness and fine-tuning live in
``gapviews`` and ``finetune``). Each page has its figure as inline SVG and its data as ``data/<name>.csv``.

Pages are registered by name (``PAGES``); a package may add one with ``PAGES.register(name, "module:builder")``
where the builder takes the ``Site`` and returns a ``ViewPage`` (or None when it has nothing to show).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from focus_eval.analysis.base import Table
from focus_eval.analysis.significance import Mean
from focus_eval.analysis.summary import GroupSummary, included, summarize
from focus_eval.leaderboard.draw import charts
from focus_eval.leaderboard.draw.calibration import pooled
from focus_eval.leaderboard.draw.csvdata import CsvTable
from focus_eval.leaderboard.draw.figures import Point, Strip, StripGroup, strip
from focus_eval.leaderboard.pages.maintable import mean_of
from focus_eval.leaderboard.pages.site import Site
from focus_eval.registry import Registry, unlisted
from focus_eval.results.collect import Entry

ALL_TARGETS = "all"


@dataclass
class ViewPage:
    """One page of the site beyond the overview, task and model pages."""

    name: str
    title: str
    template: str
    context: dict[str, Any] = field(default_factory=dict)
    csv: dict[str, Table] = field(default_factory=dict)
    summary: str = ""  # what the overview says when it links to the page


def _builtin() -> None:
    for name, target in (("domains", "views:domains_view"), ("datasets", "views:datasets_view"),
                         ("families", "views:families_view"), ("calibration", "views:calibration_view"),
                         ("fairness", "gapviews:fairness_view"), ("robustness", "gapviews:robustness_view"),
                         ("finetune", "finetune_page:finetune_view"), ("funbench", "funbench:funbench_view"),
                         ("ranks", "statistics:ranks_view"), ("pairwise", "statistics:pairwise_view"),
                         ("operating-points", "statistics:operating_view"),
                         ("recalibration", "statistics:recalibration_view"),
                         ("domain-gap", "focus_pages:domain_gap_view"),
                         ("fairness-calibration", "focus_pages:fairness_calibration_view"),
                         ("specialisation", "focus_pages:specialisation_view"),
                         ("zero-shot-probe", "focus_pages:zero_shot_probe_view"),
                         ("interfaces", "focus_pages:interfaces_view"),
                         ("reliability", "focus_pages:reliability_view"),
                         ("fragility", "fragility_page:fragility_view"),
                         ("submissions", "submissions:submissions_view")):
        PAGES.register(name, f"focus_eval.leaderboard.pages.{target}")


PAGES_GROUP = "focus_eval.leaderboard_pages"
#: page name -> builder(site) -> ViewPage | None, in the order the navigation lists them
PAGES = Registry("leaderboard page", entry_point_group=PAGES_GROUP, builtin=_builtin)


def view_pages(site: Site) -> list[ViewPage]:
    """Every registered page that has something to show; a page plugin of another package that cannot be imported
    is left out (``Registry.loaded``: warned once, named by ``broken_pages``), so it costs its own page only."""
    pages = []
    builder: Callable[[Site], ViewPage | None]
    for _name, builder in PAGES.loaded():
        page = builder(site)
        if page is not None:
            pages.append(page)
    return pages


def broken_pages() -> list[str]:
    """One line per page plugin left out of this process's builds because it cannot be imported."""
    return unlisted(PAGES_GROUP)


def base_lines(site: Site) -> list[Entry]:
    """Lines that enter the paper's comparisons: ranked, on included tasks, of base models (no fine-tuned adapter)
    run under the default conventions (a rerun with another seed would count its model twice)."""
    return [e for e in included(site.ranked, site.include_proxy) if not e.line.adapter and not e.conventions]


# ------------------------------------------------------------------------------------------ domain split
@dataclass(frozen=True)
class DomainRow:
    target: str
    family: str | None
    method: str
    domain: str | None
    summary: GroupSummary


def domains_view(site: Site) -> ViewPage:
    """Mean scores per family, method and pretraining domain (general, ophthalmic, medical), over all targets
    and per target; untrained baselines are left out."""
    lines = [e for e in base_lines(site) if not e.line.untrained]
    catalog = site.catalog
    grouped: dict[tuple, list[Entry]] = defaultdict(list)
    for e in lines:
        for target in (ALL_TARGETS, e.line.target):
            grouped[(target, e.line.family, e.line.method, e.line.domain)].append(e)
    order = {t: i for i, t in enumerate([ALL_TARGETS, *site.targets])}
    keys = sorted(grouped, key=lambda k: (order.get(k[0], len(order)), catalog.order("families", k[1]),
                                          catalog.order("methods", k[2]), catalog.order("domains", k[3])))
    rows = [DomainRow(*key, summary=summarize(grouped[key])) for key in keys]
    table = CsvTable(("target", "family", "method", "domain", "n_models", "n_lines", "auroc", "auprc",
                      "accuracy", "ece", "fairness", "quality"))
    for r in rows:
        s = r.summary
        table.add(r.target, r.family, r.method, r.domain, s.n_models, s.n_lines, s.means["auroc"], s.means["auprc"],
                  s.means["accuracy"], s.means["ece"], s.fairness.value, s.quality.value)
    return ViewPage(name="domains", title="Domains", template="domains.html", csv={"domains": table},
                    summary="general vs ophthalmic vs medical pretraining, per family and method",
                    context={"rows": rows, "figure": _domain_figure(rows, site) if rows else None,
                             "domains": sorted({r.domain for r in rows}, key=lambda d: catalog.order("domains", d))})


def _domain_figure(rows: Sequence[DomainRow], site: Site) -> Strip:
    label = site.catalog.label
    groups = []
    for r in rows:
        if r.target != ALL_TARGETS or r.summary.means["auroc"] is None:
            continue
        text = (f"{label('domains', r.domain)} domain: mean AUROC {r.summary.means['auroc']:.3f} over "
                f"{r.summary.n_lines} lines of {r.summary.n_models} model(s)")
        point = Point(r.summary.means["auroc"], text, f"series domain-{r.domain}")
        row_label = label("methods", r.method)
        if groups and groups[-1].band == label("families", r.family) and groups[-1].label == row_label:
            groups[-1].points.append(point)
        else:
            groups.append(StripGroup(band=label("families", r.family), label=row_label, points=[point], mean=False))
    return strip(groups, "Mean AUROC by family, method and pretraining domain", "mean AUROC over all included tasks",
                 low=0.5, high=1.0, reference=0.5)


# ------------------------------------------------------------------------------------------ per dataset
@dataclass(frozen=True)
class DatasetRow:
    config: Any
    cells: dict[str, Mean]


def dataset_rows(site: Site) -> tuple[list[str], list[DatasetRow]]:
    """Datasets (columns) and one row per configuration of the main table with its mean AUROC per dataset."""
    datasets = sorted({e.line.dataset for e in included(site.ranked, site.include_proxy) if e.line.dataset})
    rows = []
    for main in site.main:
        lines = [e for e in included(main.config.entries, site.include_proxy)]
        cells = {d: mean_of([e for e in lines if e.line.dataset == d], site.samples) for d in datasets}
        rows.append(DatasetRow(config=main.config, cells=cells))
    return datasets, rows


def datasets_view(site: Site) -> ViewPage:
    datasets, rows = dataset_rows(site)
    table = CsvTable(("model", "method", "adapter", "conventions", "family", "domain", "untrained", "dataset",
                      "n_tasks", "auroc", "ci_low", "ci_high"))
    for row in rows:
        c = row.config
        for d in datasets:
            cell = row.cells[d]
            if cell.n:
                table.add(c.model, c.method, c.adapter or None, c.convention_text or None, c.family, c.domain,
                          c.untrained, d, cell.n, cell.value, *(cell.ci or (None, None)))
    best = {d: max((round(r.cells[d].value, 3) for r in rows if not r.config.untrained
                    and r.cells[d].value is not None), default=None) for d in datasets}
    return ViewPage(name="datasets", title="Datasets", template="datasets.html", csv={"datasets": table},
                    summary="mean AUROC of every configuration on every dataset",
                    context={"datasets": datasets, "rows": rows, "best": best})


# ------------------------------------------------------------------------------------------ by family
def families_view(site: Site) -> ViewPage:
    """Each configuration's mean AUROC on each dataset, one row of dots per family (baselines in their own)."""
    datasets, rows = dataset_rows(site)
    label = site.catalog.label
    table = CsvTable(("dataset", "family", "model", "method", "adapter", "conventions", "untrained", "auroc"))
    groups = []
    for d in datasets:
        by_family: dict[str, list[Point]] = defaultdict(list)
        for row in sorted(rows, key=lambda r: site.catalog.order("families", r.config.family)):
            cell, c = row.cells[d], row.config
            if cell.value is None:
                continue
            family = "untrained baselines" if c.untrained else label("families", c.family)
            by_family[family].append(Point(cell.value, f"{c.label} on {d}: mean AUROC {cell.value:.3f}",
                                           "untrained" if c.untrained else f"series family-{c.family}"))
            table.add(d, c.family, c.model, c.method, c.adapter or None, c.convention_text or None, c.untrained,
                      cell.value)
        groups += [StripGroup(band=d, label=family, points=points) for family, points in by_family.items()]
    figure = strip(groups, "AUROC by family, per dataset", "mean AUROC of a configuration on the dataset",
                   low=0.5, high=1.0, reference=0.5) if groups else None
    return ViewPage(name="families", title="Families", template="families.html", csv={"families": table},
                    summary="AUROC by model family, per dataset",
                    context={"figure": figure, "datasets": datasets})


# ------------------------------------------------------------------------------------------ calibration
@dataclass(frozen=True)
class FamilyCalibration:
    family: str | None
    lines: int
    mean_ece: float | None
    pooled_ece: float | None
    n_images: int
    chart: charts.Reliability | None


def calibration_view(site: Site) -> ViewPage:
    """ECE of every trained line by family, and each family's reliability diagram pooled over its lines."""
    lines = [e for e in base_lines(site) if not e.line.untrained]
    label = site.catalog.label
    by_family: dict[str | None, list[Entry]] = defaultdict(list)
    for e in sorted(lines, key=lambda e: site.catalog.order("families", e.line.family)):
        by_family[e.line.family].append(e)
    per_line = CsvTable(("family", "model", "method", "task", "dataset", "ece", "ci_low", "ci_high"))
    bins = CsvTable(("family", "bin_low", "bin_high", "count", "mean_score", "positive_rate"))
    families, groups = [], []
    for family, members in by_family.items():
        points = []
        for e in members:
            ece, ci = e.metric("ece"), e.metric_ci("ece") or [None, None]
            per_line.add(family, e.model, e.line.method, e.line.task, e.line.dataset, ece, *ci)
            if ece is not None:
                points.append(Point(ece, f"{e.model} \u00b7 {e.line.method} on {e.line.task}: ECE {ece:.3f}",
                                    f"series family-{family}"))
        groups.append(StripGroup(band="", label=label("families", family), points=points))
        calibrations = [v.calibration for v in (site.samples.get(e.key) for e in members)
                        if v is not None and v.calibration is not None and v.calibration.n]
        pool = pooled(calibrations) if calibrations else None
        for b in pool.bins if pool else []:
            bins.add(family, b.lower, b.upper, b.count, b.mean_score, b.mean_label)
        eces = [p.value for p in points]
        families.append(FamilyCalibration(family=family, lines=len(members),
                                          mean_ece=sum(eces) / len(eces) if eces else None,
                                          pooled_ece=pool.ece if pool else None, n_images=pool.n if pool else 0,
                                          chart=charts.reliability(pool) if pool and pool.n else None))
    figure = strip(groups, "ECE by family", "expected calibration error (lower is better)", low=0.0) \
        if any(g.points for g in groups) else None
    return ViewPage(name="calibration", title="Calibration", template="calibration.html",
                    summary="ECE and pooled reliability diagrams by family",
                    csv={"calibration": per_line, "calibration-bins": bins},
                    context={"figure": figure, "families": families})

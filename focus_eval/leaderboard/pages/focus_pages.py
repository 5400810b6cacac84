"""The FOCUS paper's Table 4 and Figs. 3, 5, 24, 28 and 29 as leaderboard pages: each draws from the analysis of
the same name (``analysis.focus_figures``), so its ``data/<name>.csv`` is the table ``focus-eval report NAME --csv``
writes, and adds its figure (a strip or a scatter chart). The domain-gap page shows the vision encoders' table (the
paper's) and below it the table with every family pooled (``domain-gap-pooled``)."""

from __future__ import annotations

from focus_eval.analysis import focus_figures as ff
from focus_eval.analysis.base import Table
from focus_eval.leaderboard.draw.figures import Point, StripGroup, strip
from focus_eval.leaderboard.draw.scatter import XY, scatter
from focus_eval.leaderboard.pages.site import Site
from focus_eval.leaderboard.pages.views import ViewPage

_AXIS_TITLES = {"eo_gap_age": "equalised-odds gap (age)", "eo_gap_sex": "equalised-odds gap (sex)",
                "ece": "expected calibration error"}


def _page(site: Site, view: ff.FocusView, title: str, heading: str, note: str, figures: list,
          table: Table, more: tuple[tuple[ff.FocusView, str, Table], ...] = ()) -> ViewPage:
    """A view's page; ``more`` adds (view, heading, table) sections below, each with its own CSV."""
    csv = {view.name: table, **{v.name: t for v, _, t in more}}
    return ViewPage(name=view.name, title=title, template="focus_view.html", csv=csv, summary=view.summary,
                    context={"heading": heading, "note": note, "figures": figures, "table": table,
                             "more": [(v.name, h, t) for v, h, t in more]})


def _table(site: Site, view: ff.FocusView) -> Table:
    return view.table(site.entries, site.include_limited, site.include_proxy)


def domain_gap_view(site: Site) -> ViewPage | None:
    table, pooled = _table(site, ff.DOMAIN_GAP), _table(site, ff.DOMAIN_GAP_POOLED)
    if not pooled.rows:
        return None
    groups = [StripGroup(band="", label=row[0], points=[Point(row[7], f"{row[0]}: general minus ophthalmic "
                                                                       f"{row[7]:+.3f}", "series")], mean=False)
              for row in table.rows if row[7] is not None]
    figures = [("strip", strip(groups, "Vision encoders: general minus ophthalmic mean AUROC, per dataset",
                               "difference of mean AUROC (positive: general-domain models do better)",
                               signed=True), "One dot per dataset; the table gives its country and devices.")] \
        if groups else []
    return _page(site, ff.DOMAIN_GAP, "Domain gap", "Per dataset: general minus ophthalmic pretraining",
                 "For each dataset, the mean AUROC of the trained vision encoders pretrained on general images minus "
                 "that of those pretrained on ophthalmic images (FOCUS Table 4, which is over vision encoders only), "
                 "beside where the dataset was collected and with which devices, as its documentation states them. "
                 "Below it, the same difference with every family pooled (dual encoders and multimodal LLMs too), "
                 "which mixes the families' own gaps with their shares of each domain.", figures, table,
                 more=((ff.DOMAIN_GAP_POOLED, "Every family pooled", pooled),))


def interfaces_view(site: Site) -> ViewPage | None:
    lines = ff.eligible(site.entries, site.include_limited, site.include_proxy)
    table = ff.interface_table(lines)
    if not table.rows:
        return None
    groups = []
    for interface, family, method, *_ in table.rows:
        points = [Point(e.metric("auroc"), f"{e.model} on {e.line.task}: AUROC {e.metric('auroc'):.3f}",
                        f"series family-{family}") for e in lines
                  if (e.line.family, e.line.method) == (family, method)]
        groups.append(StripGroup(band="", label=interface, points=points))
    figures = [("strip", strip(groups, "AUROC per interface", "AUROC (one dot per results line, bar: mean)",
                               low=0.5, high=1.0, reference=0.5),
                "One row per interface; the table adds ECE and the paper's Fairness, Quality and Shift.")]
    return _page(site, ff.INTERFACES_VIEW, "Interfaces", "Interface summary",
                 "How each way of asking a model fares over the trained base models' lines: a vision encoder's linear "
                 "probe, a dual encoder's zero-shot prompts or linear probe, a multimodal LLM's yes/no prompt "
                 "(FOCUS Fig. 28).", figures, table)


def reliability_view(site: Site) -> ViewPage | None:
    table = _table(site, ff.RELIABILITY_VIEW)
    if not table.rows:
        return None
    titles = {"auroc": "AUROC", "calibration": "calibration (1 - ECE)", "fairness": "Fairness", "quality": "Quality",
              "shift": "Shift"}
    groups = []
    for i, dimension in enumerate(ff.RELIABILITY):
        for row in table.rows:
            value = row[4 + i]
            if value is not None:
                groups.append(StripGroup(band=titles[dimension], label=f"{row[0]} \u00b7 {row[2]}", mean=False,
                                         points=[Point(value, f"{row[0]} ({row[2]}): {titles[dimension]} {value:.3f}",
                                                       f"series family-{row[1]}")]))
    figures = [("strip", strip(groups, "Reliability matrix", "score (higher is better)", low=0.0, high=1.0),
                "One band per dimension, one row per configuration; the table is the matrix itself.")]
    return _page(site, ff.RELIABILITY_VIEW, "Reliability", "Reliability matrix",
                 "Each configuration (trained base model and method) on five dimensions at once: mean AUROC, "
                 "calibration (1 - mean ECE), and the paper's Fairness, Quality and Shift (FOCUS Fig. 29); an empty "
                 "cell has no line that carries it.", figures, table)


def fairness_calibration_view(site: Site) -> ViewPage | None:
    lines = ff.eligible(site.entries, site.include_limited, site.include_proxy)
    points = ff.fairness_points(lines)
    if not points:
        return None
    table = ff.fairness_calibration_table(points)
    families = sorted({p.entry.line.family for p in points})
    legend = [(site.catalog.label("families", f), f"series family-{f}") for f in families]
    figures = []
    for axis in [a for a, *_ in ff.FAIRNESS_AXES if any(p.axis == a for p in points)]:
        xy = [XY(p.x, p.auroc, f"{p.entry.model} \u00b7 {p.entry.line.method} on {p.entry.line.task}: "
                               f"{axis} {p.x:.3f}, AUROC {p.auroc:.3f}", f"series family-{p.entry.line.family}")
              for p in points if p.axis == axis]
        rs = [f"{site.catalog.label('families', r[0])} r = {'n/a' if r[3] is None else format(r[3], '.2f')}"
              for r in table.rows if r[1] == axis]
        figures.append(("scatter", scatter(xy, f"AUROC against {_AXIS_TITLES[axis]}", _AXIS_TITLES[axis], "AUROC",
                                           x_range=(0.0, None), legend=legend),
                        f"One dot per results line. Pearson's r per family: {'; '.join(rs)}."))
    return _page(site, ff.FAIRNESS_CALIBRATION, "Fairness vs AUROC", "AUROC against fairness and calibration",
                 "Each trained base model's AUROC on a task against its equalised-odds gap between age and sex groups "
                 "and against its ECE, with Pearson's r per model family (FOCUS Fig. 3).", figures, table)


def specialisation_view(site: Site) -> ViewPage | None:
    table = _table(site, ff.SPECIALISATION)
    if not table.rows:
        return None
    groups = []
    for scale, general, special, method, n, g, s, _ in table.rows:
        groups.append(StripGroup(band=f"{scale} \u00b7 {method}", label=general, mean=False,
                                 points=[Point(g, f"{general}: mean AUROC {g:.3f} over {n} tasks", "series domain-general")]))
        groups.append(StripGroup(band=f"{scale} \u00b7 {method}", label=special, mean=False,
                                 points=[Point(s, f"{special}: mean AUROC {s:.3f} over {n} tasks", "series domain-medical")]))
    figures = [("strip", strip(groups, "General and medical model at each scale", "mean AUROC over shared tasks",
                               low=0.5, high=1.0, reference=0.5), "Each band is one scale; both rows cover the same "
                                                                  "tasks.")]
    return _page(site, ff.SPECIALISATION, "Specialisation", "Specialisation against scale",
                 "A general model and its medical specialisation (MedGemma against Gemma 3) at each scale, over the "
                 "tasks both have results for (FOCUS Fig. 5). A pair appears only when both models have results.",
                 figures, table)


def zero_shot_probe_view(site: Site) -> ViewPage | None:
    table = _table(site, ff.ZERO_SHOT_PROBE)
    if not table.rows:
        return None
    models = sorted({r[0] for r in table.rows})
    css = {m: f"series family-{['vm', 'vlm', 'mllm'][i % 3]}" for i, m in enumerate(models)}
    xy = [XY(r[3], r[2], f"{r[0]} on {r[1]}: linear probe {r[3]:.3f}, zero-shot {r[2]:.3f}", css[r[0]])
          for r in table.rows]
    figures = [("scatter", scatter(xy, "Zero-shot against linear probe", "linear-probe AUROC", "zero-shot AUROC",
                                   x_range=(0.5, 1.0), y_range=(0.5, 1.0), diagonal=True,
                                   legend=[(m, css[m]) for m in models]),
                "One dot per dual encoder and task; below the diagonal the linear probe does better.")]
    return _page(site, ff.ZERO_SHOT_PROBE, "Zero-shot vs probe", "Dual encoders: zero-shot against linear probe",
                 "Each dual encoder's zero-shot AUROC on a task against its linear-probe AUROC on the same task "
                 "(FOCUS Fig. 24).", figures, table)

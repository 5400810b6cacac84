"""The fine-tuning page: paired deltas of each adapter against its base model, the in-domain vs out-of-domain
summaries as a forest plot, and every delta on one axis by metric and domain.

A delta is called significant only when q < 0.05, the comparison is powered and its interval excludes zero;
otherwise the page says "not significant" (and why, when it is underpowered), whatever the colour of the number. The
records, their verdicts and the CSV tables are those of the ``finetune`` analysis (``analysis.deltas``).
"""

from __future__ import annotations

from collections import defaultdict

from focus_eval.analysis.deltas import DOMAIN_LABELS, comparisons_table, summary_table
from focus_eval.analysis.significance import MIN_COMPARISONS, SIGNIFICANCE_Q
from focus_eval.leaderboard.draw import charts
from focus_eval.leaderboard.draw.figures import Point, StripGroup, strip
from focus_eval.leaderboard.draw.numbers import fmt_p, fmt_signed
from focus_eval.leaderboard.pages.site import Site
from focus_eval.leaderboard.pages.views import ViewPage
from focus_eval.results.power import MIN_PAIRED, MIN_POSITIVES


def domain_label(domain: str) -> str:
    return DOMAIN_LABELS.get(domain, domain)


def finetune_view(site: Site) -> ViewPage | None:
    data, catalog = site.compare, site.catalog
    if not data:
        return None
    metric_label = catalog.metric_label
    summaries = data.sorted_summaries()
    items = [(f"{metric_label(s.metric)} \u00b7 {domain_label(s.domain)}", s.mean_delta, s.ci,
              f"mean delta {fmt_signed(s.mean_delta)}, q = {fmt_p(s.q)}, {s.verdict.text}", s.verdict.status)
             for s in summaries]
    comparisons = data.sorted_comparisons()
    return ViewPage(name="finetune", title="Fine-tuning", template="finetune.html",
                    summary="in-domain vs out-of-domain fine-tuning deltas",
                    csv={"finetune": comparisons_table(comparisons), "finetune-summary": summary_table(summaries)},
                    context={
                        "summaries": summaries, "comparisons": comparisons,
                        "forest": charts.forest(items) if items else None,
                        "deltas": _deltas(comparisons, metric_label),
                        "other_kinds": sorted(data.other_kinds.items()), "filters": _filters(comparisons),
                        "significance_q": SIGNIFICANCE_Q, "min_comparisons": MIN_COMPARISONS,
                        "min_positives": MIN_POSITIVES, "min_paired": MIN_PAIRED,
                        "metric_label": metric_label, "domain_label": domain_label})


def _deltas(comparisons, metric_label):
    """Every delta on one signed axis: a band per metric, a row per domain, dots coloured by verdict."""
    grouped: dict[tuple[str, str], list[Point]] = defaultdict(list)
    for c in comparisons:
        if c.delta is None:
            continue
        title = (f"{c.adapter or c.model} on {c.test_task}: {metric_label(c.metric)} delta {fmt_signed(c.delta)}"
                 f", q = {fmt_p(c.q)}, {c.verdict.text}")
        grouped[(c.metric, c.domain)].append(Point(c.delta, title, c.verdict.status))
    if not grouped:
        return None
    groups = [StripGroup(band=metric_label(metric), label=domain_label(domain), points=points)
              for (metric, domain), points in sorted(grouped.items())]
    return strip(groups, "Fine-tuning deltas by metric and domain", "delta (fine-tuned \u2212 base)", signed=True)


def _filters(comparisons) -> list[tuple[str, str, list[tuple[str, str]]]]:
    options = []
    for key, label in (("metric", "Metric"), ("domain", "Domain"), ("target", "Target"),
                       ("base_model", "Base model"), ("train_dataset", "Trained on"), ("test_dataset", "Tested on")):
        values = sorted({str(getattr(c, key)) for c in comparisons if getattr(c, key) is not None})
        if len(values) > 1:
            labels = [domain_label(v) if key == "domain" else v for v in values]
            options.append((key, label, list(zip(values, labels))))
    return options

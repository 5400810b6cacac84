"""The statistics pages: rank intervals, pairwise AUROC differences, operating points at pre-specified thresholds
and recalibration, each drawn from the same analysis objects ``focus-eval report ranks|pairwise|operating-points|
recalibration`` computes (so each page's CSV is the report's CSV), and what the main table and task pages take
from them (a rank interval and a tied-with-the-leader mark; a task's pairwise matrix and operating points).
Nothing is computed when the site is built without sample files."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from focus_eval.analysis.base import ReportOptions
from focus_eval.analysis.operating_points import OperatingPoints, operating_points, operating_table
from focus_eval.analysis.pairwise import Matrix, Pairwise, matrices, pairwise, pairwise_table
from focus_eval.analysis.ranks import Ranking, RankRow, ranking, ranks_table
from focus_eval.analysis.samplesets import ReplicateCache, compared_entries, shared_reads
from focus_eval.analysis.recalibration import Recalibration, recalibration, recalibration_table
from focus_eval.leaderboard.draw import charts, statcharts
from focus_eval.leaderboard.draw.calibration import Calibration, reliability_bins
from focus_eval.leaderboard.pages.site import Site
from focus_eval.leaderboard.pages.views import ViewPage
from focus_eval.results.collect import Collection

MAX_DIAGRAMS = 24  # reliability pairs drawn on the recalibration page (the CSV has every row)
MAX_LISTED = 300   # pairwise comparisons listed on the page (the CSV has every one)
MAX_MATRIX = 40       # configurations a task page's pairwise matrix draws
MAX_TASK_PAIRS = 100  # comparisons a task page lists, smallest p first (the CSV has every one)
SITE_WORK = 100_000_000  # image-resamples the site's bootstrap may take before it resamples less
MIN_SITE_BOOT = 200


@dataclass(frozen=True)
class SiteStats:
    options: ReportOptions
    ranking: Ranking
    pairwise: Pairwise
    operating: OperatingPoints
    recalibration: Recalibration


def site_n_boot(collection: Collection, options: ReportOptions) -> int:
    """The report's default resamples, or fewer (never under ``MIN_SITE_BOOT``, in hundreds) when the
    configurations' test images summed over tasks would take more than ``SITE_WORK`` image-resamples; the pages
    and CSV notes state the number, and ``focus-eval report --n-boot N`` reproduces them."""
    images = sum(int(e.line.n or 0) for e in compared_entries(collection, options))
    if images * options.n_boot <= SITE_WORK:
        return options.n_boot
    return max(MIN_SITE_BOOT, SITE_WORK // max(images, 1) // 100 * 100)


def site_stats(collection: Collection, include_proxy: bool, include_limited: bool) -> SiteStats:
    options = ReportOptions(include_limited=include_limited, include_proxy=include_proxy)
    with shared_reads():
        options = replace(options, n_boot=site_n_boot(collection, options))
        cache = ReplicateCache(options.n_boot, options.seed)
        return SiteStats(options, ranking(collection, options, cache), pairwise(collection, options, cache),
                         operating_points(collection, options), recalibration(collection, options))


def with_rank_intervals(rows: Sequence, stats: SiteStats | None) -> list:
    """Main-table rows with the overall rank interval and tied-with-the-leader mark of their configuration."""
    if stats is None:
        return list(rows)
    overall = {False: {r.model: r for r in stats.ranking.scope("overall")},
               True: {r.model: r for r in stats.ranking.scope("untrained:overall")}}
    out = []
    for row in rows:
        found = overall[bool(row.untrained)].get(row.config.label)
        out.append(row if found is None else replace(row, rank_interval=(found.rank_low, found.rank_high),
                                                     tied=found.tied, leader=found.status == "leader"))
    return out


def _scopes(rows: list[RankRow]) -> list[tuple[str, list[RankRow]]]:
    names = list(dict.fromkeys(r.scope for r in rows))
    return [(n, [r for r in rows if r.scope == n]) for n in names]


def ranks_view(site: Site) -> ViewPage | None:
    stats = site.stats
    if stats is None or not stats.ranking.rows:
        return None
    scopes = _scopes(stats.ranking.rows)
    figures = [(name, statcharts.rank_intervals(rows, f"Rank intervals: {name}"))
               for name, rows in scopes if "task:" not in name]
    return ViewPage(name="ranks", title="Rank intervals", template="ranks.html",
                    summary="how sure the order is: 95% rank intervals and P(first) by paired patient bootstrap",
                    csv={"ranks": ranks_table(stats.ranking, stats.options.n_boot)},
                    context={"scopes": scopes, "figures": figures, "notes": stats.ranking.notes,
                             "n_boot": stats.options.n_boot})


def pairwise_view(site: Site) -> ViewPage | None:
    stats = site.stats
    if stats is None or not stats.pairwise.rows:
        return None
    found = matrices(stats.pairwise)
    significant = [r for r in stats.pairwise.rows if r.significant]
    return ViewPage(name="pairwise", title="Pairwise", template="pairwise.html",
                    summary="AUROC differences of every pair per task: paired bootstrap, DeLong, Holm and BH",
                    csv={"pairwise": pairwise_table(stats.pairwise, stats.options.n_boot)},
                    context={"matrices": [(m, statcharts.win_matrix(m, f"Pairwise wins: {m.target}")) for m in found],
                             "significant": significant[:MAX_LISTED], "n_significant": len(significant),
                             "n_rows": len(stats.pairwise.rows), "notes": stats.pairwise.notes,
                             "n_boot": stats.options.n_boot})


def operating_view(site: Site) -> ViewPage | None:
    stats = site.stats
    if stats is None or not (stats.operating.rows or stats.operating.notes):
        return None
    endpoints = stats.operating.settings.endpoints if stats.operating.settings else ()
    figures = []
    for target in sorted({r.target or "" for r in stats.operating.rows}):
        endpoint = next((p for p in endpoints if p.target == target), None)
        for rule in dict.fromkeys(r.rule for r in stats.operating.rows):
            points = [r for r in stats.operating.rows if (r.target or "") == target and r.rule == rule]
            if points:
                figures.append((target, rule, statcharts.operating_plot(points, endpoint,
                                                                        f"{target}: operating points ({rule})")))
    return ViewPage(name="operating-points", title="Operating points", template="operating_points.html",
                    summary="sensitivity and specificity at thresholds fixed on validation; screening endpoints",
                    csv={"operating_points": operating_table(stats.operating)},
                    context={"rows": stats.operating.rows, "figures": figures, "endpoints": endpoints,
                             "notes": stats.operating.notes})


def _reliability(y, p):
    bins = reliability_bins(p, y)
    return charts.reliability(Calibration(bins=bins, n=int(y.size), n_skipped=0))


def recalibration_view(site: Site) -> ViewPage | None:
    stats = site.stats
    if stats is None or not (stats.recalibration.rows or stats.recalibration.notes):
        return None
    table = recalibration_table(stats.recalibration)
    shown = [r for r in stats.recalibration.rows if r.scaling == "temperature"][:MAX_DIAGRAMS]
    diagrams = [(r, _reliability(r.y, r.before), _reliability(r.y, r.after)) for r in shown]
    return ViewPage(name="recalibration", title="Recalibration", template="recalibration.html",
                    summary="temperature and Platt scaling fitted on validation: ECE and Brier before and after",
                    csv={"recalibration": table},
                    context={"table": table, "diagrams": diagrams, "notes": table.notes})


def task_statistics(site: Site, task: str) -> dict:
    """A task page's pairwise matrix and operating points (empty without sample files)."""
    stats = site.stats
    if stats is None:
        return {"pairwise": [], "n_pairwise": 0, "pair_matrix": None, "operating": []}
    rows = stats.pairwise.task(task)
    matrix = None
    if rows and len({m for r in rows for m in (r.model_a, r.model_b)}) <= MAX_MATRIX:
        [only] = matrices(Pairwise(rows=rows))
        matrix = statcharts.win_matrix(Matrix(task, only.models, only.wins, only.shared), f"Pairwise: {task}")
    listed = sorted(rows, key=lambda r: (r.p is None, r.p or 0.0))[:MAX_TASK_PAIRS]
    return {"pairwise": listed, "n_pairwise": len(rows), "pair_matrix": matrix,
            "operating": [r for r in stats.operating.rows if r.task == task]}

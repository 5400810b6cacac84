"""The overview's main table as CSV (``data/main-table.csv``, linked under the table): every row the page shows,
baselines included, with each mean's full-precision value, interval and task count, so what the page rounds can be
taken into a spreadsheet or a script. The per-image pages write their own rows beside them (``sample_pages``)."""

from __future__ import annotations

from typing import Sequence

from focus_eval.leaderboard.draw.csvdata import CsvTable
from focus_eval.leaderboard.pages.maintable import MainRow


def main_table_csv(rows: Sequence[MainRow], targets: Sequence[str]) -> CsvTable:
    """One line per main-table row, in the page's order (trained configurations, then untrained baselines)."""
    means = ["overall", *targets]
    columns = ["rank", "model", "method", "adapter", "conventions", "submitter", "untrained"]
    for name in means:
        columns += [f"{name}_auroc", f"{name}_ci_low", f"{name}_ci_high", f"{name}_tasks"]
    columns += ["tasks_covered", "tasks_total", "rank_low", "rank_high", "leader", "tied_with_leader", "family",
                "domain", "coverage", "limited", "contaminated_tasks", "verification"]
    table = CsvTable(columns)
    for r in rows:
        c = r.config
        values = [r.rank, c.model, c.method, c.adapter or None, c.convention_text or None, c.submitter or None,
                  r.untrained]
        for mean in (r.overall, *(r.targets[t] for t in targets)):
            low, high = mean.ci if mean.ci else (None, None)
            values += [mean.value, low, high, mean.n]
        low, high = r.rank_interval if r.rank_interval else (None, None)
        values += [r.covered, r.total, low, high, r.leader, r.tied, c.family, c.domain, r.coverage, c.limited,
                   r.contaminated, c.verification]
        table.add(*values)
    return table

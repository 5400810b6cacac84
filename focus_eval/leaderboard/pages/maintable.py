"""The overview's main table: one row per configuration (model, method, adapter, conventions, submitter) with its mean
AUROC per target and over all tasks, each with an interval, the tasks it covers, and its flags.

Means are unweighted over the included tasks (proxy and underpowered tasks only with ``--include-proxy``), as
group lines are, and their interval follows the same rule as group lines' (``analysis.significance.
mean_of_scores``): the tasks' bootstrap replicates, recomputed from their sample files, averaged replicate by
replicate. A mean with a task whose samples are not at hand (``--no-samples``, no sample file) has no interval.

The lines are those of the one pairing step (``results.identity.pair``); a row counts, by reason, its
configuration's lines that were left out (another task version, no answers, low coverage), and ``main_csv`` writes
the table with those counts as ``data/main.csv``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping, Sequence

from focus_eval.analysis.significance import Mean, competition_ranks, mean_of_scores
from focus_eval.analysis.summary import included
from focus_eval.leaderboard.draw.csvdata import CsvTable
from focus_eval.leaderboard.draw.samples import SampleView
from focus_eval.leaderboard.pages.groups import Configuration, TaskInfo
from focus_eval.results.identity import LIMITED, VARIANT_LINE, LeftOut


@dataclass(frozen=True)
class MainRow:
    """One configuration's row of the main table."""

    config: Configuration
    overall: Mean
    targets: dict[str, Mean]
    covered: int
    total: int
    contaminated: int
    rank: int | None = None
    # the overall scope of the ``ranks`` analysis (pages.statistics): 95% rank interval, leader, tied with it
    rank_interval: tuple[int, int] | None = None
    leader: bool = False
    tied: bool = False
    # reason kind -> how many of the configuration's lines were left out for it (results.identity)
    left_out: dict[str, int] = field(default_factory=dict)

    @property
    def untrained(self) -> bool:
        return self.config.untrained

    @property
    def coverage(self) -> float | None:
        """A prompt method's lowest coverage over the row's lines (the share of readable answers), else None."""
        return min((e.line.coverage for e in self.config.entries if e.line.coverage is not None), default=None)


def main_rows(configs: Sequence[Configuration], tasks: Sequence[TaskInfo], targets: Sequence[str],
              include_proxy: bool, samples: Mapping[tuple, SampleView]) -> list[MainRow]:
    """Rows of trained configurations, best overall AUROC first, then untrained baselines (ranked apart)."""
    counted = {t.name for t in tasks if include_proxy or not (t.proxy or t.underpowered)}
    rows = []
    for config in configs:
        lines = included(config.entries, include_proxy)
        rows.append(MainRow(
            config=config, overall=mean_of(lines, samples),
            targets={t: mean_of([e for e in lines if e.line.target == t], samples) for t in targets},
            covered=len({e.line.task for e in lines if e.metric("auroc") is not None} & counted),
            total=len(counted), contaminated=sum(e.contamination is not None for e in lines)))
    trained = _ranked([r for r in rows if not r.untrained])
    baselines = _ranked([r for r in rows if r.untrained])
    return trained + baselines


# reasons a row does not state: a fragility line is on the fragility page, a --limit run is a row of its own
UNSTATED = (LIMITED, VARIANT_LINE)


def with_left_out(rows: Sequence[MainRow], left_out: Iterable[LeftOut]) -> list[MainRow]:
    """Rows with the count, by reason, of their configuration's lines that the ranking left out."""
    counts: dict[tuple, Counter] = {}
    for item in left_out:
        kind = item.reason.partition(": ")[0]
        if kind not in UNSTATED:
            counts.setdefault(item.entry.config, Counter())[kind] += 1
    return [replace(r, left_out=dict(counts.get(r.config.key, {}))) for r in rows]


def main_csv(rows: Sequence[MainRow], targets: Sequence[str], left_out: Iterable[LeftOut]) -> CsvTable:
    """The main table as CSV (``data/main.csv``): one row per ranked configuration, then one per results line left
    out of the ranking with its reason; ``submitter`` and ``verification`` (a row's: its lines' worst state, empty
    when one was not verified) where the lines came in bundles or were verified."""
    table = CsvTable(("rank", "model", "method", "adapter", "conventions", "submitter", "overall", "overall_low",
                      "overall_high", *targets, "tasks", "rank_low", "rank_high", "untrained", "coverage", "flags",
                      "verification", "task", "left_out"))
    for r in rows:
        c = r.config
        low, high = r.overall.ci or (None, None)
        flags = [f"{kind} ({n})" for kind, n in r.left_out.items()] + (["limited"] if c.limited else [])
        table.add(r.rank, c.model, c.method, c.adapter or None, c.convention_text or None, c.submitter or None,
                  r.overall.value, low, high, *(r.targets[t].value for t in targets), f"{r.covered}/{r.total}",
                  *(r.rank_interval or (None, None)), r.untrained, r.coverage, "; ".join(flags) or None,
                  c.verification, None, None)
    for item in left_out:
        e = item.entry
        table.add(None, e.model, e.line.method, e.line.adapter, e.convention_text or None, e.submitter, None, None,
                  None, *(None for _ in targets), None, None, None, bool(e.line.untrained), e.line.coverage,
                  ",".join(e.flags) or None, e.verification, e.line.task, item.reason)
    return table


def mean_of(entries, samples: Mapping[tuple, SampleView]) -> Mean:
    """Mean AUROC of results lines with its interval (from their sample files' bootstrap replicates)."""
    def replicates(e):
        view = samples.get(e.key)
        return None if view is None else view.auroc_replicates

    return mean_of_scores((e.metric("auroc"), replicates(e)) for e in entries)


def _ranked(rows: list[MainRow]) -> list[MainRow]:
    rows = sorted(rows, key=lambda r: (r.overall.value is None, -(r.overall.value or 0.0), r.config.label))
    ranks = competition_ranks([r.overall.value for r in rows])
    return [replace(r, rank=rank) for r, rank in zip(rows, ranks)]

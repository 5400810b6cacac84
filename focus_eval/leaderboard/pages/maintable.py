"""The overview's main table: one row per configuration (model, method, adapter, conventions) with its mean
AUROC per target and over all tasks, each with an interval, the tasks it covers, and its flags.

Means are unweighted over the included tasks (proxy and underpowered tasks only with ``--include-proxy``), as
group lines are, and their interval follows the same rule as group lines' (``analysis.significance.
mean_of_scores``): the tasks' bootstrap replicates, recomputed from their sample files, averaged replicate by
replicate. A mean with a task whose samples are not at hand (``--no-samples``, no sample file) has no interval.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from focus_eval.analysis.significance import Mean, competition_ranks, mean_of_scores
from focus_eval.analysis.summary import included
from focus_eval.leaderboard.draw.samples import SampleView
from focus_eval.leaderboard.pages.groups import Configuration, TaskInfo


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

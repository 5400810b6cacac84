"""Everything one build shows, gathered once: the pages read from this record and never from files."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from focus_eval.analysis.deltas import FineTuning
from focus_eval.data.readers.synth import NAMES as SYNTHETIC_DATASETS
from focus_eval.leaderboard.draw.catalog import Catalog
from focus_eval.leaderboard.draw.samples import SampleView
from focus_eval.leaderboard.pages.groups import Configuration, ModelInfo, TableBlock, TaskInfo
from focus_eval.leaderboard.pages.maintable import MainRow
from focus_eval.results.collect import Entry, GroupEntry
from focus_eval.results.collect import RunIndex


@dataclass
class Site:
    """The build's results, grouped the ways the pages show them.

    ``entries`` holds every results line (model and task pages list them all); ``ranked`` the lines that enter
    rankings, means and figures (``--limit`` runs only with ``--include-limited``).
    """

    catalog: Catalog
    entries: list[Entry]
    tasks: list[TaskInfo]
    models: list[ModelInfo]
    configs: list[Configuration]
    top: list[Configuration]
    table: list[TableBlock]
    samples: dict[tuple, SampleView]
    compare: FineTuning
    include_proxy: bool
    model_slugs: dict[str, str]
    task_slugs: dict[str, str]
    group_lines: list[GroupEntry] = field(default_factory=list)
    ranked: list[Entry] = field(default_factory=list)
    main: list[MainRow] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    runs: RunIndex = field(default_factory=RunIndex)
    include_limited: bool = False
    title: str = "FOCUS leaderboard"
    base_url: str | None = None
    # results-line key -> its per-image page (none with --no-samples); (dataset, image id) -> thumbnail path
    sample_links: dict[tuple, str] = field(default_factory=dict)
    thumbs: dict[tuple[str, str], str] = field(default_factory=dict)
    # the paired statistics over sample files (pages.statistics.SiteStats); None when published without samples
    stats: Any = None
    # results-line key -> the task its per-image page's prompts come from (pages.sample_pages.AskedTask)
    asked: dict[tuple, Any] = field(default_factory=dict)
    # the binary lines the rankings leave out, each with its reason (results.identity.LeftOut)
    left_out: list = field(default_factory=list)
    # the submission bundles read (results.bundle.Bundle), and whether unverified lines are ranked
    bundles: list = field(default_factory=list)
    include_unverified: bool = False

    @property
    def synthetic(self) -> bool:
        """Whether every results line comes from a synthetic dataset (the demo's numbers say nothing about
        real photographs)."""
        return bool(self.entries) and all(e.line.dataset in SYNTHETIC_DATASETS for e in self.entries)

    @property
    def submitted(self) -> bool:
        """Whether some line came in a submission bundle (the pages then show who submitted each line)."""
        return any(e.submitter for e in self.entries)

    @property
    def verified(self) -> bool:
        """Whether some line was verified (the pages then show each line's verification)."""
        return any(e.verdict is not None for e in self.entries)

    @property
    def n_limited(self) -> int:
        return sum(e.limited for e in self.entries)

    @property
    def has_trained(self) -> bool:
        return any(not e.line.untrained for e in self.ranked)

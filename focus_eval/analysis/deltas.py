"""The fine-tuning comparison summary: the delta and summary lines of ``focus-eval compare`` as the leaderboard's
fine-tuning page and ``focus-eval report finetune`` show them, each with its verdict.

A delta is called significant only when q < 0.05, the comparison is powered (``results.power``) and its interval
excludes zero; a summary is a mean over at least ``MIN_COMPARISONS`` comparisons. Lines whose ``kind`` is
neither "delta" or absent (a comparison) nor ``summary`` are counted and listed by kind rather than guessed at.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from focus_eval.analysis.base import ReportOptions, Table
from focus_eval.analysis.significance import MIN_COMPARISONS, Verdict, verdict
from focus_eval.errors import FocusError
from focus_eval.results.collect import Collection, CompareData, read_compare_lines
from focus_eval.results.power import underpowered_pair
from focus_eval.results.schema import CompareLine, CompareSummaryLine

DOMAIN_LABELS = {"in_domain": "in-domain", "ood": "OOD"}


@dataclass(frozen=True)
class LineView:
    """A compare line, where it was read (file and row), and what may be said of it; the line's keys read as
    attributes (``v.delta``, ``v.test_task``)."""

    line: CompareLine | CompareSummaryLine
    source: Path
    row: int

    def __getattr__(self, name: str) -> Any:
        if name == "line":
            raise AttributeError(name)
        return getattr(self.line, name)


@dataclass(frozen=True)
class DeltaVerdict(LineView):
    """One (adapter, test task, metric) delta of a fine-tuned model against its base model, and its verdict."""

    @property
    def domain(self) -> str:
        in_domain = self.line.in_domain
        return "unknown" if in_domain is None else ("in_domain" if in_domain else "ood")

    @property
    def underpowered(self) -> bool:
        """Flagged by ``focus-eval compare``, or too few paired positives or images to be powered."""
        return bool(self.line.underpowered) or underpowered_pair(self.line.n, self.line.n_pos)

    @property
    def verdict(self) -> Verdict:
        return verdict(self.line.metric, self.line.delta, self.line.ci, self.line.q, self.underpowered)


@dataclass(frozen=True)
class SummaryVerdict(LineView):
    """Mean delta over the comparisons of one metric and domain (in-domain or OOD), and its verdict."""

    @property
    def underpowered(self) -> bool:
        """A mean over fewer than MIN_COMPARISONS comparisons (or an unknown number) is not a summary."""
        return self.line.n_comparisons is None or self.line.n_comparisons < MIN_COMPARISONS

    @property
    def verdict(self) -> Verdict:
        return verdict(self.line.metric, self.line.mean_delta, self.line.ci, self.line.q, self.underpowered)


@dataclass
class FineTuning:
    """Everything the comparison files of one build say: comparisons and summaries with their verdicts (in
    reading order), lines of other kinds counted, and the rows as read."""

    comparisons: list[DeltaVerdict] = field(default_factory=list)
    summaries: list[SummaryVerdict] = field(default_factory=list)
    other_kinds: Counter = field(default_factory=Counter)
    raw: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.comparisons or self.summaries or self.other_kinds)

    def sorted_comparisons(self) -> list[DeltaVerdict]:
        return sorted(self.comparisons, key=lambda c: (c.metric, c.domain, c.adapter or "", c.test_task or ""))

    def sorted_summaries(self) -> list[SummaryVerdict]:
        return sorted(self.summaries, key=lambda s: (s.metric, s.domain))


def fine_tuning(data: CompareData) -> FineTuning:
    return FineTuning(comparisons=[DeltaVerdict(d.line, d.source, d.row) for d in data.deltas],
                      summaries=[SummaryVerdict(s.line, s.source, s.row) for s in data.summaries],
                      other_kinds=data.other_kinds, raw=data.raw)


def read_compare_files(paths: Iterable[Path]) -> FineTuning:
    """The comparison files' lines with their verdicts; a malformed line is an error naming its file and row."""
    return fine_tuning(read_compare_lines(paths))


def comparisons_table(comparisons: Iterable[DeltaVerdict]) -> Table:
    """Every delta with its verdict (the page's ``data/finetune.csv``)."""
    table = Table(("adapter", "base_model", "train_dataset", "test_task", "test_dataset", "domain", "metric",
                   "base", "fine_tuned", "delta", "ci_low", "ci_high", "p", "q", "n", "n_pos", "underpowered",
                   "verdict"), title="Fine-tuning deltas")
    for c in comparisons:
        table.add(c.adapter or c.model, c.base_model, c.train_dataset, c.test_task, c.test_dataset, c.domain,
                  c.metric, c.base, c.ft, c.delta, *(c.ci or (None, None)), c.p, c.q, c.n, c.n_pos, c.underpowered,
                  c.verdict.status)
    return table


def summary_table(summaries: Iterable[SummaryVerdict]) -> Table:
    """The in-domain and OOD summaries with their verdicts (the page's ``data/finetune-summary.csv``)."""
    table = Table(("metric", "domain", "mean_delta", "ci_low", "ci_high", "p", "q", "n_comparisons",
                   "underpowered", "verdict"), title="Fine-tuning: mean delta per metric and domain")
    for s in summaries:
        table.add(s.metric, s.domain, s.mean_delta, *(s.ci or (None, None)), s.p, s.q, s.n_comparisons,
                  s.underpowered, s.verdict.status)
    return table


@dataclass(frozen=True)
class FineTuningSummary:
    """``focus-eval report finetune``: the summary table of the leaderboard's fine-tuning page."""

    name: str = "finetune"
    summary: str = ("fine-tuning comparison summary: in-domain and OOD mean deltas of focus-eval compare's lines, "
                    "with their verdicts")
    inputs: tuple[str, ...] = ("compare",)
    varies: str = "configuration"  # an adapter against its base model, as focus-eval compare paired them

    def compute(self, collection: Collection, options: ReportOptions = ReportOptions()) -> Table:
        tuning = fine_tuning(collection.compare)
        if not tuning:
            raise FocusError("no comparison lines (compare*.jsonl written by focus-eval compare) under "
                             + ", ".join(map(str, collection.paths)))
        table = summary_table(tuning.sorted_summaries())
        if tuning.other_kinds:
            table.notes.append("lines of other kinds left out: " + ", ".join(
                f"{kind} ({n})" for kind, n in sorted(tuning.other_kinds.items())))
        return table


ANALYSIS = FineTuningSummary()

"""Paper-style summary columns (FOCUS Table 3): group means, Fairness, Quality and Shift, without imputation.

A group is a set of results lines (a target x family x method cell, or one configuration). Accuracy, AUROC,
AUPRC and ECE are unweighted means over the group's lines. Fairness and Quality follow the paper: per gap
column, the mean over the group's lines; then the mean across columns; then 1 - gap, clipped to [0, 1]. The
paper fills a missing gap with the median over the table before this; here a missing gap stays missing, and
each score states its coverage (lines with at least one gap / lines in the group). Lines whose AUROC cannot be
told from chance do not enter Fairness or Quality: a model that ranks at random has small gaps for free.
Shift is 1 - (max - min) over datasets of the per-dataset mean AUROC: a spread across datasets, not a
transfer measure.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from statistics import fmean
from typing import Callable, Iterable, Sequence

from focus_eval.results.collect import Entry
from focus_eval.results.schema import QUALITY_GAPS

# The paper's fairness columns: equalised-odds, accuracy and AUROC gaps of every demographic attribute.
FAIRNESS_SUMMARY_GAPS = ("eo_gap", "accuracy_gap", "auroc_gap")
# Its quality columns mix ECE with accuracy/AUROC gaps (kept for comparability; the gaps are shown apart too).
QUALITY_SUMMARY_GAPS = QUALITY_GAPS
QUALITY_GROUP = "quality"
SUMMARY_METRICS = ("accuracy", "auroc", "auprc", "ece")
CHANCE = 0.5
CHANCE_MARGIN = 0.05


@dataclass(frozen=True)
class Score:
    """A 0..1 summary score with the share of the group's lines that carried any of its gaps."""

    value: float | None
    covered: int
    total: int


@dataclass(frozen=True)
class GroupSummary:
    """The summary columns of one group of results lines."""

    means: dict[str, float | None]
    fairness: Score
    quality: Score
    shift: float | None
    n_lines: int
    n_models: int
    n_datasets: int
    untrained: bool
    n_chance: int = 0


def included(entries: Iterable[Entry], include_proxy: bool = False) -> list[Entry]:
    """Lines that enter group means: proxy and underpowered tasks only when asked (they are shown elsewhere)."""
    return [e for e in entries if include_proxy or not (e.line.proxy or e.underpowered)]


def chance_level(entry: Entry) -> bool:
    """Whether the line's AUROC cannot be told from chance: its 95% interval reaches 0.5 (without an interval,
    AUROC at most 0.55). A small gap of such a model says nothing about fairness or robustness."""
    auroc = entry.metric("auroc")
    if auroc is None:
        return False
    ci = entry.metric_ci("auroc")
    if ci and None not in ci:
        return ci[0] <= CHANCE
    return auroc <= CHANCE + CHANCE_MARGIN


def summarize(entries: Sequence[Entry]) -> GroupSummary:
    means = {m: _mean(e.metric(m) for e in entries) for m in SUMMARY_METRICS}
    informative = [e for e in entries if not chance_level(e)]
    return GroupSummary(
        means=means,
        fairness=gap_score(informative, fairness_columns(informative), total=len(entries)),
        quality=gap_score(informative, quality_columns(), total=len(entries)),
        n_chance=len(entries) - len(informative),
        shift=shift(entries),
        n_lines=len(entries),
        n_models=len({e.model for e in entries}),
        n_datasets=len({e.line.dataset for e in entries}),
        untrained=any(e.line.untrained for e in entries),
    )


Column = Callable[[Entry], "float | None"]


def fairness_columns(entries: Iterable[Entry]) -> list[Column]:
    """One column per (demographic attribute, summary gap), for every attribute present in the lines."""
    attributes = sorted({a for e in entries for a in e.line.fairness})
    return [_gap_column("fairness", a, g) for a in attributes for g in FAIRNESS_SUMMARY_GAPS]


def quality_columns() -> list[Column]:
    return [_gap_column("robustness", QUALITY_GROUP, g) for g in QUALITY_SUMMARY_GAPS]


def _gap_column(section: str, group: str, gap: str) -> Column:
    return lambda entry: entry.gap(section, group, gap)


def gap_score(entries: Sequence[Entry], columns: Sequence[Column], total: int | None = None) -> Score:
    """1 - (mean across columns of the per-column mean gap), clipped to [0, 1]; None when no gap exists.
    ``total`` is the group's size when ``entries`` are the part of it that may count (chance-level lines not)."""
    total = len(entries) if total is None else total
    column_means = [_mean(column(e) for e in entries) for column in columns]
    present = [m for m in column_means if m is not None]
    covered = sum(any(column(e) is not None for column in columns) for e in entries)
    if not present:
        return Score(value=None, covered=covered, total=total)
    return Score(value=min(1.0, max(0.0, 1.0 - fmean(present))), covered=covered, total=total)


def shift(entries: Sequence[Entry]) -> float | None:
    """1 - (max - min) of per-dataset mean AUROC; None with fewer than two datasets (no spread to measure)."""
    by_dataset: dict[str | None, list[float]] = defaultdict(list)
    for entry in entries:
        if entry.metric("auroc") is not None:
            by_dataset[entry.line.dataset].append(entry.metric("auroc"))
    means = [fmean(v) for v in by_dataset.values()]
    if len(means) < 2:
        return None
    return 1.0 - (max(means) - min(means))


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return fmean(present) if present else None

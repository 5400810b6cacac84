"""Per-group values behind the fairness and robustness gaps, from a line's sample file.

A results line stores each gap as |max - min| over two groups, so it says neither which group fares better nor
what either group scored. Both come from the sample rows here, with the groups, minimum sizes and metric
functions the gaps were computed with (``focus_eval.metrics.fairness`` and ``robustness``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from focus_eval.metrics import fairness as fairness_metrics
from focus_eval.metrics import robustness as robustness_metrics
from focus_eval.metrics.arrays import SampleArrays
from focus_eval.results.schema import FAIRNESS_GAPS, QUALITY_GAPS

# gap -> (per-group metric function, rows it uses), exactly as the gaps are computed
FAIRNESS_GROUP_METRICS = fairness_metrics._GROUP_METRICS
QUALITY_GROUP_METRICS = robustness_metrics._QUALITY_METRICS
# gaps whose per-group value has no better side (a positive-prediction rate is neither good nor bad)
NEUTRAL = frozenset({"dp_gap"})


@dataclass(frozen=True)
class GroupValues:
    """One group of an attribute: its label, usable rows, and the metric behind each gap (None when the group
    is below the minimum size or the value is undefined)."""

    label: str
    n: int
    values: dict[str, float | None]


@dataclass(frozen=True)
class AttributeGroups:
    """The two groups of one attribute (age, sex, image quality) of one results line."""

    attribute: str
    groups: tuple[GroupValues, GroupValues]
    min_size: int

    def better(self, gap: str) -> str | None:
        """Label of the group that fares better on the metric behind ``gap`` (lower is better for ECE and
        false-positive rate); None when a value is missing, the values tie, or the metric has no better side."""
        if gap in NEUTRAL:
            return None
        a, b = (g.values.get(gap) for g in self.groups)
        if a is None or b is None or a == b:
            return None
        lower = gap in ("fpr_gap", "ece_gap")
        first_wins = (a < b) if lower else (a > b)
        return self.groups[0 if first_wins else 1].label

    def higher(self, gap: str) -> str | None:
        """Label of the group with the higher value of the metric behind ``gap``, or None."""
        a, b = (g.values.get(gap) for g in self.groups)
        if a is None or b is None or a == b:
            return None
        return self.groups[0 if a > b else 1].label


def has_groups(block: dict[str, Any] | None) -> bool:
    """Whether a gap block describes real groups: some gap was computed, or groups exist but are too small."""
    if not block:
        return False
    return (block.get("n_min") or 0) > 0 or any(block.get(g) is not None for g in (*FAIRNESS_GAPS, *QUALITY_GAPS))


def subgroup_values(arrays: SampleArrays, line_fairness: dict[str, Any],
                    line_robustness: dict[str, Any] | None = None) -> dict[str, AttributeGroups]:
    """Age (split at the line's recorded threshold), sex and image-quality groups of one sample file, for the
    attributes whose gaps the results line holds (``line_robustness`` None: all three)."""
    threshold = (line_fairness.get("age") or {}).get("threshold")
    age_labels = (f"age \u2264 {threshold:g}", f"age > {threshold:g}") if isinstance(threshold, (int, float)) \
        else ("younger", "older")
    specs = (("age", fairness_metrics.age_groups(arrays, threshold), age_labels, FAIRNESS_GROUP_METRICS,
              fairness_metrics.MIN_GROUP_SIZE),
             ("sex", fairness_metrics.sex_groups(arrays), ("male", "female"), FAIRNESS_GROUP_METRICS,
              fairness_metrics.MIN_GROUP_SIZE),
             ("quality", robustness_metrics.quality_groups(arrays), ("adequate", "inadequate"),
              QUALITY_GROUP_METRICS, robustness_metrics.MIN_GROUP_SIZE))
    if line_robustness is not None:
        blocks = {**line_fairness, "quality": line_robustness.get("quality")}
        specs = tuple(spec for spec in specs if has_groups(blocks.get(spec[0])))
    if not specs:
        return {}
    masks = np.vstack([mask for _, pair, _, _, _ in specs for mask in pair]).astype(float)
    values = _values(arrays, masks, {**FAIRNESS_GROUP_METRICS, **QUALITY_GROUP_METRICS})
    usable = masks @ (arrays.has_score | arrays.has_pred)
    out = {}
    for i, (attribute, _, labels, table, min_size) in enumerate(specs):
        groups = []
        for k, label in enumerate(labels):
            row = 2 * i + k  # a value counts only from a group of at least min_size rows, as its gap does
            shown = {gap: value if n >= min_size else None for gap in table for value, n in [values[gap][row]]}
            groups.append(GroupValues(label=label, n=int(usable[row]), values=shown))
        groups = tuple(groups)
        if any(g.n for g in groups):
            out[attribute] = AttributeGroups(attribute=attribute, groups=groups, min_size=min_size)
    return out


def _values(arrays: SampleArrays, masks: np.ndarray, table: dict) -> dict[str, list[tuple[float | None, float]]]:
    """Each gap's metric in every group at once: the batched metric functions take one weight row per group
    (a 0/1 mask, as a bootstrap takes one per replicate). Per group: (value or None, rows it used)."""
    out = {}
    for gap, (function, column) in table.items():
        rows = arrays.rows(column)
        weights = masks[:, rows]
        source = arrays.score if column == "score" else arrays.pred
        results = function(arrays.y[rows], source[rows], weights) if rows.any() else np.full(len(masks), np.nan)
        out[gap] = [(float(v) if np.isfinite(v) else None, float(n)) for v, n in zip(results, weights.sum(1))]
    return out

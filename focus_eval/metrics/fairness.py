"""Subgroup fairness gaps by age and sex (SPEC section 6), as |max - min| over the two groups.

Age groups split at one threshold per task: the median known age of the task's test split, computed once
from the task's records (``age_threshold``) and passed in, so every model sees the same groups; rows with
age <= threshold form one group and age > threshold the other. Sex groups are male and female.

Gaps: dp_gap (share predicted positive), accuracy_gap, tpr_gap (equal opportunity), fpr_gap, eo_gap =
max(tpr_gap, fpr_gap) (equalised odds), all from hard predictions on pred rows, and auroc_gap from scores on
score rows. A gap is None when a group has fewer than ``min_size`` (10) rows of the kind it uses, or when a
group's value is undefined (no positives for TPR, no negatives for FPR, one class for AUROC); eo_gap is None
when either part is. ``n_min`` is the size of the smaller group, counting rows usable by any metric.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from focus_eval.metrics import core
from focus_eval.metrics.arrays import SampleArrays
from focus_eval.metrics.bootstrap import summarize
from focus_eval.metrics.resamples import Resamples, over

MIN_GROUP_SIZE = 10
FAIRNESS_GAPS = ("dp_gap", "accuracy_gap", "tpr_gap", "fpr_gap", "eo_gap", "auroc_gap")
# gap name -> (per-group batched metric, rows it uses)
_GROUP_METRICS = {
    "dp_gap": (core.positive_rate_batch, "pred"),
    "accuracy_gap": (core.accuracy_batch, "pred"),
    "tpr_gap": (core.recall_batch, "pred"),
    "fpr_gap": (core.fpr_batch, "pred"),
    "auroc_gap": (core.auroc_batch, "score"),
}


def age_threshold(ages: Sequence[float | None]) -> float | None:
    """Median of the known ages (the task's test split); None when no age is known."""
    known = np.array([a for a in ages if a is not None and np.isfinite(a)], dtype=float)
    return float(np.median(known)) if known.size else None


def age_groups(arrays: SampleArrays, threshold: float | None) -> list[np.ndarray]:
    if threshold is None:
        return [np.zeros(arrays.n, dtype=bool), np.zeros(arrays.n, dtype=bool)]
    known = np.isfinite(arrays.age)
    return [known & (arrays.age <= threshold), known & (arrays.age > threshold)]


def sex_groups(arrays: SampleArrays) -> list[np.ndarray]:
    return [arrays.sex == "male", arrays.sex == "female"]


def n_min(arrays: SampleArrays, groups: Sequence[np.ndarray]) -> int:
    usable = arrays.has_score | arrays.has_pred
    return int(min((g & usable).sum() for g in groups))


def spread_batches(arrays: SampleArrays, groups: Sequence[np.ndarray], weights: "np.ndarray | Resamples",
                   min_size: int, metrics: dict[str, tuple[Any, str]]) -> dict[str, np.ndarray]:
    """|max - min| over groups of each metric, per weight row; NaN where a group is too small or undefined."""
    def spreads(weights: np.ndarray) -> dict[str, np.ndarray]:
        out = {}
        for name, (function, column) in metrics.items():
            values, small = [], np.zeros(weights.shape[0], dtype=bool)
            base_rows = arrays.rows(column)
            source = arrays.score if column == "score" else arrays.pred
            for group in groups:
                rows = base_rows & group
                w = weights[:, rows]
                small |= w.sum(1) < min_size
                values.append(function(arrays.y[rows], source[rows], w))
            stack = np.vstack(values)
            out[name] = np.where(small, np.nan, stack.max(0) - stack.min(0))
        return out

    return over(weights, spreads)


def gap_batches(arrays: SampleArrays, groups: Sequence[np.ndarray], weights: np.ndarray,
                min_size: int = MIN_GROUP_SIZE) -> dict[str, np.ndarray]:
    out = spread_batches(arrays, groups, weights, min_size, _GROUP_METRICS)
    out["eo_gap"] = np.maximum(out["tpr_gap"], out["fpr_gap"])  # NaN if either part is NaN
    return {name: out[name] for name in FAIRNESS_GAPS}


def attribute_gaps(arrays: SampleArrays, groups: Sequence[np.ndarray], weights: np.ndarray,
                   min_size: int = MIN_GROUP_SIZE) -> dict[str, Any]:
    """{n_min, <gap>, <gap>_ci} for one attribute; ``weights`` row 0 is the point estimate."""
    result: dict[str, Any] = {"n_min": n_min(arrays, groups)}
    for name, values in gap_batches(arrays, groups, weights, min_size).items():
        result[name], result[f"{name}_ci"] = summarize(values)
    return result


def fairness(arrays: SampleArrays, weights: np.ndarray, threshold: float | None,
             min_size: int = MIN_GROUP_SIZE) -> dict[str, dict[str, Any]]:
    """The results line's ``fairness`` dict: {age: {threshold, n_min, gaps...}, sex: {n_min, gaps...}}."""
    age = {"threshold": threshold, **attribute_gaps(arrays, age_groups(arrays, threshold), weights, min_size)}
    sex = attribute_gaps(arrays, sex_groups(arrays), weights, min_size)
    return {"age": age, "sex": sex}


def fairness_gaps(y, score, pred, groups: Sequence[np.ndarray], min_size: int = MIN_GROUP_SIZE) -> dict[str, Any]:
    """Point gaps for plain arrays (score and pred may hold None) and boolean group masks."""
    arrays = SampleArrays.from_columns(y, score=score, pred=pred)
    weights = np.ones((1, arrays.n))
    masks = [np.asarray(g, dtype=bool) for g in groups]
    result: dict[str, Any] = {"n_min": n_min(arrays, masks)}
    for name, values in gap_batches(arrays, masks, weights, min_size).items():
        result[name] = summarize(values)[0]
    return result

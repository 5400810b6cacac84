"""Image-quality robustness (SPEC section 6): |M(adequate) - M(inadequate)| for accuracy, AUROC, AUPRC, F1
and ECE, each reported separately.

Accuracy and F1 use pred rows, AUROC, AUPRC and ECE score rows. A gap is None when a quality group has fewer
than ``min_size`` (5) rows of the kind it uses, or when a group's value is undefined (e.g. one class for
AUROC or ECE). ``n_min`` is the size of the smaller group, counting rows usable by any metric.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from focus_eval.metrics import core
from focus_eval.metrics.arrays import SampleArrays
from focus_eval.metrics.bootstrap import summarize
from focus_eval.metrics.fairness import n_min, spread_batches

MIN_GROUP_SIZE = 5
QUALITY_GAPS = ("accuracy_gap", "auroc_gap", "auprc_gap", "f1_gap", "ece_gap")
_QUALITY_METRICS = {
    "accuracy_gap": (core.accuracy_batch, "pred"),
    "auroc_gap": (core.auroc_batch, "score"),
    "auprc_gap": (core.auprc_batch, "score"),
    "f1_gap": (core.f1_batch, "pred"),
    "ece_gap": (core.ece_batch, "score"),
}


def quality_groups(arrays: SampleArrays) -> list[np.ndarray]:
    return [arrays.quality == "adequate", arrays.quality == "inadequate"]


def gap_batches(arrays: SampleArrays, groups: Sequence[np.ndarray], weights: np.ndarray,
                min_size: int = MIN_GROUP_SIZE) -> dict[str, np.ndarray]:
    return spread_batches(arrays, groups, weights, min_size, _QUALITY_METRICS)


def robustness(arrays: SampleArrays, weights: np.ndarray, min_size: int = MIN_GROUP_SIZE) -> dict[str, Any]:
    """The results line's ``robustness`` dict: {quality: {n_min, <gap>, <gap>_ci ...}}."""
    groups = quality_groups(arrays)
    quality: dict[str, Any] = {"n_min": n_min(arrays, groups)}
    for name, values in gap_batches(arrays, groups, weights, min_size).items():
        quality[name], quality[f"{name}_ci"] = summarize(values)
    return {"quality": quality}


def quality_gaps(y, score, pred, quality: Sequence[str | None], min_size: int = MIN_GROUP_SIZE) -> dict[str, Any]:
    """Point gaps for plain arrays (score and pred may hold None) and a per-row quality column."""
    arrays = SampleArrays.from_columns(y, score=score, pred=pred, quality=quality)
    groups = quality_groups(arrays)
    result: dict[str, Any] = {"n_min": n_min(arrays, groups)}
    for name, values in gap_batches(arrays, groups, np.ones((1, arrays.n)), min_size).items():
        result[name] = summarize(values)[0]
    return result

"""Percentile bootstrap over patients (clusters), paired bootstrap deltas, and Benjamini-Hochberg q-values.

A resample draws as many patients as the data has, with replacement, and keeps all images of each drawn
patient; where every image is its own patient this is the ordinary image bootstrap. Resamples are row
multiplicities (weight rows), made in chunks within a memory budget (``metrics.resamples``); a metric runs once
per chunk over all its resamples at the same time.

The p-value of a paired delta is the reference's bootstrap-percentile p,
    p = 2 * min((1 + #{d* <= 0}) / (B + 1), (1 + #{d* >= 0}) / (B + 1)), clipped at 1,
a description of where zero falls in the bootstrap distribution of the delta, not a null-hypothesis test.
B counts the resamples in which the delta is defined.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence

import numpy as np

from focus_eval.metrics.arrays import SampleArrays, metric_batch
from focus_eval.metrics.core import METRIC_FUNCTIONS
from focus_eval.metrics.resamples import Resamples

DEFAULT_N_BOOT = 1000
DEFAULT_SEED = 0
CI_LEVEL = 0.95


def bootstrap_weights(clusters: Sequence[Any], n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED) -> Resamples:
    """A point row of ones on top of ``n_boot`` cluster resamples fixed by ``seed``, made chunk by chunk within the
    memory budget as a metric runs over them (``metrics.resamples``)."""
    return Resamples(clusters, n_boot, seed)


def ci_method(image_ids: Sequence[Any], patient_ids: Sequence[Any]) -> str:
    """"patient_bootstrap" when some image carries a patient id other than its own id, else "image_bootstrap"."""
    differs = any(str(p) != str(i) for i, p in zip(image_ids, patient_ids))
    return "patient_bootstrap" if differs else "image_bootstrap"


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def percentile_ci(values: np.ndarray, level: float = CI_LEVEL) -> list[float | None]:
    """Percentile interval of the finite values; [None, None] when there are none."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return [None, None]
    tail = 100.0 * (1.0 - level) / 2.0
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return [float(low), float(high)]


def summarize(values: np.ndarray, level: float = CI_LEVEL) -> tuple[float | None, list[float | None]]:
    """(point, interval) from a bootstrap_weights result: row 0 is the point estimate. No point, no interval."""
    point = _finite(values[0])
    if point is None or values.size < 2:
        return point, [None, None]
    return point, percentile_ci(values[1:], level)


def mean_of_tasks(replicates: Sequence[np.ndarray], level: float = CI_LEVEL) -> tuple[float | None,
                                                                                    list[float | None]]:
    """The one interval rule for a mean of task scores: each task gives its point estimate and bootstrap
    replicates (row 0 the point, as ``summarize`` takes them), replicate b of the mean is the mean of the tasks'
    replicate b (a task without a value in a replicate is left out of it), and the interval is the percentile
    interval of those means. No task, no estimate."""
    if not len(replicates):
        return None, [None, None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a replicate where no task has the metric
        return summarize(np.nanmean(np.vstack(replicates), axis=0), level)


def bootstrap_p(deltas: np.ndarray) -> float | None:
    """Two-sided bootstrap-percentile p of a paired delta (see the module docstring)."""
    deltas = np.asarray(deltas, dtype=float)
    deltas = deltas[np.isfinite(deltas)]
    if deltas.size == 0:
        return None
    b = deltas.size
    low = (1 + np.sum(deltas <= 0)) / (b + 1)
    high = (1 + np.sum(deltas >= 0)) / (b + 1)
    return float(min(1.0, 2.0 * min(low, high)))


def adjusted_pvalues(pvalues: Sequence[float | None], adjust: Callable[[np.ndarray], np.ndarray]
                     ) -> list[float | None]:
    """``adjust`` (ascending p-values -> their adjusted values, in the same order) applied to the finite
    entries of ``pvalues``, each put back in its place; None and non-finite entries stay None and do not count
    in the number of comparisons."""
    present = [i for i, p in enumerate(pvalues) if p is not None and np.isfinite(p)]
    out: list[float | None] = [None] * len(pvalues)
    if not present:
        return out
    p = np.array([pvalues[i] for i in present], dtype=float)
    order = np.argsort(p, kind="mergesort")
    adjusted = adjust(p[order])
    for rank, index in enumerate(order):
        out[present[index]] = float(adjusted[rank])
    return out


def bh_qvalues(pvalues: Sequence[float | None]) -> list[float | None]:
    """Benjamini-Hochberg q-values: sort ascending, p * m / rank, running minimum from the largest rank
    down, clipped to [0, 1]. None entries stay None and do not count in m."""
    def adjust(p: np.ndarray) -> np.ndarray:
        scaled = p * p.size / np.arange(1, p.size + 1)
        return np.clip(np.minimum.accumulate(scaled[::-1])[::-1], 0.0, 1.0)

    return adjusted_pvalues(pvalues, adjust)


def paired_delta(base: SampleArrays, tuned: SampleArrays, metric: str, n_boot: int = DEFAULT_N_BOOT,
                 seed: int = DEFAULT_SEED, level: float = CI_LEVEL) -> dict[str, Any]:
    """delta = M(tuned) - M(base) on rows both can use, with a patient-clustered paired bootstrap interval
    and the bootstrap-percentile p. ``base`` and ``tuned`` come from ``pair_samples`` (aligned rows)."""
    both = base.has_score & tuned.has_score
    both_pred = base.has_pred & tuned.has_pred
    usable = {"score": both, "pred": both_pred}
    column = METRIC_FUNCTIONS[metric][1]
    rows = usable[column]
    base_rows, tuned_rows = base.take(rows), tuned.take(rows)
    values = bootstrap_weights(base.patient_id[rows], n_boot, seed).map(
        lambda w: {"a": metric_batch(metric, base_rows, w), "b": metric_batch(metric, tuned_rows, w)})
    a, b = values["a"], values["b"]
    deltas = b - a
    delta, interval = summarize(deltas, level)
    return {
        "metric": metric,
        "base": _finite(a[0]),
        "tuned": _finite(b[0]),
        "delta": delta,
        "ci": interval,
        "p": bootstrap_p(deltas[1:]) if delta is not None else None,
        "n": int(rows.sum()),
        "n_boot": n_boot,
        "ci_method": ci_method(base.image_id[rows], base.patient_id[rows]),
    }

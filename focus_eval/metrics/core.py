"""Per-task metrics (SPEC section 6) as plain functions over numpy arrays, undefined values as None.

Every metric has a weighted, batched form ``<name>_batch(..., weights)`` where ``weights`` is a (B, n) matrix
of row multiplicities: row 0 of a bootstrap is all ones (the point estimate), the others are resamples. The
plain functions call the batched ones with a single row of ones, so point estimates and bootstrap replicates
share one code path. Batched forms return NaN where a value is undefined; plain forms turn that into None.

Definitions:
- auroc: probability that a positive outranks a negative, ties counting half; undefined with one class.
- auprc: average precision, step-wise as scikit-learn (sum over score thresholds of recall step x precision);
  undefined with one class.
- accuracy, precision, recall, f1: on hard predictions, positive class 1. Zero division: precision is 0.0 when
  nothing is predicted positive (as scikit-learn's zero_division=0); recall and f1 are undefined (None) when
  no positive label is present, and f1 is 0.0 when positives exist but none is found.
- brier: mean squared difference between score and label.
- ece: positive-class calibration error over 10 equal-width score bins, bin = min(floor(10 p), 9), the sum
  over non-empty bins of |B|/n * |mean p - mean y|; undefined with one class (as the reference).
Scores used by brier and ece must lie in [0, 1].
"""

from __future__ import annotations

import numpy as np

N_BINS = 10


def _arrays(y, values) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y, dtype=float).reshape(-1)
    values = np.asarray(values, dtype=float).reshape(-1)
    if y.shape != values.shape:
        raise ValueError(f"labels and values differ in length ({y.size} vs {values.size})")
    if y.size and not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("labels must be 0 or 1")
    return y, values


def _weights(weights, n: int) -> np.ndarray:
    if weights is None:
        return np.ones((1, n))
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 2 or weights.shape[1] != n:
        raise ValueError(f"weights must have shape (B, {n}), got {weights.shape}")
    return weights


def _divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def row_sums(w: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``w @ values`` summed in the same order for every weight row, so a row's sum is the same bits whatever the
    number of rows beside it and the memory layout of ``w`` (a BLAS product, or a sum over a column-ordered copy,
    may round differently by the shape of the batch); ``values`` is (n,) or (n, K)."""
    return np.einsum("bi,i...->b...", np.ascontiguousarray(w), np.ascontiguousarray(values))


def _both_classes(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    return ((w @ y) > 0) & ((w @ (1.0 - y)) > 0)


def _check_unit_interval(p: np.ndarray) -> None:
    if p.size and (np.nanmin(p) < 0.0 or np.nanmax(p) > 1.0):
        raise ValueError("scores must lie in [0, 1] for brier and ece")


def _levels(y: np.ndarray, score: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positive and negative weight per distinct score, highest score first: shapes (B, K)."""
    order = np.argsort(-score, kind="mergesort")
    s = score[order]
    starts = np.concatenate(([0], np.flatnonzero(np.diff(s)) + 1))
    wo = w[:, order]
    pos = np.add.reduceat(wo * y[order], starts, axis=1)
    neg = np.add.reduceat(wo * (1.0 - y[order]), starts, axis=1)
    return pos, neg


def auroc_batch(y, score, weights=None) -> np.ndarray:
    y, score = _arrays(y, score)
    w = _weights(weights, y.size)
    if y.size == 0:
        return np.full(w.shape[0], np.nan)
    pos, neg = _levels(y, score, w)
    n_pos, n_neg = pos.sum(1), neg.sum(1)
    below = n_neg[:, None] - np.cumsum(neg, axis=1)  # negatives scored strictly lower than this level
    wins = (pos * (below + 0.5 * neg)).sum(1)
    return _divide(wins, n_pos * n_neg)


def auprc_batch(y, score, weights=None) -> np.ndarray:
    y, score = _arrays(y, score)
    w = _weights(weights, y.size)
    if y.size == 0:
        return np.full(w.shape[0], np.nan)
    pos, neg = _levels(y, score, w)
    tp, fp = np.cumsum(pos, axis=1), np.cumsum(neg, axis=1)
    precision = np.nan_to_num(_divide(tp, tp + fp))
    ap = _divide((pos * precision).sum(1), pos.sum(1))
    return np.where(_both_classes(y, w), ap, np.nan)


def brier_batch(y, score, weights=None) -> np.ndarray:
    y, score = _arrays(y, score)
    _check_unit_interval(score)
    w = _weights(weights, y.size)
    return _divide(row_sums(w, (score - y) ** 2), w.sum(1))


def ece_batch(y, score, weights=None) -> np.ndarray:
    y, score = _arrays(y, score)
    _check_unit_interval(score)
    w = _weights(weights, y.size)
    bins = np.minimum(np.floor(score * N_BINS).astype(int), N_BINS - 1)
    onehot = np.zeros((y.size, N_BINS))
    onehot[np.arange(y.size), bins] = 1.0
    # |B| * |mean p - mean y| per bin
    gap = np.abs(row_sums(w, score[:, None] * onehot) - row_sums(w, y[:, None] * onehot)).sum(1)
    ece = _divide(gap, w.sum(1))
    return np.where(_both_classes(y, w), ece, np.nan)


def _confusion(y, pred, weights):
    y, pred = _arrays(y, pred)
    if pred.size and not np.isin(pred, (0.0, 1.0)).all():
        raise ValueError("predictions must be 0 or 1")
    w = _weights(weights, y.size)
    tp = w @ (y * pred)
    fp = w @ ((1.0 - y) * pred)
    fn = w @ (y * (1.0 - pred))
    tn = w @ ((1.0 - y) * (1.0 - pred))
    return tp, fp, fn, tn


def accuracy_batch(y, pred, weights=None) -> np.ndarray:
    tp, fp, fn, tn = _confusion(y, pred, weights)
    return _divide(tp + tn, tp + fp + fn + tn)


def precision_batch(y, pred, weights=None) -> np.ndarray:
    tp, fp, fn, tn = _confusion(y, pred, weights)
    total = tp + fp + fn + tn
    value = np.where(tp + fp > 0, _divide(tp, tp + fp), 0.0)
    return np.where(total > 0, value, np.nan)


def recall_batch(y, pred, weights=None) -> np.ndarray:
    tp, fp, fn, tn = _confusion(y, pred, weights)
    return _divide(tp, tp + fn)


def f1_batch(y, pred, weights=None) -> np.ndarray:
    tp, fp, fn, tn = _confusion(y, pred, weights)
    return np.where(tp + fn > 0, _divide(2 * tp, 2 * tp + fp + fn), np.nan)


def positive_rate_batch(y, pred, weights=None) -> np.ndarray:
    tp, fp, fn, tn = _confusion(y, pred, weights)
    return _divide(tp + fp, tp + fp + fn + tn)


def fpr_batch(y, pred, weights=None) -> np.ndarray:
    tp, fp, fn, tn = _confusion(y, pred, weights)
    return _divide(fp, fp + tn)


def _scalar(values: np.ndarray) -> float | None:
    value = float(values[0])
    return value if np.isfinite(value) else None


def auroc(y, score) -> float | None:
    return _scalar(auroc_batch(y, score))


def auprc(y, score) -> float | None:
    return _scalar(auprc_batch(y, score))


def brier(y, score) -> float | None:
    return _scalar(brier_batch(y, score))


def ece(y, score) -> float | None:
    return _scalar(ece_batch(y, score))


def accuracy(y, pred) -> float | None:
    return _scalar(accuracy_batch(y, pred))


def precision(y, pred) -> float | None:
    return _scalar(precision_batch(y, pred))


def recall(y, pred) -> float | None:
    return _scalar(recall_batch(y, pred))


def f1(y, pred) -> float | None:
    return _scalar(f1_batch(y, pred))


# metric name -> (batched function, which column it reads: "score" or "pred")
METRIC_FUNCTIONS = {
    "auroc": (auroc_batch, "score"),
    "auprc": (auprc_batch, "score"),
    "accuracy": (accuracy_batch, "pred"),
    "f1": (f1_batch, "pred"),
    "precision": (precision_batch, "pred"),
    "recall": (recall_batch, "pred"),
    "ece": (ece_batch, "score"),
    "brier": (brier_batch, "score"),
}

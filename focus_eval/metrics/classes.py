"""Metrics of multi-class, multi-label and multiple-choice tasks, as plain functions over arrays with the same
weighted, batched form as ``core`` (``weights`` is a (B, n) matrix of row multiplicities, row 0 all ones).

Labels and predictions are (n, K) 0/1 indicator matrices over the task's K classes (one 1 per row for a
single-answer task; a row of zeros for an answer nothing could be read from). Every row without an error
counts: an unanswered row is a miss for its true class and a false alarm for none.

Definitions (per class k: sensitivity = TP/(TP+FN), specificity = TN/(TN+FP)):
- funbench_f1: FunBench's F1, the harmonic mean of sensitivity and specificity, averaged over the classes
  present among the labels; where a class has no negatives its specificity is undefined and its F1 is its
  sensitivity; two zeros give 0.
  A task whose labels hold one class only (FunBench L1a: every image is a fundus image) thus scores the
  share of rows answered with that class, its accuracy, and its random guess is 1 / options.
- accuracy: share of rows whose predicted class (single answer) or predicted set (multi answer) is exactly right.
- macro_precision, macro_recall, macro_f1: means over the classes that occur among labels or predictions, with
  scikit-learn's zero_division=0 (precision 0 for a class never predicted, recall 0 for one never present).
- qw_kappa: quadratic-weighted Cohen's kappa over the answered rows, for ordinal tasks only (DR grading).
- macro_auroc: mean one-vs-rest AUROC of the class probabilities over the classes with both outcomes.
- ece: single answer: top-label calibration error (confidence = the largest probability, correct = it is the
  true class), 10 bins as ``core.ece``; multi answer: ``core.ece`` over every (row, class) probability.
- brier: single answer: mean over rows of sum_k (p_k - y_k)^2; multi answer: mean over rows and classes.

Random-guess baseline (exact): a guesser picks uniformly among a question's options (all K classes where a
row has no options); for a multi-answer question it takes each option with probability 1/2. funbench_f1 and
macro_f1 are those of the expected confusion counts (the plug-in value); accuracy is the mean chance of an exact
hit; funbench_f1_run is the expected funbench_f1 of an actual run of the guesser (``metrics.chance``: lower than
the plug-in value where classes are small, as F1 is concave), funbench_f1_run_method how it was found.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from focus_eval.metrics import core
from focus_eval.metrics.arrays import SampleArrays
from focus_eval.metrics.bootstrap import summarize
from focus_eval.metrics.chance import expected_run, row_chances
from focus_eval.metrics.fairness import FAIRNESS_GAPS, age_groups, n_min, sex_groups, spread_batches
from focus_eval.metrics.fairness import MIN_GROUP_SIZE as FAIRNESS_MIN
from focus_eval.metrics.robustness import MIN_GROUP_SIZE as QUALITY_MIN
from focus_eval.metrics.resamples import Resamples, over
from focus_eval.metrics.robustness import QUALITY_GAPS, quality_groups
from focus_eval.results.schema import CLASS_METRICS

BASELINE_METRICS = ("funbench_f1", "accuracy", "macro_f1")


def class_spec(meta: Any) -> dict[str, Any] | None:
    """The class layout of a multi-class, multi-label or multiple-choice unit from its meta record (extra:
    output_type, classes, multilabel, ordinal); None for a binary unit."""
    extra = meta.extra or {}
    if extra.get("output_type") in (None, "binary"):
        return None
    classes = extra.get("classes")
    if not (isinstance(classes, list) and len(classes) >= 2 and all(isinstance(c, str) for c in classes)):
        raise ValueError(f"meta of a {extra['output_type']} unit lacks its class names (extra.classes)")
    return {"output_type": extra["output_type"], "classes": classes,
            "multilabel": bool(extra.get("multilabel")), "ordinal": bool(extra.get("ordinal"))}


def unit_replicates(samples: Sequence[Any], spec: dict[str, Any], weights_of) -> dict[str, np.ndarray]:
    """Per CLASS_METRICS metric, the point estimate and bootstrap replicates of one unit's samples;
    ``weights_of(patient ids)`` gives the weight matrix."""
    arrays = ClassArrays.from_samples(samples, len(spec["classes"]), spec["multilabel"], spec["ordinal"])
    weights = weights_of(arrays.patient_id)
    return {name: class_metric_batch(name, arrays, weights) for name in CLASS_METRICS}


def _field(sample: Any, name: str) -> Any:
    return sample.get(name) if isinstance(sample, dict) else getattr(sample, name, None)


def _indicator(values: Sequence[Any], n_classes: int, what: str) -> np.ndarray:
    """(n, K) 0/1 rows from class indices, sorted index lists, or None (a zero row)."""
    out = np.zeros((len(values), n_classes))
    for i, value in enumerate(values):
        members = [] if value is None else [value] if isinstance(value, int) else list(value)
        if any(not isinstance(c, int) or isinstance(c, bool) or not 0 <= c < n_classes for c in members):
            raise ValueError(f"sample row {i + 1}: {what} {value!r} is not a class of 0..{n_classes - 1}")
        out[i, members] = 1.0
    return out


@dataclass
class ClassArrays:
    """Columns of one multi-class (task, method) sample file."""

    image_id: np.ndarray
    patient_id: np.ndarray
    y: np.ndarray          # (n, K) true classes
    pred: np.ndarray       # (n, K) predicted classes (zero row: unanswered)
    answered: np.ndarray   # a prediction was read
    probs: np.ndarray      # (n, K); zero rows where has_probs is false
    has_probs: np.ndarray
    options: np.ndarray    # (n, K) the classes offered (all classes for rows without options)
    error: np.ndarray
    unparsed: np.ndarray
    multilabel: bool
    ordinal: bool
    sample_arrays: SampleArrays  # ids and subgroup columns, with y = 1 where the prediction is exactly right

    @property
    def n(self) -> int:
        return int(self.y.shape[0])

    @classmethod
    def from_samples(cls, samples: Sequence[Any], n_classes: int, multilabel: bool = False,
                     ordinal: bool = False) -> "ClassArrays":
        def column(name):
            return [_field(s, name) for s in samples]

        y = _indicator(column("label"), n_classes, "label")
        if (y.sum(1) == 0).any():
            raise ValueError(f"sample row {int(np.flatnonzero(y.sum(1) == 0)[0]) + 1}: the label names no class")
        pred = _indicator(column("pred"), n_classes, "pred")
        probs, has_probs = np.zeros((len(samples), n_classes)), np.zeros(len(samples), dtype=bool)
        for i, p in enumerate(column("probs")):
            if p is not None:
                if len(p) != n_classes or not all(isinstance(v, (int, float)) and np.isfinite(v) for v in p):
                    raise ValueError(f"sample row {i + 1}: probs must be {n_classes} finite numbers, got {p!r}")
                probs[i], has_probs[i] = p, True
        options = np.ones((len(samples), n_classes), dtype=bool)
        for i, shown in enumerate(column("options")):
            if shown is not None:
                options[i] = _indicator([list(shown)], n_classes, "options")[0] > 0
        error = np.array([e is not None for e in column("error")], dtype=bool)
        answered = np.array([p is not None for p in column("pred")], dtype=bool) & ~error
        exact = np.all(y == pred, axis=1) & answered
        binary = SampleArrays.from_columns(exact.astype(int), pred=[1] * len(samples), patient_id=column("patient_id"),
                                           age=column("age"), sex=column("sex"), quality=column("quality"))
        binary.error, binary.has_pred = error, ~error
        binary.image_id = np.array([str(v) for v in column("image_id")], dtype=object)
        return cls(image_id=binary.image_id, patient_id=binary.patient_id, y=y, pred=pred, answered=answered,
                   probs=probs, has_probs=has_probs & ~error, options=options, error=error,
                   unparsed=np.array([p is False for p in column("parsed")], dtype=bool), multilabel=multilabel,
                   ordinal=ordinal, sample_arrays=binary)


def _nanmean(values: np.ndarray, axis: int) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a row where no class is defined stays NaN
        return np.nanmean(values, axis=axis)


def counts(y: np.ndarray, pred: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, ...]:
    """(TP, FP, FN, TN) per weight row and class, each (B, K); ``pred`` may hold expected (fractional) values."""
    tp, fp = core.row_sums(w, y * pred), core.row_sums(w, (1 - y) * pred)
    fn, tn = core.row_sums(w, y * (1 - pred)), core.row_sums(w, (1 - y) * (1 - pred))
    return tp, fp, fn, tn


def funbench_f1_batch(y, pred, w) -> np.ndarray:
    tp, fp, fn, tn = counts(y, pred, w)
    sens, spec = core._divide(tp, tp + fn), core._divide(tn, tn + fp)
    harmonic = np.where(sens + spec > 0, core._divide(2 * sens * spec, sens + spec), 0.0)
    per_class = np.where(np.isnan(spec), sens, harmonic)
    return _nanmean(np.where(tp + fn > 0, per_class, np.nan), axis=1)


def _macro(y, pred, w, which: str) -> np.ndarray:
    tp, fp, fn, _ = counts(y, pred, w)
    value = {"precision": np.where(tp + fp > 0, core._divide(tp, tp + fp), 0.0),
             "recall": np.where(tp + fn > 0, core._divide(tp, tp + fn), 0.0),
             "f1": np.where(2 * tp + fp + fn > 0, core._divide(2 * tp, 2 * tp + fp + fn), 0.0)}[which]
    return _nanmean(np.where(tp + fn + fp > 0, value, np.nan), axis=1)


def accuracy_batch(y, pred, w) -> np.ndarray:
    exact = np.all(y == pred, axis=1).astype(float)
    return core._divide(w @ exact, w.sum(1))


def qw_kappa_batch(y, pred, w) -> np.ndarray:
    """Quadratic-weighted kappa of single-answer rows (every row answered)."""
    k = y.shape[1]
    observed = np.einsum("bi,it,ip->btp", w, y, pred)
    total = observed.sum(axis=(1, 2))
    expected = np.einsum("bt,bp->btp", observed.sum(2), observed.sum(1)) / np.where(total > 0, total, 1)[:, None, None]
    index = np.arange(k)
    weight = (index[:, None] - index[None, :]) ** 2 / max(1, (k - 1) ** 2)
    return 1 - core._divide((observed * weight).sum(axis=(1, 2)), (expected * weight).sum(axis=(1, 2)))


def macro_auroc_batch(y, probs, w) -> np.ndarray:
    values = [core.auroc_batch(y[:, k], probs[:, k], w) for k in range(y.shape[1])]
    return _nanmean(np.vstack(values), axis=0) if values else np.full(w.shape[0], np.nan)


def ece_batch(y, probs, w, multilabel: bool) -> np.ndarray:
    if multilabel:
        return core.ece_batch(y.ravel(), np.clip(probs, 0, 1).ravel(), np.repeat(w, y.shape[1], axis=1))
    top = probs.argmax(axis=1)
    correct = y[np.arange(len(y)), top]
    return core.ece_batch(correct, np.clip(probs.max(axis=1), 0, 1), w)


def brier_batch(y, probs, w, multilabel: bool) -> np.ndarray:
    squared = (probs - y) ** 2
    per_row = squared.mean(1) if multilabel else squared.sum(1)
    return core._divide(core.row_sums(w, per_row), w.sum(1))


def class_metric_batch(name: str, arrays: ClassArrays, weights: "np.ndarray | Resamples") -> np.ndarray:
    """One CLASS_METRICS metric over the rows it may use, for each row of ``weights`` (a weight matrix, or
    ``Resamples`` run chunk by chunk)."""
    usable = ~arrays.error
    if name in ("macro_auroc", "ece", "brier"):
        rows = arrays.has_probs
        y, probs = arrays.y[rows], arrays.probs[rows]
        if name == "macro_auroc":
            return over(weights, lambda w: macro_auroc_batch(y, probs, w[:, rows]))
        function = ece_batch if name == "ece" else brier_batch
        return over(weights, lambda w: function(y, probs, w[:, rows], arrays.multilabel))
    if name == "qw_kappa":
        if not arrays.ordinal or arrays.multilabel:
            return over(weights, lambda w: np.full(w.shape[0], np.nan))
        rows = usable & arrays.answered
        return over(weights, lambda w: qw_kappa_batch(arrays.y[rows], arrays.pred[rows], w[:, rows]))
    y, pred = arrays.y[usable], arrays.pred[usable]
    if name == "funbench_f1":
        return over(weights, lambda w: funbench_f1_batch(y, pred, w[:, usable]))
    if name == "accuracy":
        return over(weights, lambda w: accuracy_batch(y, pred, w[:, usable]))
    return over(weights, lambda w: _macro(y, pred, w[:, usable], name.split("_", 1)[1]))


def class_metrics(arrays: ClassArrays, weights: np.ndarray) -> tuple[dict, dict]:
    """(point estimates, intervals) of every CLASS_METRICS metric."""
    metrics, intervals = {}, {}
    for name in CLASS_METRICS:
        metrics[name], intervals[name] = summarize(class_metric_batch(name, arrays, weights))
    return metrics, intervals


def random_guess(arrays: ClassArrays) -> dict[str, float | None]:
    """The exact random-guess baseline of the rows without an error (see the module docstring)."""
    usable = ~arrays.error
    y, options = arrays.y[usable], arrays.options[usable].astype(float)
    if not len(y):
        return {**{name: None for name in BASELINE_METRICS}, "funbench_f1_run": None, "funbench_f1_run_method": None}
    if arrays.multilabel:
        expected, hit = 0.5 * options, 0.5 ** options.sum(1)
    else:
        expected = options / options.sum(1, keepdims=True)
        hit = (y * expected).sum(1)
    w = np.ones((1, len(y)))
    run = expected_run(row_chances(y, options, arrays.multilabel))
    return {"funbench_f1": core._scalar(funbench_f1_batch(y, expected, w)), "accuracy": float(hit.mean()),
            "macro_f1": core._scalar(_macro(y, expected, w, "f1")), "funbench_f1_run": run.value,
            "funbench_f1_run_method": run.describe()}


def confusion(arrays: ClassArrays, classes: Sequence[str]) -> dict[str, Any]:
    """The point-estimate confusion counts of the rows without an error: a K x (K + 1) matrix (true class by
    predicted class, the last column for unanswered rows) for single-answer tasks; per class TP, FP, FN, TN
    for multi-answer tasks."""
    usable = ~arrays.error
    y, pred = arrays.y[usable], arrays.pred[usable]
    if arrays.multilabel:
        tp, fp, fn, tn = (c[0] for c in counts(y, pred, np.ones((1, len(y)))))
        return {"kind": "per_class", "classes": list(classes),
                "counts": {c: {"tp": int(tp[k]), "fp": int(fp[k]), "fn": int(fn[k]), "tn": int(tn[k])}
                           for k, c in enumerate(classes)}}
    matrix = np.zeros((len(classes), len(classes) + 1), dtype=int)
    for truth, row, answered in zip(y.argmax(1), pred, arrays.answered[usable]):
        matrix[truth, int(row.argmax()) if answered and row.any() else len(classes)] += 1
    return {"kind": "matrix", "classes": list(classes), "columns": [*classes, "unanswered"],
            "counts": matrix.tolist()}


def _gap_block(arrays: ClassArrays, groups, weights, min_size: int, keys: Sequence[str]) -> dict[str, Any]:
    """A fairness or robustness block of the binary layout: the accuracy gap computed, the other gaps null."""
    binary = arrays.sample_arrays
    accuracy = spread_batches(binary, groups, weights, min_size, {"accuracy_gap": (core.accuracy_batch, "pred")})
    block: dict[str, Any] = {"n_min": n_min(binary, groups)}
    for key in keys:
        if key == "accuracy_gap":
            block[key], block[f"{key}_ci"] = summarize(accuracy[key])
        else:
            block[key], block[f"{key}_ci"] = None, [None, None]
    return block


def class_fairness(arrays: ClassArrays, weights: np.ndarray, threshold: float | None) -> dict[str, Any]:
    """The results line's fairness block: accuracy gaps by age and sex (the binary gaps are null here)."""
    binary = arrays.sample_arrays
    age = {"threshold": threshold,
           **_gap_block(arrays, age_groups(binary, threshold), weights, FAIRNESS_MIN, FAIRNESS_GAPS)}
    return {"age": age, "sex": _gap_block(arrays, sex_groups(binary), weights, FAIRNESS_MIN, FAIRNESS_GAPS)}


def class_robustness(arrays: ClassArrays, weights: np.ndarray) -> dict[str, Any]:
    """The results line's robustness block: the accuracy gap by image quality (the other gaps are null)."""
    return {"quality": _gap_block(arrays, quality_groups(arrays.sample_arrays), weights, QUALITY_MIN,
                                  QUALITY_GAPS)}

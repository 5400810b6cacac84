"""Sample lines as aligned numpy columns, with the row masks that decide which rows each metric uses.

- score rows: no error and a score; used by auroc, auprc, brier and ece (unparsed prompt rows included).
- pred rows: no error, a prediction, and not marked unparsed; used by precision, recall and f1.
- accuracy: the pred rows and the unparsed rows (no error), an unparsed answer counting as wrong: a model is not
  scored on the few answers it happened to format readably.
Missing values are stored as 0 and masked out by weight, never as NaN (NaN times a zero weight is NaN).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from focus_eval.metrics.core import METRIC_FUNCTIONS
from focus_eval.metrics.resamples import Resamples, over


def _field(sample: Any, name: str) -> Any:
    return sample.get(name) if isinstance(sample, dict) else getattr(sample, name, None)


@dataclass
class SampleArrays:
    """Columns of one (task, method) sample file."""

    image_id: np.ndarray
    patient_id: np.ndarray
    y: np.ndarray
    score: np.ndarray
    has_score: np.ndarray
    pred: np.ndarray
    has_pred: np.ndarray
    error: np.ndarray
    unparsed: np.ndarray
    age: np.ndarray  # NaN where unknown (never weighted, only compared)
    sex: np.ndarray  # object: "male", "female" or None
    quality: np.ndarray  # object: "adequate", "inadequate" or None

    @property
    def n(self) -> int:
        return int(self.y.size)

    @classmethod
    def from_samples(cls, samples: Sequence[Any]) -> "SampleArrays":
        """Columns from SampleLine objects or their dicts; labels must be 0/1, scores and preds finite."""
        def column(name):
            return [_field(s, name) for s in samples]

        labels = column("label")
        bad = [i for i, v in enumerate(labels) if v not in (0, 1) or isinstance(v, bool)]
        if bad:
            raise ValueError(f"sample row {bad[0] + 1}: label must be 0 or 1, got {labels[bad[0]]!r}")
        error = np.array([e is not None for e in column("error")], dtype=bool)
        raw_score = column("score")
        raw_pred = column("pred")
        for i, (s, p) in enumerate(zip(raw_score, raw_pred), start=1):
            if s is not None and not (isinstance(s, (int, float)) and np.isfinite(s)):
                raise ValueError(f"sample row {i}: score must be a finite number or null, got {s!r}")
            if p is not None and p not in (0, 1):
                raise ValueError(f"sample row {i}: pred must be 0, 1 or null, got {p!r}")
        unparsed = np.array([p is False for p in column("parsed")], dtype=bool)
        has_score = np.array([s is not None for s in raw_score], dtype=bool) & ~error
        has_pred = np.array([p is not None for p in raw_pred], dtype=bool) & ~error & ~unparsed
        return cls(
            image_id=np.array([str(v) for v in column("image_id")], dtype=object),
            patient_id=np.array([str(v) for v in column("patient_id")], dtype=object),
            y=np.array(labels, dtype=float),
            score=np.array([0.0 if s is None else float(s) for s in raw_score], dtype=float),
            has_score=has_score,
            pred=np.array([0.0 if p is None else float(p) for p in raw_pred], dtype=float),
            has_pred=has_pred,
            error=error,
            unparsed=unparsed,
            age=np.array([np.nan if a is None else float(a) for a in column("age")], dtype=float),
            sex=np.array(column("sex"), dtype=object),
            quality=np.array(column("quality"), dtype=object),
        )

    @classmethod
    def from_columns(cls, y, score=None, pred=None, patient_id=None, age=None, sex=None,
                     quality=None) -> "SampleArrays":
        """Columns from plain sequences (None marks a missing score, pred or attribute)."""
        n = len(y)

        def values(column):
            return [None] * n if column is None else [None if v is None else v for v in column]

        labels = [int(v) for v in y]
        patients = [str(i) for i in range(n)] if patient_id is None else [str(p) for p in patient_id]
        rows = zip(labels, values(score), values(pred), patients, values(age), values(sex), values(quality))
        samples = [{"image_id": str(i), "patient_id": p, "label": lab, "score": s, "pred": d, "age": a,
                    "sex": x, "quality": q, "error": None}
                   for i, (lab, s, d, p, a, x, q) in enumerate(rows)]
        for sample in samples:
            if sample["pred"] is not None:
                sample["pred"] = int(sample["pred"])
            if sample["score"] is not None:
                sample["score"] = float(sample["score"])
        return cls.from_samples(samples)

    def take(self, index: np.ndarray) -> "SampleArrays":
        return SampleArrays(**{name: getattr(self, name)[index] for name in self.__dataclass_fields__})

    def rows(self, column: str) -> np.ndarray:
        return self.has_score if column == "score" else self.has_pred


def metric_batch(name: str, arrays: SampleArrays, weights: "np.ndarray | Resamples",
                 mask: np.ndarray | None = None) -> np.ndarray:
    """One metric over the rows it may use (and ``mask``, e.g. a subgroup), for each row of ``weights`` (a weight
    matrix, or ``Resamples`` run chunk by chunk)."""
    function, column = METRIC_FUNCTIONS[name]
    rows = arrays.rows(column) if mask is None else arrays.rows(column) & mask
    values = arrays.score if column == "score" else arrays.pred
    if name == "accuracy":
        missed = arrays.unparsed & ~arrays.error & (True if mask is None else mask)
        rows, values = rows | missed, np.where(missed, 1.0 - arrays.y, values)
    return over(weights, lambda w: function(arrays.y[rows], values[rows], w[:, rows]))


def pair_samples(base: Iterable[Any], tuned: Iterable[Any]) -> tuple[SampleArrays, SampleArrays]:
    """Two sample sets of one task aligned by image id (1:1, same labels), for paired deltas."""
    base, tuned = list(base), list(tuned)
    ids_base = [str(_field(s, "image_id")) for s in base]
    ids_tuned = [str(_field(s, "image_id")) for s in tuned]
    for name, ids in (("base", ids_base), ("fine-tuned", ids_tuned)):
        if len(set(ids)) != len(ids):
            raise ValueError(f"{name} samples repeat an image id; pairing needs one row per image")
    if set(ids_base) != set(ids_tuned):
        only_base = sorted(set(ids_base) - set(ids_tuned))[:3]
        only_tuned = sorted(set(ids_tuned) - set(ids_base))[:3]
        raise ValueError(f"base and fine-tuned samples cover different images (only in base: {only_base}, "
                         f"only in fine-tuned: {only_tuned})")
    position = {image_id: i for i, image_id in enumerate(ids_tuned)}
    tuned = [tuned[position[i]] for i in ids_base]
    a, b = SampleArrays.from_samples(base), SampleArrays.from_samples(tuned)
    if not np.array_equal(a.y, b.y):
        first = int(np.flatnonzero(a.y != b.y)[0])
        raise ValueError(f"image {ids_base[first]}: base and fine-tuned samples disagree on the label")
    return a, b

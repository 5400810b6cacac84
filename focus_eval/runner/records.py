"""From a dataset load and a task to the rows a method scores and the sample lines it writes."""

from __future__ import annotations

import math

from focus_eval.redact import redact
from focus_eval.results.schema import SampleLine

SPLIT_SUMMARY_KEYS = ("split_source", "seed", "cohort", "split_file", "patient_overlap", "split_file_unlisted",
                      "split_file_missing", "carved_val_images")


def task_records(load, task, split: str, limit: int | float | None = None):
    """The task's records of one split (its ``splits`` mapping decides which dataset split that is), in a
    stable order (image id); ``limit`` keeps the first N, or a fraction (0 < f < 1) of them rounded up."""
    rows = sorted(task.records(load, split), key=lambda r: r.image_id)
    if not limit:
        return rows
    count = int(limit) if float(limit) >= 1 else math.ceil(float(limit) * len(rows))
    return rows[:count]


def split_summary(load) -> dict:
    """How the dataset was split, recorded with every result (a patient overlap from an external split file
    included)."""
    out = {}
    for k in SPLIT_SUMMARY_KEYS:
        value = load.metadata.get(k)
        if value in (None, [], {}):
            continue
        # long id lists are summarised: their count and the first few
        out[k] = {"count": len(value), "first": list(value)[:5]} if isinstance(value, (list, tuple)) else value
    return out


def age_threshold(test_records) -> float | None:
    """Median age of the task's test split: one threshold per task, the same for every model."""
    from focus_eval.metrics.fairness import age_threshold as median_age

    return median_age([r.age for r in test_records])


def sample_split(task, record) -> str:
    """The split a sample line of ``record`` names: the task's own name for it (``test`` or ``val``, which its
    ``splits`` map onto dataset splits), so that readers find the evaluated rows as ``test`` whatever dataset
    split serves as the task's test split."""
    for role in ("test", "val"):
        if task.splits.get(role) == record.split:
            return role
    return record.split


def sample_line(record, label: int, score, pred, error: str | None = None, split: str | None = None,
                **prompt_fields) -> SampleLine:
    """One sample line of an image record: its ids and subgroup fields, the label and what the method said;
    ``split`` is the task's name for the record's split (``sample_split``), else the record's own."""
    return SampleLine(image_id=record.image_id, patient_id=record.patient_id, split=split or record.split, label=label,
                      score=None if score is None else float(score), pred=None if pred is None else int(pred),
                      age=record.age, sex=record.sex, quality=record.quality,
                      error=None if error is None else redact(error), **prompt_fields)


def task_sample_line(task, record, score, pred, error: str | None = None, split: str | None = None,
                     **fields) -> SampleLine:
    """The sample line of one record of ``task``. Binary tasks: ``score`` is P(positive), ``pred`` 0/1.
    Other tasks: ``score`` is the class probabilities (or None), ``pred`` a class index, a 0/1 row over the
    classes of a multi-answer task, or None; the line carries the output type and the probabilities. ``split``:
    the task's name for the record's split, worked out when not given (``sample_split``)."""
    split = split or sample_split(task, record)
    if task.binary:
        return sample_line(record, task.label(record), score, pred, error=error, split=split, **fields)
    if pred is not None and task.multilabel:
        pred = [k for k, flag in enumerate(pred) if flag]
    elif pred is not None:
        pred = int(pred)
    line = sample_line(record, task.label(record), None, None, error=error, split=split,
                       output_type=task.output_type,
                       probs=None if score is None else [float(p) for p in score], **fields)
    line.pred = pred
    return line

"""Label budgets (``--train-fraction``, ``--train-seeds``): a probe fitted on a fraction of the training
patients.

The training split is subsampled by patient (all images of a kept patient stay together, so no patient is
half in), stratified by the patient's label (positive when any of their images is, the highest class for a
multi-class task): in each stratum the patients are shuffled by a generator seeded by the seed and the task,
and the first ``ceil(fraction * n)`` kept (at least one, so that every class the full split has stays). The
same fraction and seed always keep the same patients."""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from typing import Any, Sequence

import numpy as np


def patient_of(record: Any) -> str:
    return record.patient_id or f"image:{record.image_id}"


def _stratum(task, records: Sequence[Any]) -> Any:
    labels = [task.label(r) for r in records]
    return max(tuple(v) if isinstance(v, list) else v for v in labels)


def kept_patients(task, records: Sequence[Any], fraction: float, seed: int) -> set[str]:
    """The patients of ``records`` (one split) a probe with this budget is fitted on."""
    by_patient: dict[str, list] = defaultdict(list)
    for r in records:
        by_patient[patient_of(r)].append(r)
    strata: dict[Any, list[str]] = defaultdict(list)
    for patient in sorted(by_patient):
        strata[_stratum(task, by_patient[patient])].append(patient)
    base = task.variant.get("base_task", task.name)
    digest = hashlib.sha256(f"{base}|{seed}".encode("utf-8")).digest()
    gen = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    kept: set[str] = set()
    for key in sorted(strata, key=repr):
        patients = strata[key]
        order = gen.permutation(len(patients))
        kept.update(patients[i] for i in order[:max(1, math.ceil(fraction * len(patients)))])
    return kept


def budget_records(task, records: Sequence[Any]) -> list:
    """``records`` of the training split cut to the task's label budget (all of them without one)."""
    fraction = task.variant.get("train_fraction")
    if fraction is None or fraction >= 1:
        return list(records)
    kept = kept_patients(task, records, float(fraction), int(task.variant.get("train_seed", 0)))
    return [r for r in records if patient_of(r) in kept]


def parse_fractions(text: Any) -> list[float] | None:
    """``--train-fraction 0.01,0.1,0.5,1``: fractions in (0, 1]."""
    if text is None:
        return None
    items = text.split(",") if isinstance(text, str) else text
    out = []
    for item in items:
        value = float(item)
        if not 0 < value <= 1:
            raise ValueError(f"a training fraction must be in (0, 1], got {item!r}")
        out.append(value)
    return sorted(set(out)) or None

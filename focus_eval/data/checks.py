"""Checks run on a loaded dataset that warn and never fail: counts against the documented release, and
values that should agree between the images of one patient."""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from focus_eval.data.records import ImageRecord
from focus_eval.data.spec import ALL_IMAGES


def label_counts(records: Iterable[ImageRecord], targets: Sequence[str]) -> dict[str, dict[str, int]]:
    """Per split (``ALL_IMAGES`` for records without one): number of images and, per target, positives and
    negatives."""
    counts: dict[str, dict[str, int]] = {}
    for r in records:
        entry = counts.setdefault(ALL_IMAGES if r.split is None else str(r.split), {"n": 0})
        entry["n"] += 1
        for target in targets:
            value = getattr(r, target)
            if value is not None:
                key = f"{target}_pos" if value == 1 else f"{target}_neg"
                entry[key] = entry.get(key, 0) + 1
    return counts


def count_warnings(dataset: str, counts: Mapping[str, Mapping[str, int]],
                   documented: Mapping[str, Mapping[str, int]]) -> list[str]:
    """One warning listing every loaded count that differs from the documented one; counts never fail a
    load, since releases and copies differ."""
    differences = []
    for group, expected in documented.items():
        found = counts.get(group, {})
        for key, value in expected.items():
            if found.get(key, 0) != value:
                differences.append(f"{group} {key} {found.get(key, 0)} (documented {value})")
    if not differences:
        return []
    return [f"{dataset}: counts differ from the documented release: " + ", ".join(differences)]


def inconsistent_within_patient(records: Iterable[ImageRecord], attribute: str) -> list[str]:
    """Patient ids whose images disagree on ``attribute`` (missing values ignored), for load warnings."""
    seen: dict[str, set] = {}
    for r in records:
        value = getattr(r, attribute)
        if value is not None:
            seen.setdefault(r.patient_id, set()).add(value)
    return [p for p, values in seen.items() if len(values) > 1]

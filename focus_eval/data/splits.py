"""Split policy: patient-grouped label-stratified 60/20/20 splits, a validation part carved from an official
train, external split files, and the leakage check that runs on every load."""

from __future__ import annotations

import csv
import random
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from focus_eval.data.tables import clean_cell, clean_header
from focus_eval.data.records import SPLITS, TARGETS, ImageRecord
from focus_eval.errors import DataError

# Changing this constant (or the algorithm below) changes every split, hence every published number.
DEFAULT_SEED = 42
FRACTIONS = {"train": 0.6, "val": 0.2, "test": 0.2}
VAL_FRACTION = 0.2


def stratum(records: Sequence[ImageRecord], targets: Sequence[str] = TARGETS) -> str:
    """A group's combined label key: per target '1' if any image is positive, '0' if any is negative (and
    none positive), '-' if the target is not defined for any of its images."""
    parts = []
    for target in targets:
        values = {r.label(target) for r in records} - {None}
        parts.append("1" if 1 in values else "0" if values else "-")
    return "".join(parts)


def _quotas(n: int, fractions: dict[str, float]) -> dict[str, int]:
    """Largest-remainder allocation of ``n`` groups; ties favour the later split (test before val before train)
    so that a small stratum reaches the test split first."""
    raw = {s: n * f for s, f in fractions.items()}
    counts = {s: int(v) for s, v in raw.items()}
    order = sorted(fractions, key=lambda s: (raw[s] - counts[s], list(fractions).index(s)), reverse=True)
    for s in order[: n - sum(counts.values())]:
        counts[s] += 1
    return counts


def _groups(records: Sequence[ImageRecord]) -> dict[str, list[ImageRecord]]:
    groups: dict[str, list[ImageRecord]] = defaultdict(list)
    for r in records:
        groups[r.patient_id].append(r)
    return groups


def _allocate(records: Sequence[ImageRecord], fractions: dict[str, float], seed: int) -> dict[str, str]:
    """patient_id -> split, stratified on the group's combined labels; independent of record order."""
    by_stratum: dict[str, list[str]] = defaultdict(list)
    for key, members in _groups(records).items():
        by_stratum[stratum(members)].append(key)
    assignment: dict[str, str] = {}
    for name in sorted(by_stratum):
        keys = sorted(by_stratum[name])
        random.Random(f"{seed}|{name}").shuffle(keys)
        start = 0
        for split, count in _quotas(len(keys), fractions).items():
            for key in keys[start:start + count]:
                assignment[key] = split
            start += count
    return assignment


def grouped_split(records: Sequence[ImageRecord], seed: int = DEFAULT_SEED) -> None:
    """Assign train/val/test (60/20/20) in place, grouped by patient and stratified on the combined targets."""
    assignment = _allocate(records, FRACTIONS, seed)
    for r in records:
        r.split = assignment[r.patient_id]


def carve_validation(records: Sequence[ImageRecord], seed: int = DEFAULT_SEED,
                     fraction: float = VAL_FRACTION) -> int:
    """Move a seeded, label-stratified ``fraction`` of the official train split to val (grouped by patient).
    Test records are never touched. Returns the number of images moved."""
    train = [r for r in records if r.split == "train"]
    assignment = _allocate(train, {"train": 1.0 - fraction, "val": fraction}, seed)
    moved = 0
    for r in train:
        if assignment[r.patient_id] == "val":
            r.split = "val"
            moved += 1
    return moved


@dataclass
class SplitFileResult:
    """What applying an external split file did: kept records and what it reported."""

    records: list[ImageRecord]
    unlisted: int
    missing_ids: list[str]
    patient_overlap: list[str] = field(default_factory=list)


def read_split_file(path: Path) -> dict[str, str]:
    """image_id -> split from a CSV with columns image_id, split. One image in two splits is a DataError."""
    path = Path(path)
    if not path.is_file():
        raise DataError("split file not found", file=str(path))
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        header = [clean_header(h).lower() for h in next(reader, [])]
        if "image_id" not in header or "split" not in header:
            raise DataError(f"split file needs columns image_id and split; found {header}", file=str(path))
        id_col, split_col = header.index("image_id"), header.index("split")
        splits: dict[str, str] = {}
        for lineno, values in enumerate(reader, start=2):
            if not any(v.strip() for v in values):
                continue
            image_id = clean_cell(values[id_col] if id_col < len(values) else None)
            split = (clean_cell(values[split_col] if split_col < len(values) else None) or "").lower()
            if image_id is None:
                raise DataError("empty image_id", file=str(path), row=lineno)
            if split not in SPLITS:
                raise DataError(f"split {split!r} is not one of {list(SPLITS)}", file=str(path), row=lineno)
            if splits.get(image_id, split) != split:
                raise DataError(f"image {image_id!r} is listed in two splits ({splits[image_id]} and {split})",
                                file=str(path), row=lineno)
            splits[image_id] = split
    return splits


def apply_split_file(records: Sequence[ImageRecord], path: Path) -> SplitFileResult:
    """Keep the listed images with the file's split; unlisted images are left out, listed ids with no image
    are reported. A patient in two splits is accepted (for reproducing published splits) and reported."""
    splits = read_split_file(path)
    kept = []
    for r in records:
        if r.image_id in splits:
            r.split = splits[r.image_id]
            kept.append(r)
    present = {r.image_id for r in records}
    missing = sorted(i for i in splits if i not in present)
    overlap = check_splits(kept, allow_patient_overlap=True, source=str(path))
    return SplitFileResult(kept, len(records) - len(kept), missing, overlap)


def check_splits(records: Sequence[ImageRecord], allow_patient_overlap: bool = False,
                 source: str = "split check") -> list[str]:
    """Raise DataError if a record has no valid split, or if an image file or (unless allowed) a patient
    occurs in more than one split. Returns the patients found in several splits (only when allowed)."""
    by_file: dict[str, set[str]] = defaultdict(set)
    by_patient: dict[str, set[str]] = defaultdict(set)
    for r in records:
        if r.split not in SPLITS:
            raise DataError(f"image {r.image_id!r} has split {r.split!r}; expected one of {list(SPLITS)}",
                            file=source)
        by_file[r.relpath].add(r.split)
        by_patient[r.patient_id].add(r.split)
    leaked_files = sorted(f for f, s in by_file.items() if len(s) > 1)
    if leaked_files:
        raise DataError(f"{len(leaked_files)} image file(s) in more than one split: {_examples(leaked_files, by_file)}",
                        file=source)
    leaked = sorted((p for p, s in by_patient.items() if len(s) > 1), key=_natural)
    if leaked and not allow_patient_overlap:
        raise DataError(f"{len(leaked)} patient(s) in more than one split: {_examples(leaked, by_patient)}",
                        file=source)
    return leaked


def _examples(keys: list[str], where: dict[str, set[str]], limit: int = 5) -> str:
    shown = [f"{k} ({'/'.join(s for s in SPLITS if s in where[k])})" for k in keys[:limit]]
    return ", ".join(shown) + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def _natural(key: str) -> tuple:
    return (0, int(key), "") if key.isdigit() else (1, 0, key)

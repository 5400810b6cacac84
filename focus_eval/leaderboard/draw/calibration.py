"""Reliability-diagram bins from a (task, method) sample file: 10 equal-width bins on the positive-class score."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from focus_eval.errors import DataError

N_BINS = 10


@dataclass(frozen=True)
class CalibrationBin:
    """One non-empty score bin: its bounds, row count, mean score and observed positive rate."""

    lower: float
    upper: float
    count: int
    mean_score: float
    mean_label: float


@dataclass(frozen=True)
class Calibration:
    """The bins of one sample file, with how many test rows were used and how many had no score."""

    bins: list[CalibrationBin]
    n: int
    n_skipped: int

    @property
    def ece(self) -> float | None:
        if not self.n:
            return None
        return sum(b.count / self.n * abs(b.mean_score - b.mean_label) for b in self.bins)


def samples_path(sample_dir: Path, task: str, method: str) -> Path | None:
    """``samples/<task>.<method>.jsonl``, or None when the names would leave the samples folder."""
    name = f"{task}.{method}.jsonl"
    if "/" in name or "\\" in name:
        return None
    return sample_dir / name


def reliability_bins(scores, labels, n_bins: int = N_BINS) -> list[CalibrationBin]:
    """Non-empty bins; a score falls in bin min(floor(n_bins * score), n_bins - 1), as the ECE is computed."""
    scores, labels = np.asarray(scores, dtype=float), np.asarray(labels, dtype=float)
    slots = np.minimum((scores * n_bins).astype(int), n_bins - 1)
    counts = np.bincount(slots, minlength=n_bins)
    sums = np.bincount(slots, weights=scores, minlength=n_bins)
    positives = np.bincount(slots, weights=labels, minlength=n_bins)
    return [CalibrationBin(lower=i / n_bins, upper=(i + 1) / n_bins, count=int(c), mean_score=float(sums[i] / c),
                           mean_label=float(positives[i] / c)) for i, c in enumerate(counts) if c]


def read_calibration(path: Path) -> Calibration:
    """Bins over the test rows of one sample file; rows without a score (errors, unscored) are skipped."""
    return calibration_of(read_test_rows(path))


def read_test_rows(path: Path) -> list[dict]:
    """The test rows of one sample file; a scored row's score must be a probability and its label 0 or 1."""
    rows = []
    for index, row in enumerate(_rows(path), start=1):
        if row is None or row.get("split", "test") != "test":
            continue
        rows.append(row)
        score, label = row.get("score"), row.get("label")
        if score is None or row.get("error") is not None:
            continue
        if score.__class__ not in (float, int) or not 0.0 <= score <= 1.0:
            raise DataError(f"score must be a probability in [0, 1], got {score!r}", file=str(path), row=index)
        if label.__class__ is not int or label not in (0, 1):
            raise DataError(f"label must be 0 or 1, got {label!r}", file=str(path), row=index)
    return rows


def calibration_of(rows: list[dict]) -> Calibration:
    """Reliability bins of test rows; rows without a score (errors, unscored) are counted as skipped."""
    scored = [r for r in rows if r.get("score") is not None and r.get("error") is None]
    return Calibration(bins=reliability_bins([float(r["score"]) for r in scored], [r["label"] for r in scored]),
                       n=len(scored), n_skipped=len(rows) - len(scored))


def pooled(calibrations: list[Calibration]) -> Calibration:
    """One calibration from several (a family's lines): bins of the same bounds summed, weighted by count."""
    totals: dict[tuple[float, float], list[float]] = {}
    for calibration in calibrations:
        for b in calibration.bins:
            slot = totals.setdefault((b.lower, b.upper), [0, 0.0, 0.0])
            slot[0] += b.count
            slot[1] += b.mean_score * b.count
            slot[2] += b.mean_label * b.count
    bins = [CalibrationBin(lower=lo, upper=hi, count=int(c), mean_score=s / c, mean_label=y / c)
            for (lo, hi), (c, s, y) in sorted(totals.items())]
    return Calibration(bins=bins, n=sum(c.n for c in calibrations), n_skipped=sum(c.n_skipped for c in calibrations))


def _rows(path: Path) -> list[dict | None]:
    """The file's lines as objects (None for blank lines), parsed in one pass when the file is well formed."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read sample file ({exc})", file=str(path)) from exc
    if all(line.strip() for line in lines):
        try:  # one decoder call for the whole file is about twice as fast as one per line
            rows = json.loads("[" + ",".join(lines) + "]")
            if all(isinstance(row, dict) for row in rows):
                return rows
        except json.JSONDecodeError:
            pass  # find the bad line below, so the error can name it
    return [_parse(text, path, index, last=index == len(lines)) for index, text in enumerate(lines, start=1)]


def _parse(text: str, path: Path, index: int, last: bool) -> dict | None:
    if not text.strip():
        return None
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        if last:  # an interrupted write leaves a truncated last line; the runner resumes from it
            return None
        raise DataError(f"not valid JSON ({exc})", file=str(path), row=index) from exc
    if not isinstance(row, dict):
        raise DataError("a sample line must be a JSON object", file=str(path), row=index)
    return row

"""Read the fine-tuning comparison files of ``focus-eval compare``: paired deltas and in-domain/OOD summaries.

Every key except ``metric`` is optional and reads as missing when absent; a value of the wrong type is an error
naming the file and row. Lines whose ``kind`` is neither "delta" or absent (a comparison) nor ``summary`` are counted and
listed by kind on the page rather than guessed at.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from focus_eval.errors import DataError
from focus_eval.leaderboard.stats import MIN_COMPARISONS, MIN_PAIRED, MIN_POSITIVES, Verdict, verdict
from focus_eval.results.schema import read_jsonl

_TEXT = ("adapter", "base_model", "model", "train_dataset", "target", "test_task", "test_dataset", "metric")
_NUMBERS = ("base", "ft", "delta", "p", "q", "n", "n_pos", "n_boot")
_SUMMARY_TEXT = ("metric", "domain")
_SUMMARY_NUMBERS = ("mean_delta", "p", "q", "n_comparisons")
DOMAIN_LABELS = {"in_domain": "in-domain", "ood": "OOD"}


@dataclass(frozen=True)
class Comparison:
    """One (adapter, test task, metric) delta of a fine-tuned model against its base model."""

    metric: str
    source: Path
    row: int
    adapter: str | None = None
    base_model: str | None = None
    model: str | None = None
    train_dataset: str | None = None
    target: str | None = None
    test_task: str | None = None
    test_dataset: str | None = None
    in_domain: bool | None = None
    base: float | None = None
    ft: float | None = None
    delta: float | None = None
    ci: tuple[float | None, float | None] | None = None
    p: float | None = None
    q: float | None = None
    n: float | None = None
    n_pos: float | None = None
    n_boot: float | None = None
    flagged_underpowered: bool | None = None

    @property
    def domain(self) -> str:
        return "unknown" if self.in_domain is None else ("in_domain" if self.in_domain else "ood")

    @property
    def underpowered(self) -> bool:
        """Flagged by ``focus-eval compare``, or too few paired positives or images to be powered."""
        return bool(self.flagged_underpowered) or (self.n_pos is not None and self.n_pos < MIN_POSITIVES) or \
            (self.n is not None and self.n < MIN_PAIRED)

    @property
    def verdict(self) -> Verdict:
        return verdict(self.metric, self.delta, self.ci, self.q, self.underpowered)


@dataclass(frozen=True)
class CompareSummary:
    """Mean delta over the comparisons of one metric and domain (in-domain or OOD)."""

    metric: str
    source: Path
    row: int
    domain: str = "unknown"
    mean_delta: float | None = None
    ci: tuple[float | None, float | None] | None = None
    p: float | None = None
    q: float | None = None
    n_comparisons: float | None = None

    @property
    def underpowered(self) -> bool:
        """A mean over fewer than MIN_COMPARISONS comparisons (or an unknown number) is not a summary."""
        return self.n_comparisons is None or self.n_comparisons < MIN_COMPARISONS

    @property
    def verdict(self) -> Verdict:
        return verdict(self.metric, self.mean_delta, self.ci, self.q, self.underpowered)


@dataclass
class CompareData:
    """Everything read from the comparison files of one build."""

    comparisons: list[Comparison] = field(default_factory=list)
    summaries: list[CompareSummary] = field(default_factory=list)
    other_kinds: Counter = field(default_factory=Counter)
    raw: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.comparisons or self.summaries or self.other_kinds)


def read_compare_files(paths: list[Path]) -> CompareData:
    data = CompareData()
    for path in paths:
        try:
            rows = read_jsonl(path)
        except (OSError, UnicodeDecodeError) as exc:
            raise DataError(f"cannot read comparison file ({exc})", file=str(path)) from exc
        except ValueError as exc:
            raise DataError(str(exc)) from exc
        for index, row in enumerate(rows, start=1):
            _add_row(data, row, path, index)
    return data


def _add_row(data: CompareData, row: Any, path: Path, index: int) -> None:
    if not isinstance(row, dict):
        raise DataError("a comparison line must be a JSON object", file=str(path), row=index)
    data.raw.append(row)
    kind = row.get("kind")
    if kind in (None, "delta"):
        data.comparisons.append(_comparison(row, path, index))
    elif kind == "summary":
        data.summaries.append(_summary(row, path, index))
    else:
        data.other_kinds[str(kind)] += 1


def _comparison(row: dict[str, Any], path: Path, index: int) -> Comparison:
    values = _checked(row, _TEXT, _NUMBERS, path, index)
    in_domain, flagged = (_flag(row, key, path, index) for key in ("in_domain", "underpowered"))
    if in_domain is None and values["train_dataset"] and values["test_dataset"]:
        in_domain = values["train_dataset"] == values["test_dataset"]  # SPEC section 6's rule
    return Comparison(**values, in_domain=in_domain, ci=_interval(row, path, index), source=path, row=index,
                      flagged_underpowered=flagged)


def _flag(row: dict[str, Any], key: str, path: Path, index: int) -> bool | None:
    value = row.get(key)
    if value is not None and not isinstance(value, bool):
        raise DataError(f"{key!r} must be true or false, got {value!r}", file=str(path), row=index)
    return value


def _summary(row: dict[str, Any], path: Path, index: int) -> CompareSummary:
    values = _checked(row, _SUMMARY_TEXT, _SUMMARY_NUMBERS, path, index)
    values["domain"] = values["domain"] or "unknown"
    return CompareSummary(**values, ci=_interval(row, path, index), source=path, row=index)


def _checked(row: dict[str, Any], texts: tuple[str, ...], numbers: tuple[str, ...], path: Path,
             index: int) -> dict[str, Any]:
    if not isinstance(row.get("metric"), str) or not row["metric"]:
        raise DataError("a comparison line needs a 'metric' name", file=str(path), row=index)
    values: dict[str, Any] = {}
    for key in texts:
        value = row.get(key)
        if value is not None and not isinstance(value, str):
            raise DataError(f"{key!r} must be text, got {value!r}", file=str(path), row=index)
        values[key] = value
    for key in numbers:
        values[key] = _number(row.get(key), key, path, index)
    return values


def _interval(row: dict[str, Any], path: Path, index: int) -> tuple[float | None, float | None] | None:
    pair = row.get("ci")
    if pair is None:
        return None
    if not isinstance(pair, list) or len(pair) != 2:
        raise DataError(f"'ci' must be [low, high], got {pair!r}", file=str(path), row=index)
    return (_number(pair[0], "ci", path, index), _number(pair[1], "ci", path, index))


def _number(value: Any, key: str, path: Path, index: int) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise DataError(f"{key!r} must be a finite number or null, got {value!r}", file=str(path), row=index)
    return value

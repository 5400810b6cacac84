"""Read results lines into checked leaderboard entries; a malformed line is an error naming its file and row.

Only ``model``, ``method``, ``task`` and ``metrics`` are required; any other SPEC key that is absent reads as
missing (null). Keys beyond SPEC are kept in the raw row for ``data/results.json``. A gap's interval sits
beside it in its block, as ``<gap>_ci: [low, high]`` (e.g. ``fairness.age.eo_gap_ci``). Lines with
``"kind": "group"`` (a group's macro mean over its member tasks) are read apart, as ``GroupLine``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from focus_eval.errors import DataError
from focus_eval.leaderboard.conventions import Convention, conventions, describe, signature
from focus_eval.results.schema import FAIRNESS_GAPS, METRICS, QUALITY_GAPS, ResultLine, read_jsonl

REQUIRED = ("model", "method", "task", "metrics")
FLAGS = ("untrained", "proxy", "underpowered", "limited")
COUNTS = ("n", "n_pos", "n_valid", "n_unparsed", "n_errors", "n_boot")
GAP_KEYS = ("n_min", "threshold", *dict.fromkeys((*FAIRNESS_GAPS, *QUALITY_GAPS)))
# SPEC section 6: a task with fewer test positives than this is underpowered (used when a line lacks the flag).
MIN_POSITIVES = 10


@dataclass(frozen=True)
class Entry:
    """One results line as the site shows it, with where it came from."""

    line: ResultLine
    raw: dict[str, Any]
    source: Path
    row: int
    underpowered: bool
    contamination: str | None
    conventions: tuple[Convention, ...] = ()

    @property
    def model(self) -> str:
        return self.line.model

    @property
    def limited(self) -> bool:
        """A ``--limit`` run: numbers from the first N test images only."""
        return bool(self.line.limited) or any(c.key == "limit" for c in self.conventions)

    @property
    def config(self) -> tuple[str, str, str, str]:
        """A configuration: one model with one method (and adapter, if any), under one set of conventions."""
        return (self.line.model, self.line.method, self.line.adapter or "", signature(self.conventions))

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (*self.config, self.line.task)

    @property
    def convention_text(self) -> str:
        return describe(self.conventions)

    @property
    def flags(self) -> list[str]:
        """The markers a row carries on the site: proxy task, underpowered task, untrained model, contamination,
        limited run."""
        marks = {"proxy": self.line.proxy, "underpowered": self.underpowered, "untrained": self.line.untrained,
                 "contaminated": self.contamination is not None, "limited": self.limited}
        return [name for name, on in marks.items() if on]

    @property
    def sample_dir(self) -> Path:
        return self.source.parent / "samples"

    def metric(self, name: str) -> float | None:
        return self.line.metrics.get(name)

    def metric_ci(self, name: str) -> list[float | None] | None:
        return self.line.ci.get(name)

    def gap(self, section: str, group: str, gap: str) -> float | None:
        block = getattr(self.line, section).get(group) or {}
        return block.get(gap)

    def gap_ci(self, section: str, group: str, gap: str) -> list[float | None] | None:
        block = getattr(self.line, section).get(group) or {}
        return block.get(f"{gap}_ci")


@dataclass(frozen=True)
class GroupLine:
    """A group's line: one configuration's macro mean over the group's member tasks, with its interval."""

    model: str
    method: str
    adapter: str | None
    group: str
    metrics: dict[str, Any]
    ci: dict[str, Any]
    tasks: list[str]
    source: Path
    row: int
    limited: bool = False

    def metric(self, name: str) -> float | None:
        value = self.metrics.get(name)
        return value if _is_number(value) else None

    def metric_ci(self, name: str) -> list | None:
        pair = self.ci.get(name)
        return pair if isinstance(pair, list) and len(pair) == 2 else None


def _rows(path: Path) -> list[Any]:
    try:
        return read_jsonl(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read results file ({exc})", file=str(path)) from exc
    except ValueError as exc:
        raise DataError(str(exc)) from exc


def _is_group(row: Any) -> bool:
    return isinstance(row, dict) and row.get("kind") == "group"


def read_entries(path: Path) -> list[Entry]:
    """Every (task) results line of one ``results.jsonl`` file."""
    return [_entry(row, path, i) for i, row in enumerate(_rows(path), start=1) if not _is_group(row)]


def read_group_lines(path: Path) -> list[GroupLine]:
    """The group lines of one ``results.jsonl`` file (``"kind": "group"``)."""
    lines = []
    for i, row in enumerate(_rows(path), start=1):
        if not _is_group(row):
            continue
        name = row.get("group") or row.get("task")
        if not (isinstance(name, str) and isinstance(row.get("model"), str) and isinstance(row.get("metrics"), dict)):
            raise DataError("a group line needs model, group and metrics", file=str(path), row=i)
        tasks = row.get("tasks") or row.get("members") or []
        lines.append(GroupLine(model=row["model"], method=str(row.get("method") or ""), adapter=row.get("adapter"),
                               group=name, metrics=row["metrics"], ci=row.get("ci") or {},
                               tasks=[str(t) for t in tasks] if isinstance(tasks, list) else [], source=path, row=i,
                               limited=row.get("limited") is True))
    return lines


def _entry(row: Any, path: Path, index: int) -> Entry:
    def fail(message: str) -> DataError:
        return DataError(message, file=str(path), row=index)

    if not isinstance(row, dict):
        raise fail("a results line must be a JSON object")
    missing = [k for k in REQUIRED if k not in row]
    if missing:
        raise fail(f"missing required keys {missing}")
    for key in ("model", "method", "task"):
        if not isinstance(row[key], str) or not row[key]:
            raise fail(f"{key!r} must be a non-empty string")
    _check_shapes(row, fail)
    line = _result_line(row)
    return Entry(line=line, raw=row, source=path, row=index, underpowered=_underpowered(row),
                 contamination=contamination_note(line.extra, line.dataset),
                 conventions=conventions(line.extra, limited=bool(line.limited)))


def _check_shapes(row: dict[str, Any], fail) -> None:
    for key in ("family", "domain", "dataset", "target", "adapter", "ci_method"):
        if row.get(key) is not None and not isinstance(row[key], str):
            raise fail(f"{key!r} must be a string or null")
    for key in FLAGS:
        if row.get(key) is not None and not isinstance(row[key], bool):
            raise fail(f"{key!r} must be true or false")
    for key in COUNTS:
        if row.get(key) is not None and not _is_number(row[key]):
            raise fail(f"{key!r} must be a number or null")
    if not isinstance(row["metrics"], dict):
        raise fail("'metrics' must be an object")
    _check_numbers({k: row["metrics"].get(k) for k in METRICS}, "metrics", fail)
    _check_intervals(row.get("ci"), "ci", fail)
    for section in ("fairness", "robustness"):
        groups = row.get(section)
        if groups is None:
            continue
        if not isinstance(groups, dict):
            raise fail(f"{section!r} must be an object")
        for group, block in groups.items():
            _check_gap_block(block, f"{section}.{group}", fail)
    if row.get("extra") is not None and not isinstance(row["extra"], dict):
        raise fail("'extra' must be an object")


def _check_gap_block(block: Any, where: str, fail) -> None:
    if block is None:
        return
    if not isinstance(block, dict):
        raise fail(f"{where!r} must be an object")
    # Keys beyond the contract (group sizes, notes) are left alone; the ones the site shows must be numbers.
    _check_numbers({k: block.get(k) for k in GAP_KEYS}, where, fail)
    _check_intervals({f"{k}_ci": block.get(f"{k}_ci") for k in GAP_KEYS}, where, fail)


def _check_numbers(values: dict[str, Any], where: str, fail) -> None:
    for name, value in values.items():
        if value is None:
            continue
        if not _is_number(value):
            raise fail(f"{where}.{name} must be a number or null, got {value!r}")
        if not math.isfinite(value):
            raise fail(f"{where}.{name} is {value}; missing values must be written as null")


def _check_intervals(values: Any, where: str, fail) -> None:
    if values is None:
        return
    if not isinstance(values, dict):
        raise fail(f"{where!r} must be an object")
    for name, pair in values.items():
        if pair is None:
            continue
        if not isinstance(pair, list) or len(pair) != 2:
            raise fail(f"{where}.{name} must be [low, high] or null")
        _check_numbers({"low": pair[0], "high": pair[1]}, f"{where}.{name}", fail)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _result_line(row: dict[str, Any]) -> ResultLine:
    empty: dict[str, Any] = {"metrics": {}, "ci": {}, "fairness": {}, "robustness": {}, "extra": {}}
    values = {}
    for spec_field in fields(ResultLine):
        value = row.get(spec_field.name)
        if value is None:
            value = empty.get(spec_field.name, False if spec_field.name in FLAGS else None)
        values[spec_field.name] = value
    return ResultLine(**values)


def _underpowered(row: dict[str, Any]) -> bool:
    if row.get("underpowered") is not None:
        return bool(row["underpowered"])
    return row.get("n_pos") is not None and row["n_pos"] < MIN_POSITIVES


def contamination_note(extra: dict[str, Any], dataset: str | None) -> str | None:
    """Why a (model, dataset) cell is marked as contaminated, or None.

    ``extra.contaminated: true`` marks the cell; ``extra.contamination`` is true/false, a note (text), or the list
    of datasets the model was pretrained on, which marks the cell when the task's dataset is in it.
    """
    flag = extra.get("contaminated")
    detail = extra.get("contamination")
    if isinstance(detail, bool):  # the runner's form: is the task's dataset in the preset's pretraining list
        if flag is None:
            flag = detail
        detail = None
    if isinstance(detail, list):
        if flag is None:
            flag = dataset is not None and dataset in detail
        detail = "pretrained on " + ", ".join(map(str, detail)) if detail else None
    if flag is None:
        flag = bool(detail)
    if not flag:
        return None
    return str(detail) if detail else "the model was pretrained on images from this dataset"

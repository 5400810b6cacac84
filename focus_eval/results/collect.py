"""Reading results folders: everything between ``results.jsonl`` (and the comparison files of ``focus-eval
compare``) and the analyses and pages that use them, pure reading.

- **inputs**: a RESULTS_DIR is an ``--output-path`` folder (``<dir>/<model>/results.jsonl``), a model folder
  (``<dir>/results.jsonl``), or a file given directly (``results.jsonl`` or ``compare*.jsonl``). The results of
  ``--limit`` runs beside them (``<model>/limit-N/results.jsonl``) are found too, to be marked as such.
  Comparison files are found as ``<dir>/compare*.jsonl`` and ``<dir>/*/compare.jsonl``. A submission bundle
  (a folder with ``bundle.json``, ``results.bundle``) is checked on arrival first (``check_bundle``: a refused
  bundle stops the reading with every problem) and its results are read with its submitter.
- **entries**: results lines read into checked entries; a malformed line is an error naming its file and row.
  Only ``model``, ``method``, ``task`` and ``metrics`` are required; any other SPEC key that is absent reads as
  missing (null). Keys beyond SPEC are kept in the raw row for ``data/results.json``. A gap's interval sits
  beside it in its block, as ``<gap>_ci: [low, high]`` (e.g. ``fairness.age.eo_gap_ci``). Lines with
  ``"kind": "group"`` are read apart, as ``GroupLine`` records. Each entry carries its non-default run
  conventions (``--seed``, ``--limit``, ...), found by the rule the caller passes (``ConventionRule``: the
  defaults are the run options').
- **comparison lines**: ``CompareLine`` and ``CompareSummaryLine`` records; lines of any other ``kind`` are
  counted by kind.
- **who submitted a line**: ``Entry.submitter`` is the bundle's submitter (None for a results folder of one's
  own), part of the line's identity; ``Entry.verdict`` is what verification said of it, once a caller above this
  layer has verified it (``verification.verify_collection``), and None before.
- **one line per configuration and task**: when folders hold the same line twice, reading stops naming both
  places, unless ``--prefer newest`` (the later ``created`` wins) or ``--prefer FOLDER`` (the line read from under
  FOLDER wins) says which to keep.
- **privacy**: metrics-only publishing keeps counts where results lines listed image or patient ids.
- **run manifests**: the ``run-*.json`` beside each ``results.jsonl`` (focus-eval version, git commit, the preset
  as used) and where a line's weights came from (``extra.provenance``).
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections import Counter
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

from focus_eval.errors import DataError, FocusError
from focus_eval.results.bundle import Bundle, check_bundle, is_bundle
from focus_eval.results.identity import Identity, reference_versions, version_note, version_text
from focus_eval.results.layout import MANIFEST_GLOB, RESULTS_FILE, limit_dir_name
from focus_eval.results.power import COVERAGE_FLOOR, answered, low_coverage, no_answers, underpowered
from focus_eval.results.schema import (CLASS_METRICS, FAIRNESS_GAPS, METRICS, QUALITY_GAPS, CompareLine,
                                       CompareSummaryLine, GroupLine, ResultLine, read_jsonl)
from focus_eval.results.verdict import VERIFIED, LineVerdict


# ----- run conventions


@dataclass(frozen=True)
class Convention:
    """One non-default run option of a results line."""

    key: str
    value: Any
    label: str
    description: str


# (extra, limited) -> the line's non-default conventions, in a fixed order
ConventionRule = Callable[[dict[str, Any], bool], tuple[Convention, ...]]


def signature(found: tuple[Convention, ...]) -> str:
    """A text that is equal for two lines exactly when their conventions are."""
    return ";".join(f"{c.key}={c.value!r}" for c in found)


def describe(found: tuple[Convention, ...]) -> str:
    """The conventions as a short label (``seed 1, probe-compat``), or an empty text for the defaults."""
    return ", ".join(c.label for c in found)


# ----- inputs


RESULTS_NAME = RESULTS_FILE
LIMITED = limit_dir_name("*")
COMPARE_PATTERN = "compare*.jsonl"


@dataclass
class SiteInputs:
    """The files one leaderboard build reads, each listed once in discovery order, and the submission bundles
    among the paths (each checked on arrival), with the results files each holds."""

    results_files: list[Path] = field(default_factory=list)
    compare_files: list[Path] = field(default_factory=list)
    bundles: list[Bundle] = field(default_factory=list)
    # results file (resolved) -> the submitter of the bundle it came in
    submitters: dict[Path, str] = field(default_factory=dict)

    def add(self, other: "SiteInputs") -> None:
        self.results_files = _unique([*self.results_files, *other.results_files])
        self.compare_files = _unique([*self.compare_files, *other.compare_files])
        self.bundles += other.bundles
        self.submitters.update(other.submitters)

    def submitter(self, results: Path) -> str | None:
        """Who submitted ``results`` (a results file of a bundle), or None for a results folder of one's own."""
        return self.submitters.get(results.resolve())


def discover(paths: Iterable[Path | str]) -> SiteInputs:
    """All input files under ``paths``; a path that holds none of them is an error naming what was looked for. A
    submission bundle is checked on arrival before anything in it is read (``BundleRefused`` otherwise)."""
    found = SiteInputs()
    for path in map(Path, paths):
        one = _discover_bundle(path) if is_bundle(path) else _discover_one(path)
        if not one.results_files and not one.compare_files:
            raise FocusError(
                f"{path}: no results found (looked for {path}/{RESULTS_NAME}, {path}/*/{RESULTS_NAME}, "
                f"{path}/{COMPARE_PATTERN} and {path}/*/compare.jsonl)")
        found.add(one)
    return found


def _discover_bundle(path: Path) -> SiteInputs:
    """The results files of a submission bundle that passes its check on arrival, each with its submitter."""
    bundle = check_bundle(path)
    one = _discover_one(bundle.results_root)
    return SiteInputs(results_files=one.results_files, bundles=[bundle],
                      submitters={p.resolve(): bundle.submitter for p in one.results_files})


def _discover_one(path: Path) -> SiteInputs:
    if not path.exists():
        raise FocusError(f"{path}: no such file or folder")
    if path.is_file():
        return _classify_file(path)
    results = [path / RESULTS_NAME] if (path / RESULTS_NAME).is_file() else []
    results += sorted(p for p in path.glob(f"*/{RESULTS_NAME}") if p.is_file())
    # --limit runs sit beside the full results (<model>/limit-N/); they are read to be marked, not ranked
    results += sorted(p for p in [*path.glob(f"{LIMITED}/{RESULTS_NAME}"), *path.glob(f"*/{LIMITED}/{RESULTS_NAME}")]
                      if p.is_file())
    compares = sorted(p for p in path.glob(COMPARE_PATTERN) if p.is_file())
    compares += sorted(p for p in path.glob("*/compare.jsonl") if p.is_file())
    return SiteInputs(results_files=results, compare_files=compares)


def _classify_file(path: Path) -> SiteInputs:
    if path.name == RESULTS_NAME:
        return SiteInputs(results_files=[path])
    if fnmatch.fnmatch(path.name, COMPARE_PATTERN):
        return SiteInputs(compare_files=[path])
    raise FocusError(f"{path}: expected a results folder, a {RESULTS_NAME} file or a {COMPARE_PATTERN} file")


def _unique(paths: list[Path]) -> list[Path]:
    seen: set[Path] = set()
    kept = []
    for path in paths:
        key = path.resolve()
        if key not in seen:
            seen.add(key)
            kept.append(path)
    return kept


# ----- entries


REQUIRED = ("model", "method", "task", "metrics")
FLAGS = ("untrained", "proxy", "underpowered", "limited")
COUNTS = ("n", "n_pos", "n_valid", "n_unparsed", "n_answered", "coverage", "n_errors", "n_boot")
GAP_KEYS = ("n_min", "threshold", *dict.fromkeys((*FAIRNESS_GAPS, *QUALITY_GAPS)))


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
    # the coverage a prompt method's line needs to be ranked (``focus-eval leaderboard --coverage-floor``)
    coverage_floor: float = COVERAGE_FLOOR
    # set by ``collect`` when the line is of another version of its task than most of the task's lines
    version_note: str | None = None
    # the submitter of the bundle the line came in (None: a results folder of one's own)
    submitter: str | None = None
    # what verification said of the line (None: not verified); an unverified line is ranked only with
    # ``rank_unverified`` (``focus-eval leaderboard --include-unverified``)
    verdict: LineVerdict | None = None
    rank_unverified: bool = False

    @cached_property
    def identity(self) -> Identity:
        """Everything that changes the line's numbers (``results.identity``)."""
        return Identity.of(self.line, signature(self.conventions), self.submitter)

    @property
    def verification(self) -> str | None:
        """``verified``, ``mismatch`` or ``unverifiable``; None for a line that was not verified."""
        return None if self.verdict is None else self.verdict.state

    @property
    def unverified(self) -> str | None:
        """Why a verified line is not verified (its state and first reason, ``mismatch: metrics.auroc: ...``), or
        None (verified, or not verified at all)."""
        if self.verdict is None or self.verdict.state == VERIFIED:
            return None
        return f"{self.verdict.state}: {self.verdict.reasons[0]}"

    @property
    def model(self) -> str:
        return self.line.model

    @property
    def primary_metric(self) -> str:
        """The metric the line's task is ranked by: FunBench F1 for multi-class and multiple-choice tasks,
        AUROC for binary ones."""
        return "funbench_f1" if self.line.output_type else "auroc"

    @property
    def low_coverage(self) -> bool:
        """A prompt method's line whose share of readable answers is below the floor: shown, never ranked."""
        return low_coverage(self.line.coverage, self.coverage_floor)

    @property
    def answers(self) -> float | None:
        """How many rows the line's answer-based scores rest on: readable answers of a prompt method, else the
        rows with a score (None when the line does not say)."""
        return answered(self.line.n_answered, self.line.n_valid, self.line.output_type)

    @cached_property
    def no_answers(self) -> bool:
        """Not a single answer to score: the line shows no score and gets no rank, whatever the floor."""
        return no_answers(self.line.n_answered, self.line.n_valid, self.line.output_type)

    @property
    def limited(self) -> bool:
        """A ``--limit`` run: numbers from the first N test images only."""
        return bool(self.line.limited) or any(c.key == "limit" for c in self.conventions)

    @property
    def config(self) -> tuple[str, str, str, str, str]:
        """A configuration: one model with one method (and adapter, if any), under one set of conventions, from
        one submitter (empty for a results folder of one's own)."""
        return (self.line.model, self.line.method, self.line.adapter or "", signature(self.conventions),
                self.submitter or "")

    @property
    def key(self) -> tuple[str, ...]:
        """One line's place: its configuration, task and task version (lines of two versions are two lines)."""
        return (*self.config, self.line.task, version_text(self.line.task_version), str(self.line.task_hash or ""))

    @property
    def convention_text(self) -> str:
        return describe(self.conventions)

    @property
    def flags(self) -> list[str]:
        """The markers a row carries on the site: proxy task, underpowered task, untrained model, contamination,
        limited run, no answers, low coverage, another task version than most lines of the task, a submitted line
        that verification did not find verified."""
        marks = {"proxy": self.line.proxy, "underpowered": self.underpowered, "untrained": self.line.untrained,
                 "contaminated": self.contamination is not None, "limited": self.limited,
                 "no_answers": self.no_answers, "low_coverage": self.low_coverage and not self.no_answers,
                 "version_mismatch": self.version_note is not None, "unverified": self.unverified is not None}
        return [name for name, on in marks.items() if on]

    @property
    def sample_dir(self) -> Path:
        return self.source.parent / "samples"

    def metric(self, name: str) -> float | None:
        """The line's value of ``name``; none for a line without answers (whatever its file says)."""
        return None if self.no_answers else self.line.metrics.get(name)

    def metric_ci(self, name: str) -> list[float | None] | None:
        return None if self.no_answers else self.line.ci.get(name)

    def gap(self, section: str, group: str, gap: str) -> float | None:
        block = getattr(self.line, section).get(group) or {}
        return None if self.no_answers else block.get(gap)

    def gap_ci(self, section: str, group: str, gap: str) -> list[float | None] | None:
        block = getattr(self.line, section).get(group) or {}
        return None if self.no_answers else block.get(f"{gap}_ci")


@dataclass(frozen=True)
class GroupEntry:
    """A group line as read: the record, and the file and row it came from."""

    line: GroupLine
    source: Path
    row: int
    submitter: str | None = None
    verdict: LineVerdict | None = None

    @property
    def model(self) -> str:
        return self.line.model

    @property
    def verification(self) -> str | None:
        return None if self.verdict is None else self.verdict.state

    @property
    def method(self) -> str:
        return self.line.method

    @property
    def adapter(self) -> str | None:
        return self.line.adapter

    @property
    def group(self) -> str:
        return self.line.group

    @property
    def tasks(self) -> list[str]:
        return self.line.tasks

    @property
    def limited(self) -> bool:
        return self.line.limited

    def metric(self, name: str) -> float | None:
        value = self.line.metrics.get(name)
        return value if _is_number(value) else None

    def metric_ci(self, name: str) -> list | None:
        pair = self.line.ci.get(name)
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


def read_entries(path: Path, conventions: ConventionRule, submitter: str | None = None) -> list[Entry]:
    """Every (task) results line of one ``results.jsonl`` file, each with its non-default run conventions as
    ``conventions`` finds them (and ``submitter``, for a results file of a bundle)."""
    return [_entry(row, path, i, conventions, submitter) for i, row in enumerate(_rows(path), start=1)
            if not _is_group(row)]


def read_group_lines(path: Path, submitter: str | None = None) -> list[GroupEntry]:
    """The group lines of one ``results.jsonl`` file (``"kind": "group"``)."""
    lines = []
    for i, row in enumerate(_rows(path), start=1):
        if _is_group(row):
            try:
                lines.append(GroupEntry(GroupLine.from_dict(row), source=path, row=i, submitter=submitter))
            except ValueError as exc:
                raise DataError(str(exc), file=str(path), row=i) from exc
    return lines


def _entry(row: Any, path: Path, index: int, conventions: ConventionRule, submitter: str | None = None) -> Entry:
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
    return Entry(line=line, raw=row, source=path, row=index, underpowered=_flagged_underpowered(row),
                 contamination=contamination_note(line.extra, line.dataset),
                 conventions=conventions(line.extra, bool(line.limited)), submitter=submitter)


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
    _check_possible(row, fail)


# The range each metric can take; a value outside is no score. A multi-class Brier score sums squared errors
# over the classes (at most 2); Cohen's kappa reaches down to -1.
RANGES = {**{k: (0.0, 1.0) for k in (*METRICS, *CLASS_METRICS)}, "brier": (0.0, 2.0), "qw_kappa": (-1.0, 1.0)}
# A rounding slack for values computed in floating point.
SLACK = 1e-9


def _check_possible(row: dict[str, Any], fail) -> None:
    """Values that cannot be: a metric outside its range, an interval whose low end passes its high end or that
    leaves the metric's range, counts that are negative, fractional or larger than the number of rows."""
    coverage = row.get("coverage")
    if coverage is not None and not (_is_number(coverage) and -SLACK <= coverage <= 1 + SLACK):
        raise fail(f"'coverage' is {coverage}: a share of answered rows lies in [0, 1]")
    counts = {k: row.get(k) for k in COUNTS if row.get(k) is not None and k != "coverage"}
    for key, value in counts.items():
        if not math.isfinite(value) or value < 0 or float(value) != int(value):
            raise fail(f"{key!r} is {value}: a count is a whole number of at least 0")
    n = counts.get("n")
    for key in ("n_pos", "n_valid", "n_unparsed", "n_errors", "n_answered"):
        if n is not None and counts.get(key) is not None and counts[key] > n:
            raise fail(f"{key!r} is {counts[key]}, more than the {n} rows of the line ('n')")
    ranges = RANGES
    for name, value in row["metrics"].items():
        if name in ranges and _is_number(value) and not ranges[name][0] - SLACK <= value <= ranges[name][1] + SLACK:
            raise fail(f"metrics.{name} is {value}, outside the range it can take {list(ranges[name])}")
    for name, pair in (row.get("ci") or {}).items():
        if not isinstance(pair, list) or len(pair) != 2 or not all(_is_number(v) for v in pair):
            continue
        low, high = pair
        if low > high + SLACK:
            raise fail(f"ci.{name} is [{low}, {high}]: its low end is above its high end")
        if name in ranges and not (ranges[name][0] - SLACK <= low and high <= ranges[name][1] + SLACK):
            raise fail(f"ci.{name} is [{low}, {high}], outside the range {name} can take {list(ranges[name])}")


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


def _flagged_underpowered(row: dict[str, Any]) -> bool:
    if row.get("underpowered") is not None:
        return bool(row["underpowered"])
    return underpowered(row.get("n_pos"))


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


# ----- comparison lines


@dataclass(frozen=True)
class Located:
    """A comparison line (delta or summary) and the file and row it came from."""

    line: CompareLine | CompareSummaryLine
    source: Path
    row: int


@dataclass
class CompareData:
    """Everything read from the comparison files of one build: delta lines, summary lines, how many lines of any
    other kind, and every row as read (for ``data/compare.json``)."""

    deltas: list[Located] = field(default_factory=list)
    summaries: list[Located] = field(default_factory=list)
    other_kinds: Counter = field(default_factory=Counter)
    raw: list[dict[str, Any]] = field(default_factory=list)


def read_compare_lines(paths: Iterable[Path]) -> CompareData:
    """The lines of ``focus-eval compare``'s files; a malformed line is an error naming its file and row."""
    data = CompareData()
    for path in paths:
        try:
            rows = read_jsonl(path)
        except (OSError, UnicodeDecodeError) as exc:
            raise DataError(f"cannot read comparison file ({exc})", file=str(path)) from exc
        except ValueError as exc:
            raise DataError(str(exc)) from exc
        for index, row in enumerate(rows, start=1):
            try:
                _add_compare_row(data, row, path, index)
            except ValueError as exc:
                raise DataError(str(exc), file=str(path), row=index) from exc
    return data


def _add_compare_row(data: CompareData, row: Any, path: Path, index: int) -> None:
    if not isinstance(row, dict):
        raise ValueError("a comparison line must be a JSON object")
    data.raw.append(row)
    kind = row.get("kind")
    if kind in (None, CompareLine.kind):
        data.deltas.append(Located(CompareLine.from_dict(row), path, index))
    elif kind == CompareSummaryLine.kind:
        data.summaries.append(Located(CompareSummaryLine.from_dict(row), path, index))
    else:
        data.other_kinds[str(kind)] += 1


# ----- de-duplication


NEWEST = "newest"
_OLDEST = datetime.min.replace(tzinfo=timezone.utc)


@dataclass
class Deduplicated:
    """The kept lines, and how many duplicates a ``--prefer`` rule set aside."""

    entries: list[Entry] = field(default_factory=list)
    replaced: int = 0


def deduplicate(entries: Iterable[Entry], prefer: str | Path | None = None) -> Deduplicated:
    kept: dict[tuple, Entry] = {}
    out = Deduplicated()
    for entry in entries:
        first = kept.get(entry.key)
        if first is None:
            kept[entry.key] = entry
            continue
        winner = _preferred(first, entry, prefer)
        if winner is None:
            raise _duplicate_error(first, entry, prefer)
        kept[entry.key] = winner
        out.replaced += 1
    out.entries = list(kept.values())
    return out


def _preferred(a: Entry, b: Entry, prefer: str | Path | None) -> Entry | None:
    if prefer is None:
        return None
    if str(prefer) == NEWEST:
        ta, tb = _created(a), _created(b)
        return None if ta == tb else (a if ta > tb else b)
    folder = Path(prefer).resolve()
    inside = [e for e in (a, b) if folder == e.source.resolve().parent or folder in e.source.resolve().parents]
    return inside[0] if len(inside) == 1 else None


def _created(entry: Entry) -> datetime:
    text = entry.line.created
    try:
        stamp = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return _OLDEST
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)


def _duplicate_error(first: Entry, second: Entry, prefer: str | Path | None) -> DataError:
    line = first.line
    what = (f"duplicate results line for model {line.model!r}, method {line.method!r}"
            f"{', adapter ' + repr(line.adapter) if line.adapter else ''}"
            f"{', conventions ' + first.convention_text if first.convention_text else ''}"
            f"{', submitter ' + repr(first.submitter) if first.submitter else ''}, task {line.task!r} "
            f"(first seen in {first.source}, row {first.row}; created {line.created or 'unknown'} and "
            f"{second.line.created or 'unknown'})")
    if prefer is None:
        how = (f"; keep one with --prefer newest (the later 'created' wins) or --prefer FOLDER (the line under "
               f"FOLDER wins, e.g. --prefer {second.source.parent.parent}), or leave one folder out")
    elif str(prefer) == NEWEST:
        how = "; --prefer newest cannot choose: both lines have the same creation time (use --prefer FOLDER)"
    else:
        how = f"; --prefer {prefer} cannot choose: it holds neither or both lines"
    return DataError(what + how, file=str(second.source), row=second.row)


# ----- privacy


# keys whose values name individual images or patients
ID_KEYS = frozenset({"image_id", "patient_id", "image_ids", "patient_ids", "first"})


def metrics_only(value: Any) -> Any:
    """``value`` without per-image or per-patient ids: an id summary ``{"count": n, "first": [...]}`` (how a
    run records the ids behind a split warning) becomes its count, and any other id-valued key is dropped."""
    if isinstance(value, dict):
        if "first" in value and "count" in value:
            return value["count"]
        return {k: metrics_only(v) for k, v in value.items() if k not in ID_KEYS}
    if isinstance(value, list):
        return [metrics_only(v) for v in value]
    return value


# ----- run manifests


@dataclass(frozen=True)
class RunInfo:
    """What one run manifest says about the run that wrote some results lines."""

    path: Path
    started: str | None
    finished: str | None
    version: str | None
    commit: str | None
    preset_hash: str | None
    preset: dict[str, Any] = field(default_factory=dict)
    units: frozenset[str] = frozenset()

    @property
    def short_commit(self) -> str | None:
        return self.commit[:10] if self.commit else None


@dataclass
class RunIndex:
    """The manifests of every results folder of a build, and the manifests that could not be read."""

    runs: dict[Path, list[RunInfo]] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)

    def run_of(self, entry: Entry) -> RunInfo | None:
        """The run that computed ``entry``: one that finished its unit, of the same preset, whose time span holds
        the line's creation time; else the newest such run; else None."""
        unit = f"{entry.line.task}.{entry.line.method}"
        runs = [r for r in self.runs.get(entry.source.parent, [])
                if unit in r.units and r.preset_hash in (None, entry.line.preset_hash)]
        created = entry.line.created or ""
        within = [r for r in runs if (r.started or "") <= created <= (r.finished or "~")]
        chosen = within or runs
        return chosen[-1] if chosen else None

    def presets(self, model: str) -> list[RunInfo]:
        """Runs of ``model`` that recorded its preset, newest last."""
        found = [r for runs in self.runs.values() for r in runs if r.preset.get("name") == model]
        return sorted(found, key=lambda r: r.started or "")


def read_runs(results_files: Iterable[Path]) -> RunIndex:
    """Every ``run-*.json`` beside each results file; one that is not valid JSON is listed, not fatal (a
    manifest describes a run, the results lines are the record)."""
    index = RunIndex()
    for results in results_files:
        folder = results.parent
        runs = []
        for path in sorted(folder.glob(MANIFEST_GLOB)):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                index.unreadable.append(f"{path}: {exc}")
                continue
            if isinstance(data, dict):
                runs.append(_run(path, data))
        index.runs[folder] = sorted(runs, key=lambda r: r.started or "")
    return index


def _run(path: Path, data: dict[str, Any]) -> RunInfo:
    units = data.get("units") if isinstance(data.get("units"), dict) else {}
    done = [u for key in ("finished", "skipped_as_done") for u in (units.get(key) or []) if isinstance(u, str)]
    versions = data.get("versions") if isinstance(data.get("versions"), dict) else {}
    preset = data.get("preset") if isinstance(data.get("preset"), dict) else {}
    return RunInfo(path=path, started=_text(data.get("started")), finished=_text(data.get("finished")),
                   version=_text(versions.get("focus-eval")), commit=_text(data.get("git_commit")),
                   preset_hash=_text(data.get("preset_hash")), preset=preset, units=frozenset(done))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class LineProvenance:
    """Where one results line came from, as its model page lists it."""

    created: str | None
    version: str | None
    commit: str | None
    weights: str
    revision: str | None
    adapter: str | None
    manifest: str | None


def weights_text(record: dict[str, Any], revision: bool = True) -> str:
    """Where the weights came from: hub id (and revision), local files and their digest, a tiny or packaged
    model, or none."""
    if record.get("hub_id"):
        text = f"hub {record['hub_id']}"
        return f"{text} @ {record.get('revision') or 'unpinned'}" if revision else text
    if record.get("local"):
        return f"local files {record.get('weights') or ''} (digest {str(record.get('digest') or '?')[:12]})"
    if record.get("kind"):
        return f"{record['kind']}:{record.get('name')}"
    return "no weights (the adapter's code alone)" if record.get("no_weights") else "source not recorded"


def line_provenance(entry: Entry, run: RunInfo | None) -> LineProvenance:
    record = entry.line.extra.get("provenance")
    record = record if isinstance(record, dict) else {}
    adapter = entry.line.adapter
    if adapter and entry.line.extra.get("adapter_digest"):
        adapter = f"{adapter} ({str(entry.line.extra['adapter_digest'])[:12]})"
    return LineProvenance(created=entry.line.created or None, version=run.version if run else None,
                          commit=run.short_commit if run else None, weights=weights_text(record, revision=False),
                          revision=record.get("revision") if record.get("hub_id") else None, adapter=adapter,
                          manifest=run.path.name if run else None)


# ----- one collection


@dataclass
class Collection:
    """What one set of RESULTS paths holds once read: the kept results lines (one per configuration and
    task), the group lines, the comparison lines, the run manifests, and how many duplicates ``prefer`` set
    aside."""

    paths: list[Path]
    inputs: SiteInputs
    entries: list[Entry]
    group_lines: list[GroupEntry]
    compare: CompareData
    runs: RunIndex
    replaced: int = 0


def mark_versions(entries: list[Entry]) -> list[Entry]:
    """The entries, each line of another version of its task than most of the task's lines marked with why
    (``Entry.version_note``): it is shown, flagged, and compared with nothing."""
    references = reference_versions(e.line for e in entries)
    return [replace(e, version_note=version_note(e.line, references[e.line.task])) for e in entries]


def read_paths(collection: "Collection", also: Iterable[Path | str | None] = ()) -> set[Path]:
    """Every file a command over ``collection`` may read, resolved: the results and comparison files, the run
    manifests beside the results files, every file of each line's sample folder, and ``also``."""
    found = [*collection.inputs.results_files, *collection.inputs.compare_files]
    for results in collection.inputs.results_files:
        found += results.parent.glob(MANIFEST_GLOB)
    for folder in {e.sample_dir for e in collection.entries}:
        if folder.is_dir():
            found += [p for p in folder.iterdir() if p.is_file()]
    found += [Path(p) for p in also if p is not None]
    return {p.resolve() for p in found}


def refuse_overwrite(collection: "Collection", files: Iterable[tuple[str, Path | None]] = (),
                     folders: Iterable[tuple[str, Path | None]] = (), also: Iterable[Path | str | None] = ()) -> None:
    """Before anything is written: a FocusError when an output file (``(option, path)``) resolves to a file the
    command reads, when two outputs are one file, or when an output folder holds a file it reads (a build clears
    what it wrote there before)."""
    inputs = read_paths(collection, also)
    seen: dict[Path, str] = {}
    for option, path in files:
        if path is None:
            continue
        target = Path(path).resolve()
        if target in inputs:
            raise FocusError(f"{option} {path}: that file is one this command reads; nothing was written (choose "
                             "another file)")
        if target in seen:
            raise FocusError(f"{option} {path}: the same file as {seen[target]}; nothing was written")
        seen[target] = f"{option} {path}"
    for option, path in folders:
        if path is None:
            continue
        folder = Path(path).resolve()
        inside = sorted(p for p in inputs if p == folder or folder in p.parents)
        if inside:
            raise FocusError(f"{option} {path}: the folder holds {inside[0]}, a file this command reads; nothing was "
                             "written (choose a folder outside the results)")


def collect(paths: Iterable[Path | str], conventions: ConventionRule,
            prefer: str | Path | None = None) -> Collection:
    """Read every input under ``paths`` (see ``discover``)."""
    paths = [Path(p) for p in paths]
    inputs = discover(paths)
    kept = deduplicate((e for path in inputs.results_files
                        for e in read_entries(path, conventions, inputs.submitter(path))), prefer)
    groups = sorted((g for path in inputs.results_files for g in read_group_lines(path, inputs.submitter(path))),
                    key=lambda g: (g.group, g.model, g.method, g.adapter or "", g.submitter or ""))
    return Collection(paths=paths, inputs=inputs, entries=mark_versions(kept.entries), group_lines=groups,
                      compare=read_compare_lines(inputs.compare_files), runs=read_runs(inputs.results_files),
                      replaced=kept.replaced)

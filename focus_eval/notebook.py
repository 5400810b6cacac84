"""Results as pandas tables for a notebook: ``load_results`` (one row per results line) and ``load_samples``
(one row per evaluated image). Both read RESULTS through ``results.collect`` with the leaderboard's conventions,
so a row here is a line the leaderboard shows, with the same numbers.

Column names (docs/NOTEBOOK.md): the line's descriptive fields and counts as they are; each metric by its name
(``auroc``) with its interval as ``auroc_ci_low`` and ``auroc_ci_high``; each fairness or robustness gap as
``fairness.<group>.<gap>`` (``fairness.age.eo_gap``) with ``_ci_low`` and ``_ci_high``, and the group's
``n_min`` and ``threshold`` beside it; ``n_answered`` (the rows its answer-based scores rest on: a prompt
method's readable answers, else a yes/no line's rows with a score) and ``coverage`` (a prompt method's share of
readable answers); ``conventions`` (the non-default run options as the site prints them), ``flags`` (proxy,
underpowered, untrained, contaminated, limited, no_answers, low_coverage, version_mismatch, joined by commas),
``ranked`` (whether the rankings count the line; ``set_aside`` says why not, by the one rule of
``results.identity``), ``source`` (the results file, a ``pathlib.Path``: a folder name that is not UTF-8 stays as
the file system spells it) and ``row``; ``created`` is a timestamp in UTC. A line without answers has no score:
its metric columns are empty, as on the site."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from focus_eval.errors import DataError, FocusError

LINE_FIELDS = ("model", "family", "domain", "untrained", "method", "task", "dataset", "target", "proxy", "adapter",
               "n", "n_pos", "n_valid", "n_unparsed", "n_answered", "coverage", "n_errors", "n_boot", "ci_method",
               "task_version", "task_hash", "preset_hash", "created", "underpowered", "limited", "output_type")
BOOL_COLUMNS = ("untrained", "proxy", "underpowered", "limited", "ranked")
INT_COLUMNS = ("n", "n_pos", "n_valid", "n_unparsed", "n_answered", "n_errors", "n_boot", "row")
FLOAT_COLUMNS = ("coverage",)
TIME_COLUMNS = ("created",)


def _interval(row: dict[str, Any], name: str, pair: Any) -> None:
    low, high = pair if isinstance(pair, (list, tuple)) and len(pair) == 2 else (None, None)
    row[f"{name}_ci_low"], row[f"{name}_ci_high"] = low, high


def _gaps(row: dict[str, Any], section: str, blocks: dict[str, Any]) -> None:
    for group, block in sorted((blocks or {}).items()):
        if not isinstance(block, dict):
            continue
        for key, value in block.items():
            if key.endswith("_ci"):
                continue
            name = f"{section}.{group}.{key}"
            row[name] = value
            if f"{key}_ci" in block:
                _interval(row, name, block[f"{key}_ci"])


def flatten(entry, include_limited: bool = False) -> dict[str, Any]:
    """One ``collect.Entry`` as a flat row (the column names of the module docstring)."""
    from focus_eval.results.identity import set_aside

    line = entry.line
    row: dict[str, Any] = {name: getattr(line, name, None) for name in LINE_FIELDS}
    row["underpowered"] = entry.underpowered
    row["limited"] = entry.limited
    row["n_answered"] = entry.answers
    for name in sorted(line.metrics):
        row[name] = entry.metric(name)
        _interval(row, name, entry.metric_ci(name))
    _gaps(row, "fairness", line.fairness)
    _gaps(row, "robustness", line.robustness)
    reason = set_aside(entry, include_limited)
    row.update(conventions=entry.convention_text, flags=",".join(entry.flags), contamination=entry.contamination,
               ranked=reason is None, set_aside=reason, source=Path(entry.source), row=entry.row)
    return row


def _utc(value: Any, source: Path, row: int) -> datetime | None:
    """An ISO 8601 time of a results line as an aware UTC time (one without a zone is UTC, as runs write it)."""
    if value is None:
        return None
    try:
        stamp = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise DataError(f"created: {value!r} is not an ISO 8601 time", file=str(source), row=row) from None
    return stamp.replace(tzinfo=timezone.utc) if stamp.tzinfo is None else stamp.astimezone(timezone.utc)


def _typed(frame):
    import pandas as pd

    for name in frame.columns:
        if name in BOOL_COLUMNS:
            frame[name] = frame[name].fillna(False).astype(bool)
        elif name in INT_COLUMNS:
            frame[name] = pd.to_numeric(frame[name]).astype("Int64")
        elif name in TIME_COLUMNS:
            stamps = [_utc(v, source, row) for v, source, row in zip(frame[name], frame["source"], frame["row"])]
            frame[name] = pd.to_datetime(pd.Series(stamps, index=frame.index, dtype=object), utc=True)
        elif name in FLOAT_COLUMNS:
            frame[name] = pd.to_numeric(frame[name]).astype("float64")
        elif name not in LINE_FIELDS and frame[name].map(_numeric_or_none).all():
            frame[name] = pd.to_numeric(frame[name]).astype("float64")
    return frame


def _numeric_or_none(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def load_results(*paths: Path | str, include_limited: bool = False, prefer: str | Path | None = None,
                 coverage_floor: float | None = None):
    """Every results line under ``paths`` (output folders, model folders, results.jsonl files) as a DataFrame,
    one row per line the leaderboard keeps; ``--limit`` lines only with ``include_limited``; ``coverage_floor``
    (default the site's, ``results.power.COVERAGE_FLOOR``) decides which prompt lines are ranked."""
    import pandas as pd

    from focus_eval.leaderboard.conventions import collect_results
    from focus_eval.leaderboard.pages.build import with_coverage_floor

    if not paths:
        raise FocusError("load_results needs one or more results folders or files")
    collection = collect_results(paths, prefer)
    if coverage_floor is not None:
        collection = with_coverage_floor(collection, coverage_floor)
    rows = [flatten(e, include_limited) for e in collection.entries if include_limited or not e.limited]
    frame = pd.DataFrame(rows)
    return _typed(frame) if rows else frame


def _unit_entries(entries: Iterable, task: str, method: str | None, model: str | None) -> list:
    return [e for e in entries if e.line.task == task and (method is None or e.line.method == method)
            and (model is None or e.model == model)]


def load_samples(path: Path | str, task: str, method: str | None = None, model: str | None = None,
                 include_limited: bool = False, split: str | None = "test"):
    """The sample lines of one (model, task, method) under ``path`` as a DataFrame, one row per image.
    ``method`` and ``model`` may be left out when ``path`` holds one line of ``task``. ``split``: the test rows
    the results line was computed from (default), ``"val"`` for the validation rows a binary task's sample
    file also holds, None for every row (the ``split`` column tells them apart)."""
    import pandas as pd

    from focus_eval.leaderboard.conventions import collect_results
    from focus_eval.results.layout import unit_stem
    from focus_eval.results.store import read_samples

    entries = [e for e in collect_results([path]).entries if include_limited or not e.limited]
    found = _unit_entries(entries, task, method, model)
    if len(found) != 1:
        which = sorted(f"{e.model} {e.line.method}" for e in found) or "none"
        raise FocusError(f"load_samples: {len(found)} results lines of task {task!r} under {path} "
                         f"({which}); name method= and model=")
    entry = found[0]
    sample_file = entry.sample_dir / f"{unit_stem(task, entry.line.method)}.jsonl"
    if not sample_file.is_file():
        raise FocusError(f"load_samples: no sample file {sample_file}")
    rows = [s.to_dict(prompt=True) for s in read_samples(sample_file) if split is None or s.split == split]
    frame = pd.DataFrame(rows)
    frame.insert(0, "model", entry.model)
    frame.insert(1, "task", task)
    frame.insert(2, "method", entry.line.method)
    return frame

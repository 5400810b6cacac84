"""Reading and writing a model's output folder: sample files, unit meta records and results.jsonl. Pure I/O:
turning samples into a results line is ``focus_eval.scoring``'s work, above this module and the metrics."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Iterable

from focus_eval.errors import FocusError
from focus_eval.files import atomic_write_text, locked
from focus_eval.results.layout import META_SUFFIX, SAMPLES_DIR, OutputLayout  # noqa: F401  (re-exported names)
from focus_eval.results.schema import (ResultLine, SampleLine, UnitMeta, clean_json, dumps, read_jsonl,
                                       validate_group_dict, validate_result_dict, validate_sample_dict,
                                       write_jsonl)


def layout_of(model_dir: Path | OutputLayout) -> OutputLayout:
    return model_dir if isinstance(model_dir, OutputLayout) else OutputLayout(Path(model_dir))


# ----- unit meta records


def write_meta(path: Path, meta: UnitMeta | dict[str, Any]) -> Path:
    """Write one unit's meta record at ``path``, which must be the layout's meta path of its task and method."""
    path = Path(path)
    try:
        record = meta if isinstance(meta, UnitMeta) else UnitMeta.from_dict(meta)
        record.validate()
    except ValueError as exc:
        raise FocusError(f"{path}: {exc}") from None
    expected = OutputLayout(path.parent.parent).meta(record.task, record.method).name
    if path.name != expected:
        raise FocusError(f"{path}: a meta file for {record.stem} must be named {expected}")
    atomic_write_text(path, json.dumps(clean_json(record.to_dict()), allow_nan=False, ensure_ascii=False, indent=1)
                      + "\n")
    return path


def read_meta(path: Path) -> UnitMeta:
    """The meta record at ``path`` (errors name the file)."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise FocusError(f"{path}: cannot read meta file: {exc}") from None
    try:
        return UnitMeta.from_dict(raw)
    except ValueError as exc:
        raise FocusError(f"{path}: meta file: {exc}") from None


# ----- sample files


def write_samples(path: Path, samples: Iterable[SampleLine], prompt: bool) -> Path:
    """Write a unit's sample file at once (sorted by the caller), replacing any earlier copy."""
    write_jsonl(Path(path), [s.to_dict(prompt) for s in samples])
    return Path(path)


def append_samples(model_dir: Path | OutputLayout, task: str, method: str, samples: Iterable[SampleLine],
                   prompt: bool) -> Path:
    """Append sample lines (flushed, so an interrupted unit resumes from its last written line)."""
    path = layout_of(model_dir).samples(task, method)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        for sample in samples:
            fh.write(dumps(sample.to_dict(prompt)) + "\n")
        fh.flush()
    return path


def read_samples(path: Path, *, skip_bad: bool = False, bad: list | None = None) -> list[SampleLine]:
    """Sample lines of one file, each checked against the contract. A bad line (not JSON, torn, or off the
    contract) is an error naming the file and line; with ``skip_bad`` it is left out and listed in ``bad``."""
    from focus_eval.files import read_jsonl_rows

    samples = []
    for line, row, problem in read_jsonl_rows(path):
        if problem is None:
            try:
                validate_sample_dict(row)
                samples.append(SampleLine.from_dict(row))
                continue
            except ValueError as exc:
                problem = str(exc)
        if not skip_bad:
            raise FocusError(f"{path}, line {line}: {problem} (--skip-bad leaves such lines out, counted)")
        if bad is not None:
            bad.append((line, problem))
    return samples


def unit_status(model_dir: Path | OutputLayout, meta: UnitMeta, *, skip_bad: bool = False,
                bad: list | None = None, split: str = "test") -> tuple[list[SampleLine] | None, str | None]:
    """(samples of ``split``, None) for a complete unit, (None, reason) for one that cannot be scored yet. A
    sample file holds the test rows a results line is computed from and may hold validation rows (split
    ``val``) beside them; ``n_expected`` counts the test rows."""
    path = layout_of(model_dir).samples(meta.task, meta.method)
    if not path.is_file():
        return None, f"no sample file {path.name}"
    samples = [s for s in read_samples(path, skip_bad=skip_bad, bad=bad) if s.split == split]
    if meta.n_expected is not None and len(samples) < int(meta.n_expected):
        return None, f"incomplete: {len(samples)} of {meta.n_expected} samples"
    if not samples:
        return None, f"no {split} samples"
    return samples, None


def read_units(model_dir: Path | OutputLayout) -> list[tuple[Path, UnitMeta]]:
    """Every meta record of a model folder, each checked to be named after its own task and method; a sample
    file without a meta record is an error naming it."""
    layout = layout_of(model_dir)
    if not layout.samples_dir.is_dir():
        raise FocusError(f"{layout.root}: no {SAMPLES_DIR}/ folder; expected <output>/<model>/{SAMPLES_DIR}/")
    units, claimed = [], set()
    for path in layout.meta_files():
        meta = read_meta(path)
        if path.name != layout.meta(meta.task, meta.method).name:
            raise FocusError(f"{path}: file name does not match its task {meta.task!r} and method {meta.method!r}")
        claimed.add(layout.samples(meta.task, meta.method).name)
        units.append((path, meta))
    orphans = [p.name for p in layout.sample_files() if p.name not in claimed]
    if orphans:
        raise FocusError(f"{layout.samples_dir}: sample file(s) without a meta file: {', '.join(orphans)}")
    return units


# ----- results.jsonl


def result_key(result: ResultLine | dict[str, Any]) -> tuple[str, str, str]:
    """(task, method, adapter) of a task line; a group line's first part is ``group:<name>``."""
    d = result.to_dict() if isinstance(result, ResultLine) else result
    first = f"group:{d['group']}" if d.get("kind") == "group" else d["task"]
    return (first, d["method"], d.get("adapter") or "")


def read_results(model_dir: Path | OutputLayout, *, skip_bad: bool = False,
                 bad: list | None = None) -> list[dict[str, Any]]:
    """The lines of results.jsonl; an unreadable line is an error naming it, or with ``skip_bad`` listed in
    ``bad`` (the runner rebuilds such lines from the sample files)."""
    path = layout_of(model_dir).results
    if not path.is_file():
        return []
    try:
        return read_jsonl(path, skip_bad=skip_bad, bad=bad)
    except ValueError as exc:
        raise FocusError(f"{exc}; 'focus-eval score {layout_of(model_dir).root}' rebuilds it") from None


def write_results(model_dir: Path | OutputLayout, results: Iterable[ResultLine | dict[str, Any]]) -> Path:
    """Rewrite results.jsonl with ``results`` sorted by (task, method, adapter); every line is validated."""
    rows = [clean_json(r.to_dict() if isinstance(r, ResultLine) else r) for r in results]
    for row in rows:
        (validate_group_dict if row.get("kind") == "group" else validate_result_dict)(row)
    rows.sort(key=result_key)
    path = layout_of(model_dir).results
    write_jsonl(path, rows)
    return path


def upsert_line(model_dir: Path | OutputLayout, result: ResultLine | dict[str, Any]) -> Path:
    """Put one results line into results.jsonl, replacing the line with the same (task, method, adapter), under
    the file's lock (several processes may finish units of one model folder at once). Unreadable lines are
    dropped with a warning: their units are rebuilt from their sample files on the next run or ``score``."""
    layout = layout_of(model_dir)
    key = result_key(result)
    with locked(layout.results):
        bad: list = []
        kept = [r for r in read_results(layout, skip_bad=True, bad=bad) if result_key(r) != key]
        for line, problem in bad:
            print(f"focus-eval: {layout.results}, line {line}: {problem}; dropped (rebuilt from its samples on "
                  f"the next run, or by 'focus-eval score {layout.root}')", file=sys.stderr)
        return write_results(layout, [*kept, result])


def samples_digest(model_dir: Path | OutputLayout, task: str, method: str) -> str | None:
    """sha256 of a unit's sample file as written (None when there is none)."""
    from focus_eval.digests import file_sha256

    path = layout_of(model_dir).samples(task, method)
    return file_sha256(path) if path.is_file() else None


def remove_unit(model_dir: Path | OutputLayout, task: str, method: str) -> None:
    """Delete every file of one unit (samples, meta, parts, its results line), to compute it again."""
    layout = layout_of(model_dir)
    for path in [layout.samples(task, method), layout.meta(task, method), layout.started(task, method),
                 *layout.parts(task, method)]:
        path.unlink(missing_ok=True)
    if layout.results.is_file():
        with locked(layout.results):
            kept = [r for r in read_results(layout, skip_bad=True)
                    if (r.get("task"), r.get("method")) != (task, method) and r.get("kind") != "group"]
            write_results(layout, kept)

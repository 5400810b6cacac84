"""A model's output folder: sample files, their meta files, and results.jsonl, with the one code path
(samples + meta -> results line -> upsert) that both the runner and ``focus-eval score`` use.

    <model_dir>/samples/<task>.<method>.jsonl       one sample line per evaluated image
    <model_dir>/samples/<task>.<method>.meta.json   the results line's descriptive fields, plus age_threshold,
                                                    n_boot, seed, created and optionally n_expected
    <model_dir>/results.jsonl                       one results line per (task, method, adapter), sorted

A meta file with ``n_expected`` marks how many sample lines a finished unit has; a unit with fewer is
incomplete (an interrupted run) and is not scored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from focus_eval.errors import FocusError
from focus_eval.results.schema import (ResultLine, SampleLine, clean_json, dumps, read_jsonl, validate_result_dict,
                                       validate_sample_dict, write_jsonl)

SAMPLES_DIR = "samples"
RESULTS_FILE = "results.jsonl"
META_SUFFIX = ".meta.json"
REQUIRED_META = ("model", "family", "domain", "untrained", "method", "task", "dataset", "target", "proxy",
                 "adapter", "task_version", "task_hash", "preset_hash")


def sample_path(model_dir: Path, task: str, method: str) -> Path:
    return Path(model_dir) / SAMPLES_DIR / f"{task}.{method}.jsonl"


def meta_path(model_dir: Path, task: str, method: str) -> Path:
    return Path(model_dir) / SAMPLES_DIR / f"{task}.{method}{META_SUFFIX}"


def results_path(model_dir: Path) -> Path:
    return Path(model_dir) / RESULTS_FILE


def write_meta(path: Path, meta: dict[str, Any]) -> Path:
    """Write the meta file of one (task, method) at ``path`` (``meta_path(model_dir, task, method)``); it must
    hold every descriptive field of a results line, and its name must match the meta's task and method."""
    path = Path(path)
    missing = [k for k in REQUIRED_META if k not in meta]
    if missing:
        raise FocusError(f"{path}: meta lacks {', '.join(missing)}")
    expected = f"{meta['task']}.{meta['method']}{META_SUFFIX}"
    if path.name != expected:
        raise FocusError(f"{path}: a meta file for {meta['task']}.{meta['method']} must be named {expected}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(clean_json(meta), allow_nan=False, ensure_ascii=False, indent=1) + "\n",
                   encoding="utf-8")
    tmp.replace(path)
    return path


def read_meta(path: Path) -> dict[str, Any]:
    try:
        meta = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise FocusError(f"{path}: cannot read meta file: {exc}") from None
    missing = [k for k in REQUIRED_META if k not in meta] if isinstance(meta, dict) else list(REQUIRED_META)
    if missing:
        raise FocusError(f"{path}: meta file lacks {', '.join(missing)}")
    return meta


def append_samples(model_dir: Path, task: str, method: str, samples: Iterable[SampleLine], prompt: bool) -> Path:
    """Append sample lines (flushed, so an interrupted unit resumes from its last written line)."""
    path = sample_path(model_dir, task, method)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        for sample in samples:
            fh.write(dumps(sample.to_dict(prompt)) + "\n")
        fh.flush()
    return path


def read_samples(path: Path) -> list[SampleLine]:
    """Sample lines of one file, each checked against the contract (errors name the file and line)."""
    try:
        rows = read_jsonl(Path(path))
    except ValueError as exc:
        raise FocusError(str(exc)) from None
    samples = []
    for line, row in enumerate(rows, start=1):
        try:
            validate_sample_dict(row)
            samples.append(SampleLine.from_dict(row))
        except ValueError as exc:
            raise FocusError(f"{path}, line {line}: {exc}") from None
    return samples


def result_key(result: ResultLine | dict[str, Any]) -> tuple[str, str, str]:
    d = result.to_dict() if isinstance(result, ResultLine) else result
    return (d["task"], d["method"], d.get("adapter") or "")


def read_results(model_dir: Path) -> list[dict[str, Any]]:
    path = results_path(model_dir)
    return read_jsonl(path) if path.is_file() else []


def write_results(model_dir: Path, results: Iterable[ResultLine | dict[str, Any]]) -> Path:
    """Rewrite results.jsonl with ``results`` sorted by (task, method, adapter); every line is validated."""
    rows = [clean_json(r.to_dict() if isinstance(r, ResultLine) else r) for r in results]
    for row in rows:
        validate_result_dict(row)
    rows.sort(key=result_key)
    path = results_path(model_dir)
    write_jsonl(path, rows)
    return path


def upsert_line(model_dir: Path, result: ResultLine | dict[str, Any]) -> Path:
    """Put one results line into results.jsonl, replacing the line with the same (task, method, adapter)."""
    key = result_key(result)
    kept = [r for r in read_results(model_dir) if result_key(r) != key]
    return write_results(model_dir, [*kept, result])


def upsert_result(model_dir: Path, samples: Iterable[SampleLine | dict[str, Any]],
                  meta: dict[str, Any]) -> ResultLine:
    """samples + meta -> results line, upserted into <model_dir>/results.jsonl: the one scoring path, used by the
    runner when a unit finishes and by ``focus-eval score``."""
    from focus_eval.metrics.evaluate import evaluate_samples

    try:
        result = evaluate_samples(list(samples), meta)
    except ValueError as exc:
        raise FocusError(f"{meta.get('task')}.{meta.get('method')}: cannot score: {exc}") from None
    upsert_line(model_dir, result)
    return result


def unit_status(model_dir: Path, meta: dict[str, Any]) -> tuple[list[SampleLine] | None, str | None]:
    """(samples, None) for a complete unit, (None, reason) for one that cannot be scored yet."""
    path = sample_path(model_dir, meta["task"], meta["method"])
    if not path.is_file():
        return None, f"no sample file {path.name}"
    samples = read_samples(path)
    expected = meta.get("n_expected")
    if expected is not None and len(samples) < int(expected):
        return None, f"incomplete: {len(samples)} of {expected} samples"
    if not samples:
        return None, "no samples"
    return samples, None


def score_unit(model_dir: Path, task: str, method: str) -> ResultLine:
    """Recompute one (task, method) from its sample and meta files and upsert it into results.jsonl."""
    meta = read_meta(meta_path(model_dir, task, method))
    samples, reason = unit_status(model_dir, meta)
    if samples is None:
        raise FocusError(f"{sample_path(model_dir, task, method)}: cannot score: {reason}")
    return upsert_result(model_dir, samples, meta)


@dataclass
class Rescore:
    """What ``rescore_dir`` did: the results lines written and the units left out, with the reason."""

    results: list[ResultLine] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def rescore_dir(model_dir: Path) -> Rescore:
    """Rebuild <model_dir>/results.jsonl from the samples folder alone: one line per complete unit."""
    from focus_eval.metrics.evaluate import evaluate_samples

    model_dir = Path(model_dir)
    folder = model_dir / SAMPLES_DIR
    if not folder.is_dir():
        raise FocusError(f"{model_dir}: no {SAMPLES_DIR}/ folder; expected <output>/<model>/{SAMPLES_DIR}/")
    report = Rescore()
    claimed = set()
    for path in sorted(folder.glob(f"*{META_SUFFIX}")):
        meta = read_meta(path)
        if path.name != meta_path(model_dir, meta["task"], meta["method"]).name:
            raise FocusError(f"{path}: file name does not match its task {meta['task']!r} and method "
                             f"{meta['method']!r}")
        claimed.add(sample_path(model_dir, meta["task"], meta["method"]).name)
        samples, reason = unit_status(model_dir, meta)
        if samples is None:
            report.skipped.append((f"{meta['task']}.{meta['method']}", reason))
            continue
        try:
            report.results.append(evaluate_samples(samples, meta))
        except ValueError as exc:
            raise FocusError(f"{sample_path(model_dir, meta['task'], meta['method'])}: {exc}") from None
    orphans = [p.name for p in sorted(folder.glob("*.jsonl")) if p.name not in claimed]
    if orphans:
        raise FocusError(f"{folder}: sample file(s) without a meta file: {', '.join(orphans)}")
    write_results(model_dir, report.results)
    return report

"""Results lines as lm-evaluation-harness result files (``focus-eval report export --format lm-eval``).

One configuration (model, method, adapter, run conventions) becomes one folder ``<model>__<method>`` (names made
safe as lm-eval makes them; two configurations whose names map to one folder, also when they differ in case only,
keep apart: the later in name order gets a short digest of its own name, and the command says so) holding
``results_<timestamp>.json`` in lm-eval's layout (``results``, ``groups``, ``group_subtasks``, ``configs``,
``versions``, ``n-shot``, ``higher_is_better``, ``n-samples``, ``config``, ...) and one
``samples_<task>_<timestamp>.jsonl`` per task whose sample file is at hand. A line without answers has no score
(its metrics are null); every line carries its answer count, coverage and flags (low coverage, another task
version, ...) in its config's metadata, and a line of another task version than most lines of the task is keyed
``<task>@v<version>-<hash>``. The paths are worked out first, and nothing is written when one is a file the export
reads. The field mapping is in docs/OUTPUTS.md."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from focus_eval.results.identity import version_text
from focus_eval.results.layout import unit_stem
from focus_eval.results.schema import LOWER_IS_BETTER
from focus_eval.version import __version__

if TYPE_CHECKING:
    from focus_eval.results.collect import Collection, Entry

FILTER = "none"  # lm-eval's filter part of a metric key; focus-eval scores have no filters
Z95 = 1.959963984540054  # a 95% interval's half-width in standard errors


def timestamp(now: datetime | None = None) -> str:
    """lm-eval's file stamp: ISO time with the colons replaced (``2026-01-01T12-00-00.123456``)."""
    return (now or datetime.now()).isoformat().replace(":", "-")


def sanitize(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "__", name).strip("_") or "model"


_PLAIN_TASK = re.compile(r"^[A-Za-z0-9_@+-][A-Za-z0-9_.@+-]*$")


def task_key(entry: "Entry") -> str:
    """The name a line's task goes by in the export: the task, and for a line of another task version than most
    lines of the task, that version (``<task>@v<version>-<hash>``)."""
    line = entry.line
    if entry.version_note is None:
        return line.task
    return f"{line.task}@v{version_text(line.task_version) or '?'}-{str(line.task_hash or '')[:8] or '?'}"


def file_part(name: str) -> str:
    """A task name as part of a file name: as it is when it is a plain name, else made safe."""
    return name if _PLAIN_TASK.match(name) and len(name) <= 150 else sanitize(name)


def folder_names(configs: list[tuple]) -> tuple[dict[tuple, str], list[str]]:
    """A folder per configuration, never two alike (nor alike but for case, which some file systems merge), and a
    note for each configuration whose name mapped close to one before it."""
    names: dict[tuple, str] = {}
    taken: dict[str, tuple] = {}
    notes = []
    for config in sorted(configs):
        joined = "__".join(part for part in config if part)
        name = sanitize(joined)
        if name.casefold() in taken:
            other = taken[name.casefold()]
            name = f"{name}-{hashlib.sha1(joined.encode('utf-8')).hexdigest()[:8]}"
            notes.append(f"{' '.join(p for p in config if p)!r} maps to the same folder name as "
                         f"{' '.join(p for p in other if p)!r}; written as {name}")
        taken[name.casefold()] = config
        names[config] = name
    return names, notes


def stderr(pair: Any) -> float | str:
    """The standard error a 95% interval stands for ((high - low) / 2 / 1.96); lm-eval's "N/A" without one."""
    if isinstance(pair, list) and len(pair) == 2 and all(isinstance(v, (int, float)) for v in pair):
        return (pair[1] - pair[0]) / (2 * Z95)
    return "N/A"


def entry_block(entry: "Entry", alias: str) -> dict[str, Any]:
    """A line's metrics as lm-eval writes them (none for a line without answers)."""
    line = entry.line
    return metric_block({m: entry.metric(m) for m in line.metrics}, {m: entry.metric_ci(m) for m in line.ci}, alias)


def metric_block(metrics: dict[str, Any], ci: dict[str, Any], alias: str) -> dict[str, Any]:
    block: dict[str, Any] = {"alias": alias}
    for name in sorted(metrics):
        block[f"{name},{FILTER}"] = metrics[name]
        block[f"{name}_stderr,{FILTER}"] = stderr(ci.get(name))
    return block


def task_config(entry: "Entry") -> dict[str, Any]:
    line = entry.line
    return {
        "task": task_key(entry), "tag": [line.target], "dataset_path": line.dataset, "test_split": "test",
        "output_type": line.output_type or "binary", "num_fewshot": 0,
        "metric_list": [{"metric": m, "aggregation": line.ci_method, "higher_is_better": m not in LOWER_IS_BETTER}
                        for m in sorted(line.metrics)],
        "metadata": {"version": line.task_version, "method": line.method, "target": line.target,
                     "task_hash": line.task_hash, "preset_hash": line.preset_hash, "ci": line.ci,
                     "ci_method": line.ci_method, "n_boot": line.n_boot, "proxy": line.proxy,
                     "underpowered": entry.underpowered, "fairness": line.fairness,
                     "robustness": line.robustness, "n_answered": entry.answers, "coverage": line.coverage,
                     "flags": entry.flags, "version_note": entry.version_note},
    }


def configurations(collection: "Collection", include_limited: bool) -> dict[tuple, list["Entry"]]:
    found: dict[tuple, list] = {}
    for entry in collection.entries:
        if include_limited or not entry.limited:
            found.setdefault(entry.config, []).append(entry)
    return found


def results_file(collection: "Collection", entries: list["Entry"], stamp: str) -> dict[str, Any]:
    """One configuration's lm-eval results object."""
    first = entries[0]
    entries = sorted(entries, key=task_key)
    groups = [g for g in collection.group_lines if (g.model, g.method, g.adapter or "") == first.config[:3]
              and g.limited == first.limited]
    run = collection.runs.run_of(first)
    return {
        "results": {task_key(e): entry_block(e, task_key(e)) for e in entries},
        "groups": {g.group: metric_block(_numbers(g.line.metrics), g.line.ci, g.group) for g in groups},
        "group_subtasks": {g.group: list(g.tasks) for g in groups},
        "configs": {task_key(e): task_config(e) for e in entries},
        "versions": {task_key(e): e.line.task_version for e in entries},
        "n-shot": {task_key(e): 0 for e in entries},
        "higher_is_better": {task_key(e): {m: m not in LOWER_IS_BETTER for m in sorted(e.line.metrics)}
                             for e in entries},
        "n-samples": {task_key(e): {"original": e.line.n, "effective": e.line.n_valid} for e in entries},
        "config": {"model": first.model, "model_args": f"method={first.line.method}"
                   + (f",adapter={first.line.adapter}" if first.line.adapter else ""),
                   "method": first.line.method, "adapter": first.line.adapter, "family": first.line.family,
                   "conventions": first.convention_text or None, "limit": first.line.extra.get("limit"),
                   "bootstrap_iters": first.line.n_boot, "random_seed": first.line.extra.get("seed"),
                   "batch_size": None, "device": None},
        "git_hash": run.short_commit if run else None,
        "date": stamp, "model_name": first.model, "model_name_sanitized": sanitize(first.model),
        "focus_eval_version": run.version if run and run.version else __version__,
    }


def _numbers(metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metrics.items() if v is None or isinstance(v, (int, float))}


def sample_path(entry: "Entry") -> Path | None:
    """The line's sample file when it is at hand (a task or method name with a path separator has none: it would
    lead elsewhere)."""
    line = entry.line
    if any(sep in name for name in (line.task, line.method) for sep in ("/", "\\")):
        return None
    path = entry.sample_dir / f"{unit_stem(line.task, line.method)}.jsonl"
    return path if path.is_file() else None


def sample_rows(entry: "Entry") -> list[dict[str, Any]] | None:
    """The unit's test sample lines (those its results line was computed from; a binary task's validation rows
    stay out) as lm-eval sample records, or None when its sample file is not at hand."""
    from focus_eval.results.store import read_samples

    path = sample_path(entry)
    if path is None:
        return None
    rows = []
    for i, sample in enumerate(s for s in read_samples(path) if s.split == "test"):
        doc = {k: v for k, v in sample.to_dict(prompt=True).items() if v is not None}
        rows.append({"doc_id": i, "doc": doc, "target": sample.label,
                     "arguments": [[sample.question or entry.line.task]],
                     "resps": [[sample.text if sample.text is not None else sample.score]],
                     "filtered_resps": [sample.score], "filter": FILTER,
                     "metrics": sorted(entry.line.metrics), "pred": sample.pred, "error": sample.error})
    return rows


@dataclass
class Exported:
    """The files an export wrote, and what it says about the names it chose."""

    written: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def export(collection: "Collection", out_dir: Path, include_limited: bool = False,
           stamp: str | None = None) -> Exported:
    """Write every configuration's files under ``out_dir``. Every path is worked out first; a path that is a
    file the export reads stops it before anything is written."""
    from focus_eval.files import atomic_write_text
    from focus_eval.results.collect import refuse_overwrite

    stamp = stamp or timestamp()
    found = configurations(collection, include_limited)
    names, notes = folder_names(list(found))
    planned: list[tuple[Path, Any]] = []  # (path, a function that makes its text): texts are made one at a time
    for config, entries in sorted(found.items()):
        folder = out_dir / names[config]
        planned.append((folder / f"results_{stamp}.json", lambda e=entries: json.dumps(
            results_file(collection, e, stamp), indent=2, allow_nan=False, default=str) + "\n"))
        for entry in entries:
            if sample_path(entry) is not None:
                planned.append((folder / f"samples_{file_part(task_key(entry))}_{stamp}.jsonl",
                                lambda e=entry: "".join(json.dumps(r, allow_nan=False, default=str) + "\n"
                                                        for r in sample_rows(e) or [])))
    refuse_overwrite(collection, [("-o", path) for path, _ in planned])
    return Exported([atomic_write_text(path, text()) for path, text in planned], notes)

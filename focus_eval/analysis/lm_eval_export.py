"""Results lines as lm-evaluation-harness result files (``focus-eval report export --format lm-eval``).

One configuration (model, method, adapter, run conventions) becomes one folder ``<model>__<method>`` (names made
safe as lm-eval makes them) holding ``results_<timestamp>.json`` in lm-eval's layout (``results``, ``groups``,
``group_subtasks``, ``configs``, ``versions``, ``n-shot``, ``higher_is_better``, ``n-samples``, ``config``, ...)
and one ``samples_<task>_<timestamp>.jsonl`` per task whose sample file is at hand. The field mapping is in
docs/OUTPUTS.md."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


def stderr(pair: Any) -> float | str:
    """The standard error a 95% interval stands for ((high - low) / 2 / 1.96); lm-eval's "N/A" without one."""
    if isinstance(pair, list) and len(pair) == 2 and all(isinstance(v, (int, float)) for v in pair):
        return (pair[1] - pair[0]) / (2 * Z95)
    return "N/A"


def metric_block(metrics: dict[str, Any], ci: dict[str, Any], alias: str) -> dict[str, Any]:
    block: dict[str, Any] = {"alias": alias}
    for name in sorted(metrics):
        block[f"{name},{FILTER}"] = metrics[name]
        block[f"{name}_stderr,{FILTER}"] = stderr(ci.get(name))
    return block


def task_config(entry: "Entry") -> dict[str, Any]:
    line = entry.line
    return {
        "task": line.task, "tag": [line.target], "dataset_path": line.dataset, "test_split": "test",
        "output_type": line.output_type or "binary", "num_fewshot": 0,
        "metric_list": [{"metric": m, "aggregation": line.ci_method, "higher_is_better": m not in LOWER_IS_BETTER}
                        for m in sorted(line.metrics)],
        "metadata": {"version": line.task_version, "method": line.method, "target": line.target,
                     "task_hash": line.task_hash, "preset_hash": line.preset_hash, "ci": line.ci,
                     "ci_method": line.ci_method, "n_boot": line.n_boot, "proxy": line.proxy,
                     "underpowered": entry.underpowered, "fairness": line.fairness,
                     "robustness": line.robustness},
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
    entries = sorted(entries, key=lambda e: e.line.task)
    groups = [g for g in collection.group_lines if (g.model, g.method, g.adapter or "") == first.config[:3]
              and g.limited == first.limited]
    run = collection.runs.run_of(first)
    return {
        "results": {e.line.task: metric_block(e.line.metrics, e.line.ci, e.line.task) for e in entries},
        "groups": {g.group: metric_block(_numbers(g.line.metrics), g.line.ci, g.group) for g in groups},
        "group_subtasks": {g.group: list(g.tasks) for g in groups},
        "configs": {e.line.task: task_config(e) for e in entries},
        "versions": {e.line.task: e.line.task_version for e in entries},
        "n-shot": {e.line.task: 0 for e in entries},
        "higher_is_better": {e.line.task: {m: m not in LOWER_IS_BETTER for m in sorted(e.line.metrics)}
                             for e in entries},
        "n-samples": {e.line.task: {"original": e.line.n, "effective": e.line.n_valid} for e in entries},
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


def sample_rows(entry: "Entry") -> list[dict[str, Any]] | None:
    """The unit's test sample lines (those its results line was computed from; a binary task's validation rows
    stay out) as lm-eval sample records, or None when its sample file is not at hand."""
    from focus_eval.results.store import read_samples

    path = entry.sample_dir / f"{unit_stem(entry.line.task, entry.line.method)}.jsonl"
    if not path.is_file():
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


def export(collection: "Collection", out_dir: Path, include_limited: bool = False,
           stamp: str | None = None) -> list[Path]:
    """Write every configuration's files under ``out_dir``; return the paths written."""
    from focus_eval.files import atomic_write_text

    stamp = stamp or timestamp()
    written = []
    for config, entries in sorted(configurations(collection, include_limited).items()):
        folder = out_dir / sanitize("__".join(part for part in (config[0], config[1], config[2], config[3]) if part))
        data = results_file(collection, entries, stamp)
        written.append(atomic_write_text(folder / f"results_{stamp}.json",
                                         json.dumps(data, indent=2, allow_nan=False, default=str) + "\n"))
        for entry in entries:
            rows = sample_rows(entry)
            if rows is not None:
                text = "".join(json.dumps(r, allow_nan=False, default=str) + "\n" for r in rows)
                written.append(atomic_write_text(folder / f"samples_{entry.line.task}_{stamp}.jsonl", text))
    return written

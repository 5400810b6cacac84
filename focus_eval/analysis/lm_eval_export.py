"""Results lines as lm-evaluation-harness result files (``focus-eval report export --format lm-eval``).

One configuration (model, method, adapter, run conventions) becomes one folder ``<model>__<method>`` (names made
safe as lm-eval makes them) holding ``results_<timestamp>.json`` in lm-eval's layout (``results`` and ``groups``
blocks, ``group_subtasks``, ``configs``, ``versions``, ``n-shot``, ``higher_is_better``, ``n-samples``,
``config``, ``task_hashes``, ``date`` as a UNIX time, ...) and one ``samples_<task>_<timestamp>.jsonl`` per task
whose sample file is at hand, each record as lm-eval's evaluator makes it (``sample_records``) and written as its
``EvaluationTracker`` writes it (``file_record``). The field mapping is in docs/OUTPUTS.md.

lm-eval scores a task as the aggregation of per-sample metric values. Of focus-eval's metrics, those that are a
mean over images (``PER_IMAGE``: accuracy and Brier) get a value on every sample record (NaN where focus-eval's
metric leaves the image out, aggregated by lm-eval's ``nanmean``), computed by the metric functions themselves
on one image at a time; the corpus metrics (AUROC, ECE, F1, ...) appear in the results blocks only."""

from __future__ import annotations

import hashlib
import json
import math
import re
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from focus_eval.results.layout import unit_stem
from focus_eval.results.schema import LOWER_IS_BETTER
from focus_eval.version import __version__

if TYPE_CHECKING:
    from focus_eval.results.collect import Collection, Entry

FILTER = "none"  # lm-eval's filter part of a metric key; focus-eval scores have no filters
Z95 = 1.959963984540054  # a 95% interval's half-width in standard errors
# lm-eval's record layout of a sample: one request per image with a text response (its "generate_until")
OUTPUT_TYPE = "generate_until"
PER_IMAGE = ("accuracy", "brier")  # metrics that are a mean over images: a value on every sample record
AGGREGATION = "nanmean"  # lm-eval's aggregation of those values; NaN marks an image the metric leaves out
CHUNK = 256  # images per weight matrix when computing per-image values


def timestamp(now: datetime | None = None) -> str:
    """lm-eval's file stamp: ISO time with the colons replaced (``2026-01-01T12-00-00.123456``)."""
    return (now or datetime.now()).isoformat().replace(":", "-")


def sanitize(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "__", name).strip("_") or "model"


def hash_string(text: str) -> str:
    """lm-eval's sample hashes: sha256 of the UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stderr(pair: Any) -> float | None:
    """The standard error a 95% interval stands for ((high - low) / 2 / 1.96); None without one."""
    if isinstance(pair, list) and len(pair) == 2 and all(_number(v) for v in pair):
        return (pair[1] - pair[0]) / (2 * Z95)
    return None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def metric_block(name: str, metrics: dict[str, Any], ci: dict[str, Any], sample_len: int) -> dict[str, Any]:
    """One task's or group's block: lm-eval holds numbers only, so a metric without a value is left out, and so
    is the standard error of a metric without an interval."""
    block: dict[str, Any] = {"name": name, "alias": name, "sample_len": sample_len}
    for metric in sorted(metrics):
        if _number(metrics[metric]):
            block[f"{metric},{FILTER}"] = metrics[metric]
            error = stderr(ci.get(metric))
            if error is not None:
                block[f"{metric}_stderr,{FILTER}"] = error
    return block


def _version(value: Any) -> str | float | None:
    """A version as lm-eval's ``versions`` holds it (text or a number, stored as a float)."""
    return float(value) if _number(value) else (None if value is None else str(value))


def task_config(entry: "Entry") -> dict[str, Any]:
    """The task's lm-eval config: the per-image metrics in ``metric_list``; what lm-eval has no key for (focus-eval's
    output type, the interval and its method, the hashes) in ``metadata``."""
    line = entry.line
    return {
        "task": line.task, "tag": [line.target], "dataset_path": line.dataset, "test_split": "test",
        "output_type": OUTPUT_TYPE, "num_fewshot": 0,
        "metric_list": [{"metric": m, "aggregation": AGGREGATION, "higher_is_better": m not in LOWER_IS_BETTER}
                        for m in PER_IMAGE if m in line.metrics],
        "metadata": {"version": line.task_version, "method": line.method, "target": line.target,
                     "output_type": line.output_type or "binary", "task_hash": line.task_hash,
                     "preset_hash": line.preset_hash, "ci": line.ci, "ci_method": line.ci_method,
                     "n_boot": line.n_boot, "proxy": line.proxy, "underpowered": entry.underpowered,
                     "fairness": line.fairness, "robustness": line.robustness},
    }


def configurations(collection: "Collection", include_limited: bool) -> dict[tuple, list["Entry"]]:
    found: dict[tuple, list] = {}
    for entry in collection.entries:
        if include_limited or not entry.limited:
            found.setdefault(entry.config, []).append(entry)
    return found


def _groups(collection: "Collection", first: "Entry") -> list:
    return [g for g in collection.group_lines if (g.model, g.method, g.adapter or "") == first.config[:3]
            and g.limited == first.limited]


def results_file(collection: "Collection", entries: list["Entry"], now: datetime,
                 samples: dict[str, list[dict]] | None = None) -> dict[str, Any]:
    """One configuration's lm-eval results object; ``samples`` (task -> records) gives ``task_hashes``."""
    first = entries[0]
    entries = sorted(entries, key=lambda e: e.line.task)
    tasks = {e.line.task: e for e in entries}
    groups = _groups(collection, first)
    group_len = {g.group: sum(tasks[t].line.n for t in g.tasks if t in tasks) for g in groups}
    group_blocks = {g.group: metric_block(g.group, _numbers(g.line.metrics), g.line.ci, group_len[g.group])
                    for g in groups}
    hib = {t: {m: m not in LOWER_IS_BETTER for m in sorted(e.line.metrics)} for t, e in tasks.items()}
    hib.update({g.group: {m: m not in LOWER_IS_BETTER for m in sorted(_numbers(g.line.metrics))} for g in groups})
    run = collection.runs.run_of(first)
    data = {
        "results": {**group_blocks, **{t: metric_block(t, e.line.metrics, e.line.ci, e.line.n)
                                      for t, e in tasks.items()}},
        "groups": group_blocks,
        "group_subtasks": {g.group: list(g.tasks) for g in groups},
        "configs": {t: task_config(e) for t, e in tasks.items()},
        "versions": {**{g.group: "N/A" for g in groups}, **{t: _version(e.line.task_version) for t, e in tasks.items()}},
        "n-shot": {name: 0 for name in [*group_blocks, *tasks]},
        "higher_is_better": hib,
        "n-samples": {t: {"original": e.line.n, "effective": e.line.n_valid} for t, e in tasks.items()},
        "config": _run_config(first),
        "date": now.timestamp(), "model_name": first.model, "model_name_sanitized": sanitize(first.model),
        "focus_eval_version": run.version if run and run.version else __version__,
    }
    if run and run.short_commit:
        data["git_hash"] = run.short_commit
    if samples:
        data["task_hashes"] = {task: hash_string("".join(r["doc_hash"] + r["prompt_hash"] + r["target_hash"]
                                                         for r in records))
                               for task, records in sorted(samples.items())}
    return data


def _run_config(first: "Entry") -> dict[str, Any]:
    line = first.line
    config = {"model": first.model, "model_args": f"method={line.method}"
              + (f",adapter={line.adapter}" if line.adapter else ""),
              "method": line.method, "adapter": line.adapter, "family": line.family,
              "conventions": first.convention_text or None, "limit": line.extra.get("limit"),
              "bootstrap_iters": line.n_boot, "batch_size": None, "device": None}
    if isinstance(line.extra.get("seed"), int):
        config["random_seed"] = line.extra["seed"]
    return config


def _numbers(metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metrics.items() if v is None or isinstance(v, (int, float))}


def per_image_values(entry: "Entry", samples: list) -> dict[str, list[float]]:
    """Each per-image metric of the line on each image alone, by focus-eval's own metric function with one image
    weighted (NaN where the metric leaves that image out): their NaN-mean is the line's value."""
    from focus_eval.metrics.arrays import SampleArrays, metric_batch
    from focus_eval.metrics.classes import ClassArrays, class_metric_batch

    line, n = entry.line, len(samples)
    if line.output_type is None:
        arrays = SampleArrays.from_samples(samples)
        batch = metric_batch
    else:
        extra = line.extra
        arrays = ClassArrays.from_samples(samples, len(extra["classes"]), bool(extra.get("multilabel")),
                                          bool(extra.get("ordinal")))
        batch = class_metric_batch
    values: dict[str, list[float]] = {}
    for name in (m for m in PER_IMAGE if m in line.metrics):
        out = []
        for start in range(0, n, CHUNK):
            rows = np.arange(start, min(n, start + CHUNK))
            weights = np.zeros((len(rows), n))
            weights[np.arange(len(rows)), rows] = 1.0
            out += [float(v) for v in batch(name, arrays, weights)]
        values[name] = out
    return values


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def sample_records(entry: "Entry") -> list[dict[str, Any]] | None:
    """The unit's test sample lines (those its results line was computed from; a binary task's validation rows
    stay out) as lm-eval's evaluator makes its sample records (``results["samples"][task]``: ``arguments`` a list
    of request tuples), or None when its sample file is not at hand."""
    from focus_eval.results.store import read_samples

    path = entry.sample_dir / f"{unit_stem(entry.line.task, entry.line.method)}.jsonl"
    if not path.is_file():
        return None
    samples = [s for s in read_samples(path) if s.split == "test"]
    values = per_image_values(entry, samples)
    records = []
    for i, sample in enumerate(samples):
        doc = {k: v for k, v in sample.to_dict(prompt=True).items() if v is not None}
        context = sample.question or entry.line.task
        answer = sample.text if sample.text is not None else (sample.score if sample.probs is None else sample.probs)
        scored = sample.score if entry.line.output_type is None else sample.pred
        record = {"doc_id": i, "doc": doc, "target": sample.label, "arguments": [(context, {})],
                  "resps": [[_json_text(answer)]], "filtered_resps": [_json_text(scored)], "filter": FILTER,
                  "metrics": list(values),
                  "doc_hash": hash_string(json.dumps(doc, indent=2, default=str, ensure_ascii=False)),
                  "prompt_hash": hash_string(context), "target_hash": hash_string(str(sample.label))}
        records.append(record | {name: column[i] for name, column in values.items()})
    return records


def file_record(record: dict[str, Any]) -> dict[str, Any]:
    """A sample record as lm-eval's ``EvaluationTracker.save_results_samples`` writes it: ``arguments`` as
    ``{"gen_args_<i>": {"arg_<j>": ...}}``, responses and ``target`` as text."""
    arguments = {f"gen_args_{i}": {f"arg_{j}": part for j, part in enumerate(request)}
                 for i, request in enumerate(record["arguments"])}
    return record | {"resps": _texts(record["resps"]), "filtered_resps": _texts(record["filtered_resps"]),
                     "arguments": arguments, "target": str(record["target"])}


def _texts(value: Any) -> Any:
    if isinstance(value, list):
        return [_texts(v) for v in value]
    return tuple(_texts(v) for v in value) if isinstance(value, tuple) else str(value)


def dumps_record(record: dict[str, Any]) -> str:
    """One line of a samples file, as lm-eval dumps it (NaN as JSON's ``NaN``, text unescaped)."""
    return json.dumps(file_record(record), default=str, ensure_ascii=False) + "\n"


def export(collection: "Collection", out_dir: Path, include_limited: bool = False,
           now: datetime | None = None) -> list[Path]:
    """Write every configuration's files under ``out_dir``; return the paths written."""
    from focus_eval.files import atomic_write_text

    now = now or datetime.now()
    stamp = timestamp(now)
    written = []
    for config, entries in sorted(configurations(collection, include_limited).items()):
        folder = out_dir / sanitize("__".join(part for part in (config[0], config[1], config[2], config[3]) if part))
        samples = {e.line.task: records for e in entries if (records := sample_records(e)) is not None}
        data = results_file(collection, entries, now, samples)
        written.append(atomic_write_text(folder / f"results_{stamp}.json",
                                         json.dumps(data, indent=2, allow_nan=False, default=str,
                                                    ensure_ascii=False) + "\n"))
        for task, records in sorted(samples.items()):
            text = "".join(dumps_record(r) for r in records)
            written.append(atomic_write_text(folder / f"samples_{task}_{stamp}.jsonl", text))
    return written

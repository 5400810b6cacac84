"""Results lines as lm-evaluation-harness result files (``focus-eval report export --format lm-eval``).

One configuration (model, method, adapter, run conventions) becomes one folder ``<model>__<method>`` (names made
safe as lm-eval makes them; two configurations whose names map to one folder, also when they differ in case only,
keep apart: the later in name order gets a short digest of its own name, and the command says so) holding ``results_<timestamp>.json`` in lm-eval's layout (``results`` and ``groups``
blocks, ``group_subtasks``, ``configs``, ``versions``, ``n-shot``, ``higher_is_better``, ``n-samples``,
``config``, ``task_hashes``, ``date`` as a UNIX time, ...) and one ``samples_<task>_<timestamp>.jsonl`` per task
whose sample file is at hand, each record as lm-eval's evaluator makes it (``sample_records``) and written as its
``EvaluationTracker`` writes it (``file_record``). A line without answers has no score (its metrics are left
out); every line carries its answer count, coverage and flags (low coverage, another task version, ...) in its
config's metadata, and a line of another task version than most lines of the task is keyed
``<task>@v<version>-<hash>``. The paths are worked out first, and nothing is written when one is a file the export
reads. The field mapping is in docs/OUTPUTS.md.

lm-eval scores a task as the aggregation of per-sample metric values. Of focus-eval's metrics, those that are a
mean over images (``PER_IMAGE``: accuracy and Brier) get a value on every sample record (NaN where focus-eval's
metric leaves the image out, aggregated by lm-eval's ``nanmean``), computed by the metric functions themselves
on one image at a time; the corpus metrics (AUROC, ECE, F1, ...) appear in the results blocks only."""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from focus_eval.results.identity import version_text
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


def entry_block(entry: "Entry", key: str) -> dict[str, Any]:
    """A line's block under ``key`` (no metric for a line without answers)."""
    line = entry.line
    return metric_block(key, {m: entry.metric(m) for m in line.metrics}, {m: entry.metric_ci(m) for m in line.ci},
                        line.n)


def _version(value: Any) -> str | float | None:
    """A version as lm-eval's ``versions`` holds it (text or a number, stored as a float)."""
    return float(value) if _number(value) else (None if value is None else str(value))


def task_config(entry: "Entry") -> dict[str, Any]:
    """The task's lm-eval config: the per-image metrics in ``metric_list``; what lm-eval has no key for (focus-eval's
    output type, the interval and its method, the hashes) in ``metadata``."""
    line = entry.line
    return {
        "task": task_key(entry), "tag": [line.target], "dataset_path": line.dataset, "test_split": "test",
        "output_type": OUTPUT_TYPE, "num_fewshot": 0,
        "metric_list": [{"metric": m, "aggregation": AGGREGATION, "higher_is_better": m not in LOWER_IS_BETTER}
                        for m in PER_IMAGE if m in line.metrics],
        "metadata": {"version": line.task_version, "method": line.method, "target": line.target,
                     "output_type": line.output_type or "binary", "task_hash": line.task_hash,
                     "preset_hash": line.preset_hash, "ci": line.ci, "ci_method": line.ci_method,
                     "n_boot": line.n_boot, "proxy": line.proxy, "underpowered": entry.underpowered,
                     "fairness": line.fairness, "robustness": line.robustness, "n_answered": entry.answers,
                     "coverage": line.coverage, "flags": entry.flags, "version_note": entry.version_note,
                     "submitter": entry.submitter, "verification": entry.verification},
    }


def configurations(collection: "Collection", include_limited: bool) -> dict[tuple, list["Entry"]]:
    found: dict[tuple, list] = {}
    for entry in collection.entries:
        if include_limited or not entry.limited:
            found.setdefault(entry.config, []).append(entry)
    return found


def _groups(collection: "Collection", first: "Entry") -> list:
    return [g for g in collection.group_lines if (g.model, g.method, g.adapter or "") == first.config[:3]
            and (g.submitter or "") == (first.submitter or "") and g.limited == first.limited]


def results_file(collection: "Collection", entries: list["Entry"], now: datetime,
                 samples: dict[str, list[dict]] | None = None) -> dict[str, Any]:
    """One configuration's lm-eval results object; ``samples`` (task key -> records) gives ``task_hashes``."""
    first = entries[0]
    tasks = {task_key(e): e for e in sorted(entries, key=task_key)}
    groups = _groups(collection, first)
    group_len = {g.group: sum(tasks[t].line.n for t in g.tasks if t in tasks) for g in groups}
    group_blocks = {g.group: metric_block(g.group, _numbers(g.line.metrics), g.line.ci, group_len[g.group])
                    for g in groups}
    hib = {t: {m: m not in LOWER_IS_BETTER for m in sorted(e.line.metrics)} for t, e in tasks.items()}
    hib.update({g.group: {m: m not in LOWER_IS_BETTER for m in sorted(_numbers(g.line.metrics))} for g in groups})
    run = collection.runs.run_of(first)
    data = {
        "results": {**group_blocks, **{t: entry_block(e, t) for t, e in tasks.items()}},
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


def sample_path(entry: "Entry") -> Path | None:
    """The line's sample file when it is at hand (a task or method name with a path separator has none: it would
    lead elsewhere)."""
    line = entry.line
    if any(sep in name for name in (line.task, line.method) for sep in ("/", "\\")):
        return None
    path = entry.sample_dir / f"{unit_stem(line.task, line.method)}.jsonl"
    return path if path.is_file() else None


def sample_records(entry: "Entry") -> list[dict[str, Any]] | None:
    """The unit's test sample lines (those its results line was computed from; a binary task's validation rows
    stay out) as lm-eval's evaluator makes its sample records (``results["samples"][task]``: ``arguments`` a list
    of request tuples), or None when its sample file is not at hand."""
    from focus_eval.results.store import read_samples

    path = sample_path(entry)
    if path is None:
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


@dataclass
class Exported:
    """The files an export wrote, and what it says about the names it chose."""

    written: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def export(collection: "Collection", out_dir: Path, include_limited: bool = False,
           now: datetime | None = None) -> Exported:
    """Write every configuration's files under ``out_dir``. Every path is worked out first; a path that is a
    file the export reads stops it before anything is written."""
    from focus_eval.files import atomic_write_text
    from focus_eval.results.collect import refuse_overwrite

    now = now or datetime.now()
    stamp = timestamp(now)
    found = configurations(collection, include_limited)
    names, notes = folder_names(list(found))
    plan = {config: (out_dir / names[config] / f"results_{stamp}.json",
                     {task_key(e): out_dir / names[config] / f"samples_{file_part(task_key(e))}_{stamp}.jsonl"
                      for e in entries if sample_path(e) is not None})
            for config, entries in found.items()}
    refuse_overwrite(collection, [("-o", path) for results, samples in plan.values()
                                  for path in (results, *samples.values())])
    written = []
    for config, entries in sorted(found.items()):
        results, sample_files = plan[config]
        samples = {task_key(e): records for e in entries
                   if task_key(e) in sample_files and (records := sample_records(e)) is not None}
        data = results_file(collection, entries, now, samples)
        written.append(atomic_write_text(results, json.dumps(data, indent=2, allow_nan=False, default=str,
                                                             ensure_ascii=False) + "\n"))
        for key, records in sorted(samples.items()):
            written.append(atomic_write_text(sample_files[key], "".join(dumps_record(r) for r in records)))
    return Exported(written, notes)

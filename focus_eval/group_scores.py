"""A group's results line (``kind: "group"``): the macro mean of its member tasks' metrics, with a percentile
interval from the member tasks' own patient resamples (replicate b of the group = the mean of the members'
replicate b), written into results.jsonl beside the task lines."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from focus_eval.metrics.aggregate import aggregate_group
from focus_eval.metrics.arrays import SampleArrays, metric_batch
from focus_eval.metrics.bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, bootstrap_weights, mean_of_tasks
from focus_eval.metrics.classes import class_spec, unit_replicates
from focus_eval.results import store
from focus_eval.results.layout import OutputLayout
from focus_eval.results.schema import CLASS_METRICS, METRICS, GroupLine

GROUP_KIND = GroupLine.kind
CI_METHOD = "member_task_bootstrap_mean"


def is_group_line(row: Any) -> bool:
    return isinstance(row, dict) and row.get("kind") == GROUP_KIND


def member_replicates(layout: OutputLayout, task: str, method: str) -> tuple[dict[str, np.ndarray], dict]:
    """Per metric, the point estimate and bootstrap replicates (1 + B values) of one member task."""
    meta = store.read_meta(layout.meta(task, method))
    samples, reason = store.unit_status(layout, meta)
    if samples is None:
        raise ValueError(f"{task}.{method}: {reason}")
    n_boot = DEFAULT_N_BOOT if meta.n_boot is None else meta.n_boot

    def weights_of(patients):
        return bootstrap_weights(patients, n_boot, DEFAULT_SEED if meta.seed is None else meta.seed)

    spec = class_spec(meta)
    if spec is not None:  # a multi-class member: its own metrics (metrics.classes)
        return unit_replicates(samples, spec, weights_of), meta.to_dict()
    arrays = SampleArrays.from_samples(samples)
    weights = weights_of(arrays.patient_id)
    return {name: metric_batch(name, arrays, weights) for name in METRICS}, meta.to_dict()


def group_line(model_dir: Path | OutputLayout, group: str, members: list[str], method: str,
               include_proxy: bool = False) -> dict[str, Any] | None:
    """The group line of ``method`` over ``members`` from the task lines and samples in ``model_dir`` (None when
    no member task has a usable results line)."""
    layout = store.layout_of(model_dir)
    lines = [r for r in store.read_results(layout, skip_bad=True)
             if not is_group_line(r) and r.get("method") == method and r.get("task") in members]
    names = CLASS_METRICS if any(r.get("output_type") for r in lines) else METRICS
    summary = aggregate_group(lines, list(members), include_proxy=include_proxy, metrics=names)
    if not summary["rows"] or not summary["rows"][0]["tasks"]:
        return None
    row = summary["rows"][0]
    replicates, meta = {}, {}
    for task in row["tasks"]:
        replicates[task], meta = member_replicates(layout, task, method)
    if len({tuple(values) for values in replicates.values()}) > 1:
        raise ValueError(f"group {group} mixes binary and multi-class tasks; their metrics cannot be averaged")
    metrics, ci = {}, {}
    for name in names:
        stacked = [replicates[t][name] for t in row["tasks"] if np.isfinite(replicates[t][name][0])]
        metrics[name], ci[name] = mean_of_tasks(stacked)
    first = lines[0]
    return GroupLine(
        group=group, model=first["model"], family=first["family"], domain=first["domain"],
        untrained=first["untrained"], method=method, adapter=first.get("adapter"), members=list(members),
        tasks=row["tasks"], excluded=row["excluded"], missing=row["missing"], aggregation="macro_mean",
        include_proxy=include_proxy, metrics=metrics, ci=ci, coverage=row["coverage"], ci_method=CI_METHOD,
        n_boot=int(meta.get("n_boot") or DEFAULT_N_BOOT), limited=any(bool(r.get("limited")) for r in lines),
        created=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")).to_dict()


def rebuild_group_lines(model_dir: Path | OutputLayout, previous: list[dict]) -> list[dict]:
    """Recompute every earlier group line from the folder as it is now (``focus-eval score``)."""
    out = []
    for row in previous:
        line = group_line(model_dir, row["group"], row["members"], row["method"], bool(row.get("include_proxy")))
        if line is not None:
            out.append(line)
    return out

"""Results folders as a run writes them, without a model: seeded scores for the images of binary synthetic tasks,
written through the runner's sample-line builder and ``scoring.score_samples``, with unit meta records and a run
manifest. The verification and bundle tests tamper with copies of them."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from focus_eval.data.registry import load_dataset
from focus_eval.results import store
from focus_eval.results.layout import OutputLayout
from focus_eval.results.schema import DESCRIPTIVE, UnitMeta
from focus_eval.runner.records import age_threshold, task_records, task_sample_line
from focus_eval.scoring import score_samples
from focus_eval.task.index import TaskIndex
from focus_eval.version import __version__

TASKS = ("dr_synth_desktop", "glaucoma_synth_desktop")
METHOD = "linear_probe"
PRESET_HASH = "0123456789abcdef"


def honest_results(out: Path, data_root: Path, tasks=TASKS, model: str = "fake-model", n_boot: int = 50,
                   seed: int = 0, index: TaskIndex | None = None, limit: int | None = None) -> Path:
    """Write ``<out>/<model>/`` (or its ``limit-N`` folder) for ``tasks`` of ``index`` (default: the shipped
    tasks); returns the model folder."""
    index = index if index is not None else TaskIndex()
    layout = OutputLayout.for_model(out, model, limit=limit)
    rng = np.random.default_rng(seed)
    started = datetime.now(timezone.utc)
    for name in tasks:
        task = index.get(name)
        load = load_dataset(task.dataset, data_root, cohort=task.cohort)
        lines = []
        for split in ("test", "val"):
            for record in task_records(load, task, split, limit):
                score = float(np.clip(0.35 * task.label(record) + 0.65 * rng.random(), 0, 1))
                line = task_sample_line(task, record, score, int(score >= 0.5), split=split)
                line.limited = True if limit is not None else None
                lines.append(line)
        layout.samples_dir.mkdir(parents=True, exist_ok=True)
        store.write_samples(layout.samples(name, METHOD), lines, prompt=False)
        meta = UnitMeta.from_dict({
            **{k: None for k in DESCRIPTIVE}, "model": model, "family": "vm", "domain": "general",
            "untrained": False, "method": METHOD, "task": name, "dataset": task.dataset, "target": task.target,
            "proxy": bool(task.proxy), "task_version": task.version, "task_hash": task.hash,
            "preset_hash": PRESET_HASH, "threshold_rule": "score >= 0.5", "n_boot": n_boot, "seed": seed,
            "age_threshold": age_threshold(task_records(load, task, "test")), "limit": limit,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "split_file_sha256": None,
            **task.variant})
        store.write_meta(layout.meta(name, METHOD), meta)
        score_samples(layout, [s for s in lines if s.split == "test"], meta)
    write_manifest(layout, started, [f"{t}.{METHOD}" for t in tasks], model)
    return layout.root


def write_manifest(layout: OutputLayout, started: datetime, finished: list[str], model: str,
                   version: str = __version__) -> Path:
    """A run manifest recording the focus-eval version and the units the run finished."""
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    record = {"argv": ["focus-eval"], "started": started.isoformat(timespec="seconds"),
              "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "versions": {"focus-eval": version}, "git_commit": None, "preset": {"name": model},
              "preset_hash": PRESET_HASH, "units": {"finished": finished, "skipped_as_done": [], "failed": {}}}
    path = layout.manifest(stamp)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def rewrite_jsonl(path: Path, change) -> None:
    """Apply ``change(rows)`` to the rows of a JSON Lines file and write them back."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    change(rows)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))

"""Results folders as a run writes them, without a model: seeded scores for the images of binary synthetic tasks,
written through the runner's sample-line builder and ``scoring.score_samples``, with unit meta records and a run
manifest. The verification and bundle tests tamper with copies of them. ``group_submissions`` lays out what a
leaderboard of several groups reads: a results folder of one's own and two groups' bundles, one of them tampered."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from focus_eval.data.registry import load_dataset
from focus_eval.group_scores import group_line
from focus_eval.results import store
from focus_eval.results.bundle import write_bundle
from focus_eval.results.collect import discover
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
                   seed: int = 0, index: TaskIndex | None = None, limit: int | None = None,
                   separation: float = 0.35) -> Path:
    """Write ``<out>/<model>/`` (or its ``limit-N`` folder) for ``tasks`` of ``index`` (default: the shipped
    tasks); returns the model folder. Each score is ``separation`` times the label plus the rest of 1 times a
    seeded random number (1: a perfect model; 0: chance)."""
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
                score = float(np.clip(separation * task.label(record) + (1 - separation) * rng.random(), 0, 1))
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


# what group_submissions writes: the models of each source, with the separation of their scores
OWN, CLINIC_A, CLINIC_B = "own", "Clinic A", "Clinic B"
MODELS = {OWN: {"fake-model": 0.35, "other-model": 0.0}, CLINIC_A: {"fake-model": 0.3, "other-model": 1.0},
          CLINIC_B: {"fake-model": 0.35}}
GROUP = "synth_desktop"  # the task group of TASKS
DATA = {"n": 200, "seed": 3}  # synthetic data on which both TASKS have ten test positives or more (ranked, grouped)


@dataclass(frozen=True)
class Submissions:
    """The inputs of one leaderboard: a results folder of one's own and the bundles of two groups."""

    own: Path
    clinic_a: Path
    clinic_b: Path

    @property
    def paths(self) -> list[Path]:
        return [self.own, self.clinic_a, self.clinic_b]


def group_submissions(root: Path, data_root: Path, index: TaskIndex) -> Submissions:
    """Under ``root``: ``own`` (fake-model and other-model), Clinic A's bundle of the same two configurations
    (fake-model's scores close to the own run's, other-model's perfect where the own run's are chance), and Clinic
    B's bundle of fake-model whose task lines were changed before bundling to claim an AUROC of 1 that their
    samples do not give. Every model folder has its group line over TASKS; the run seed is the default for all,
    so the same model is the same configuration from each source."""
    folders = {}
    for source, models in MODELS.items():
        folders[source] = root / source.replace(" ", "-").lower()
        for model, separation in models.items():
            folder = honest_results(folders[source], data_root, index=index, model=model, separation=separation)
            store.upsert_line(folder, group_line(folder, GROUP, list(TASKS), METHOD))
    rewrite_jsonl(folders[CLINIC_B] / "fake-model" / "results.jsonl",
                  lambda rows: [r["metrics"].update(auroc=1.0) for r in rows if r.get("kind") != "group"])
    bundles = {}
    for source in (CLINIC_A, CLINIC_B):
        bundles[source] = root / f"bundle-{folders[source].name}"
        write_bundle(discover([folders[source]]).results_files, bundles[source], source)
    return Submissions(folders[OWN], bundles[CLINIC_A], bundles[CLINIC_B])

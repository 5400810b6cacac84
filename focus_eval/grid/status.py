"""Where each job of a plan stands, read from the output folders alone: done, partial, stale or missing.

The state of one evaluation unit (one task and method of one model) is decided in ``unit_state`` and nowhere
else; the state of a training job in ``adapter_state``. A job's state follows from its units'.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from focus_eval.grid.plan import PLAN_OPTIONS, GridJob, Plan
from focus_eval.options import FINGERPRINTED
from focus_eval.results.state import UnitState

DONE, PARTIAL, STALE, MISSING = "done", "partial", "stale", "missing"
STATES = (DONE, PARTIAL, STALE, MISSING)


@dataclass
class JobStatus:
    job: GridJob
    state: str
    units: dict[str, UnitState] = field(default_factory=dict)
    reason: str = ""

    @property
    def counts(self) -> dict[str, int]:
        return {s: sum(1 for u in self.units.values() if u.state == s) for s in STATES}


def _count_lines(*paths: Path) -> int:
    total = 0
    for path in paths:
        with path.open("rb") as fh:
            total += sum(1 for line in fh if line.strip())
    return total


def unit_state(model_dir: Path, task: str, method: str, expected: dict[str, Any]) -> UnitState:
    """See ``_unit_state``; a unit file that cannot be read as written (a folder, unreadable, a meta record
    that is no JSON object) makes the unit ``partial`` with the reason "corrupt ...", and the status goes on."""
    try:
        return _unit_state(model_dir, task, method, expected)
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        return UnitState(PARTIAL, f"corrupt unit file ({exc}); the next run computes the unit again")


def _unit_state(model_dir: Path, task: str, method: str, expected: dict[str, Any]) -> UnitState:
    """The state of one (task, method) in ``model_dir``: ``missing`` with no file of it, ``partial`` while its
    meta record (written when the unit finishes) is absent or its sample file is short, ``stale`` when the
    meta was written for other inputs than ``expected`` (task and preset hashes, the run options that change
    numbers), ``partial`` when its sample file lacks the validation rows the plan's runs write, else ``done``."""
    from focus_eval.results.layout import OutputLayout

    layout = OutputLayout(Path(model_dir))
    samples, meta_file = layout.samples(task, method), layout.meta(task, method)
    if not meta_file.is_file():
        started = [p for p in (samples, *layout.parts(task, method)) if p.is_file()]
        return UnitState(PARTIAL, f"{_count_lines(*started)} sample lines, unfinished") if started else \
            UnitState(MISSING)
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return UnitState(PARTIAL, f"corrupt meta file {meta_file}: {exc}")
    if not isinstance(meta, dict):
        return UnitState(PARTIAL, f"corrupt meta file {meta_file}: not a JSON object")
    if not samples.is_file():
        return UnitState(PARTIAL, "meta file without its sample file")
    n_expected = meta.get("n_expected")
    if n_expected is not None and _count_lines(samples) < int(n_expected):
        return UnitState(PARTIAL, f"{_count_lines(samples)} of {n_expected} sample lines")
    from focus_eval.runner.provenance import ROWS
    from focus_eval.runner.resume import lacks_rows

    changed = sorted(k for k, v in expected.items() if k not in ROWS and meta.get(k) != v)
    if changed:
        return UnitState(STALE, "changed: " + ", ".join(changed), changed)
    if lacks_rows(meta, expected):  # the next run computes it again, as resume does
        return UnitState(PARTIAL, "its sample file has no validation rows")
    return UnitState(DONE)


class Expectations:
    """What a finished unit's meta must say under the current task files, presets and plan settings."""

    def __init__(self, plan: Plan):
        from focus_eval.task import TaskIndex

        self.plan = plan
        self.index = TaskIndex(include_paths=plan.settings.include_path)
        self._presets: dict[str, Any] = {}

    def preset(self, name: str):
        if name not in self._presets:
            from focus_eval.grid.plan import model_args_for
            from focus_eval.presets import load_preset

            self._presets[name] = load_preset(name, model_args_for(self.plan.settings, name))
        return self._presets[name]

    def unit(self, job: GridJob, task: str, method: str) -> dict[str, Any]:
        s = self.plan.settings
        expected = {"task_hash": self.index.get(task).hash, "preset_hash": self.preset(job.model).hash,
                    "method": method, "adapter": job.adapter,
                    **{name: getattr(s, name) for name in FINGERPRINTED if name in PLAN_OPTIONS},
                    "val_rows": self.val_rows(task, method)}
        if job.adapter:
            from focus_eval.finetune.artifacts import read_adapter_info

            info = read_adapter_info(self.plan.adapter_dir(job)) or {}
            expected["adapter_trained_at"] = info.get("created")  # an adapter trained again is evaluated again
        return expected

    def val_rows(self, task: str, method: str) -> bool:
        """Whether a run of the plan writes validation rows for (task, method)."""
        from focus_eval.runner.methods import get_method

        return "val" in get_method(method).scored_splits(self.index.get(task), self.plan.settings)

    def adapter(self, job: GridJob) -> dict[str, Any]:
        return {"preset_hash": self.preset(job.model).hash, "task_hash": self.index.get(job.tasks[0]).hash,
                "train_dataset": job.dataset, "train_target": job.target}


def adapter_state(adapter_dir: Path, expected: dict[str, Any]) -> UnitState:
    """A training job: ``done`` once the training record (written last) exists and matches ``expected``,
    ``stale`` when it was written for another preset or task, ``partial`` with checkpoints or a training log
    but no record, else ``missing``."""
    from focus_eval.errors import FocusError
    from focus_eval.finetune.artifacts import CHECKPOINTS_DIR, LOG_FILE, read_adapter_info

    try:
        info = read_adapter_info(adapter_dir)
    except FocusError as exc:
        return UnitState(PARTIAL, str(exc))
    if info is None:
        started = (adapter_dir / CHECKPOINTS_DIR).is_dir() or (adapter_dir / LOG_FILE).is_file()
        return UnitState(PARTIAL, "training, no record yet") if started else UnitState(MISSING)
    changed = sorted(k for k, v in expected.items() if info.get(k) != v)
    return UnitState(STALE, "changed: " + ", ".join(changed), changed) if changed else UnitState(DONE)


def job_state(states: list[str]) -> str:
    """A job is done when every unit is, missing when none has started, stale when any unit is stale, else
    partial."""
    if all(s == DONE for s in states):
        return DONE
    if all(s == MISSING for s in states):
        return MISSING
    return STALE if STALE in states else PARTIAL


def plan_status(plan: Plan) -> list[JobStatus]:
    """One JobStatus per job, in plan order."""
    expect = Expectations(plan)
    out = []
    for job in plan.jobs:
        if job.kind == "sft":
            unit = adapter_state(plan.adapter_dir(job), expect.adapter(job))
            out.append(JobStatus(job, unit.state, {job.adapter or "adapter": unit}, unit.reason))
            continue
        model_dir = plan.output_dir(job)
        units = {f"{t}.{m}": unit_state(model_dir, t, m, expect.unit(job, t, m)) for t in job.tasks
                 for m in job.methods}
        state = job_state([u.state for u in units.values()])
        reasons = sorted({f"{k}: {u.reason}" for k, u in units.items() if u.reason})
        out.append(JobStatus(job, state, units, "; ".join(reasons)))
    return out


@dataclass
class Selection:
    """What ``grid run`` runs: the jobs, which of them replace earlier outputs, and the jobs held back."""

    jobs: list[GridJob]
    replace: set[str] = field(default_factory=set)
    held: dict[str, str] = field(default_factory=dict)


def to_run(statuses: list[JobStatus], overwrite: bool = False) -> Selection:
    """Every job not done, and every job waiting for one that runs (an adapter trained again is evaluated
    again). Stale jobs run only with ``overwrite`` (they then replace what they wrote, and so do the jobs that
    wait for them); without it they and the jobs waiting for them are held back."""
    chosen: list[GridJob] = []
    replace: set[str] = set()
    held: dict[str, str] = {}
    for status in statuses:  # plan order puts a job after the jobs it waits for
        job = status.job
        waits = [d for d in job.after if d in held]
        if waits:
            held[job.id] = f"waits for {', '.join(waits)}"
        elif status.state == STALE and not overwrite:
            held[job.id] = f"stale ({status.reason}); pass --overwrite to run it again"
        elif status.state != DONE or any(d in {j.id for j in chosen} for d in job.after):
            chosen.append(job)
            if status.state == STALE or any(d in replace for d in job.after):
                replace.add(job.id)
    return Selection(chosen, replace, held)

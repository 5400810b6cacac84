"""Executors of a plan's jobs: ``local`` runs them one after another on this host, ``slurm`` submits them as
job arrays through submitit. Both take their resources from a ``Cluster`` (a small YAML file and options)."""

from __future__ import annotations

import math
import shlex
import sys
import traceback
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from focus_eval.errors import FocusError
from focus_eval.files import load_yaml_file
from focus_eval.grid.plan import GridJob, Plan
from focus_eval.grid.status import Selection
from focus_eval.registry import Registry

TIME_BUCKETS_MIN = (30, 60, 120, 240, 480, 720, 1440, 2880, 4320)


@dataclass
class Cluster:
    """Resources and placement of every job. Unset fields come from each job's estimate (memory, time) or the
    defaults here; ``sbatch`` adds any other sbatch option (``{"mail-type": "END"}``)."""

    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    gpus: int = 1
    cpus: int = 8
    mem_gb: float | None = None
    time_min: int | None = None
    time_factor: float = 2.0
    array_parallelism: int = 64
    setup: list[str] = field(default_factory=list)
    sbatch: dict[str, Any] = field(default_factory=dict)
    python: str | None = None

    @classmethod
    def load(cls, path: str | Path | None, **overrides: Any) -> "Cluster":
        """Fields from the YAML file at ``path`` (if any), then the options that are not None."""
        raw: dict[str, Any] = {}
        if path:
            try:
                raw = load_yaml_file(path) or {}
            except (OSError, yaml.YAMLError) as exc:
                raise FocusError(f"{path}: cannot read the cluster file: {exc}") from None
            if not isinstance(raw, dict):
                raise FocusError(f"{path}: the cluster file must be a mapping of settings")
            known = {f.name for f in fields(cls)}
            unknown = sorted(set(raw) - known)
            if unknown:
                from focus_eval.registry import suggest

                raise FocusError(f"{path}: unknown cluster setting {unknown[0]!r}{suggest(unknown[0], known)}")
        raw.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls(**raw)
        except TypeError as exc:
            raise FocusError(f"{path or 'cluster options'}: {exc}") from None

    def time_limit(self, job: GridJob) -> int:
        """Minutes asked for: the set limit, else the estimate times ``time_factor`` rounded up to a bucket
        (fewer distinct limits make fewer arrays)."""
        if self.time_min:
            return int(self.time_min)
        wanted = math.ceil(job.minutes * self.time_factor)
        return next((b for b in TIME_BUCKETS_MIN if b >= wanted), wanted)

    def memory(self, job: GridJob) -> float:
        return float(self.mem_gb if self.mem_gb is not None else job.host_memory_gb)


@dataclass
class Outcome:
    """What one ``grid run`` did with each job: finished, failed (reason), skipped (reason) or submitted (id)."""

    finished: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    submitted: dict[str, str] = field(default_factory=dict)


class LocalExecutor:
    """Runs the jobs in plan order in this process (a job with several visible GPUs under accelerate); a job
    whose training job failed is skipped."""

    def __init__(self, cluster: Cluster, logs: Path):
        self.cluster = cluster
        self.logs = logs

    def run(self, plan: Plan, selection: Selection, dry_run: bool = False) -> Outcome:
        from focus_eval.grid.jobs import job_argv

        outcome = Outcome()
        for number, job in enumerate(selection.jobs, 1):
            replace = job.id in selection.replace
            blocked = [d for d in job.after if d in outcome.failed or d in outcome.skipped]
            if blocked:
                outcome.skipped[job.id] = f"waits for {', '.join(blocked)}, which did not finish"
                continue
            if dry_run:
                print(shlex.join(["focus-eval", *job_argv(plan.settings, job, replace)]))
                continue
            self.run_job(plan, job, replace, outcome, f"{number}/{len(selection.jobs)}")
        return outcome

    def run_job(self, plan: Plan, job: GridJob, replace: bool, outcome: Outcome, place: str) -> None:
        """Run one job while holding its folder's lock; a job whose folder is locked (it runs in another
        process, or its processes outlived an interrupted ``grid run``) is skipped, never run twice at once."""
        from focus_eval.grid.jobs import GridTask, folder_lock, job_folder
        from focus_eval.progress import Stage

        folder = job_folder(plan.settings, job)
        with folder_lock(folder) as fd:
            if fd is None:
                outcome.skipped[job.id] = (f"another process is running a job into {folder} (it holds "
                                           f"{folder / '.grid-job.lock'}); run again once it has ended")
                return
            task = GridTask(plan.settings, job, replace)
            task.keep_fds = (fd,)
            try:  # one line per finished job (the job's own stages are quiet: --no-progress)
                with Stage(f"grid job {job.id} ({place}) done"):
                    task()
            except FocusError as exc:
                outcome.failed[job.id] = str(exc)
                print(f"focus-eval grid: {exc}", file=sys.stderr)
                return
            except Exception as exc:  # one broken job must not stop the jobs that do not wait for it
                traceback.print_exc()
                outcome.failed[job.id] = f"{type(exc).__name__}: {exc}"
                return
        outcome.finished.append(job.id)


def _builtin_executors() -> None:
    EXECUTORS.register("local", "focus_eval.grid.executors:LocalExecutor")
    EXECUTORS.register("slurm", "focus_eval.grid.slurm:SlurmExecutor")


EXECUTORS = Registry("executor", entry_point_group="focus_eval.grid_executors", builtin=_builtin_executors)

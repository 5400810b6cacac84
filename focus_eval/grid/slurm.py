"""The Slurm executor: jobs go out as job arrays through submitit (one array per output folder and set of jobs
waited for), requeued on preemption, logged per job under the logs folder; each submission is recorded in
``<logs>/submissions.jsonl`` so that a rerun leaves queued and running jobs alone."""

from __future__ import annotations

import json
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

from focus_eval.errors import FocusError
from focus_eval.grid.executors import Cluster, Outcome
from focus_eval.grid.plan import GridJob, Plan
from focus_eval.grid.status import Selection

RECORD = "submissions.jsonl"


def _slurm(*argv: str) -> str:
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=120, check=False)
    except FileNotFoundError:
        raise FocusError(f"the slurm executor needs Slurm's commands on PATH ({argv[0]} not found)") from None
    if done.returncode != 0:
        raise FocusError(f"{' '.join(argv)} failed: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def active_ids() -> set[str]:
    """Ids of the queued and running jobs, array tasks one by one (``123_4``)."""
    return set(_slurm("squeue", "--noheader", "--array", "--format=%i").split())


def read_record(logs: Path) -> dict[str, dict]:
    """The latest submission of each plan job: job id -> {slurm_id, submitted, log}."""
    path = Path(logs) / RECORD
    latest: dict[str, dict] = {}
    if path.is_file():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                latest[row["job"]] = row
            except (json.JSONDecodeError, KeyError, TypeError):
                raise FocusError(f"{path}, line {number}: not a submission record") from None
    return latest


def wait_for(ids: list[str], poll_s: float = 5.0) -> None:
    """Block until none of ``ids`` is queued or running."""
    left = set(ids)
    shown = None
    while left:
        left &= active_ids()
        if len(left) != shown:
            shown = len(left)
            print(f"focus-eval grid: {shown} job(s) queued or running", flush=True)
        if left:
            time.sleep(poll_s)


class SlurmExecutor:
    """Submits jobs through submitit's Slurm executor."""

    def __init__(self, cluster: Cluster, logs: Path):
        self.cluster = cluster
        self.logs = Path(logs)

    def parameters(self, group: list[GridJob], dependency: list[str]) -> dict:
        """sbatch parameters of one array: the largest memory and time limit of its jobs."""
        c = self.cluster
        kind = group[0].kind
        name = group[0].model_dir_name if kind == "eval" else group[0].model
        params = {"job_name": f"focus-{kind}-{name}", "time": max(c.time_limit(j) for j in group),
                  "mem": f"{int(max(c.memory(j) for j in group))}GB", "cpus_per_task": c.cpus,
                  # evaluations of one model run one at a time: they write the same results.jsonl
                  "array_parallelism": c.array_parallelism if kind == "sft" else 1, "signal_delay_s": 120,
                  # a preempted job goes back to the queue; its callable resumes from what it wrote
                  "additional_parameters": {"requeue": True, "kill-on-invalid-dep": "yes", **c.sbatch}}
        if c.gpus:
            params["gpus_per_node"] = c.gpus
        for key in ("partition", "account", "qos", "constraint"):
            if getattr(c, key):
                params[key] = getattr(c, key)
        if c.setup:
            params["setup"] = list(c.setup)
        if dependency:
            params["dependency"] = "afterok:" + ":".join(sorted(dependency))
        return params

    def arrays(self, jobs: list[GridJob], slurm_ids: dict[str, str]) -> list[tuple[dict, list[GridJob]]]:
        """One array per output folder (training jobs: per model) and set of jobs waited for."""
        groups: dict[tuple, list[GridJob]] = {}
        for job in jobs:
            deps = tuple(sorted(slurm_ids[d] for d in job.after if d in slurm_ids))
            groups.setdefault((job.kind, job.model_dir_name if job.kind == "eval" else job.model, deps), []).append(job)
        return [(self.parameters(group, list(key[2])), group) for key, group in groups.items()]

    def run(self, plan: Plan, selection: Selection, dry_run: bool = False) -> Outcome:
        outcome = Outcome()
        record = read_record(self.logs)
        active = active_ids() if record else set()
        # earlier submissions still queued or running are left alone; jobs waiting for them depend on them
        slurm_ids = {j: r["slurm_id"] for j, r in record.items() if r["slurm_id"] in active}
        pending = []
        for job in selection.jobs:
            if job.id in slurm_ids:
                outcome.skipped[job.id] = f"already queued or running as Slurm job {slurm_ids[job.id]}"
            else:
                pending.append(job)
        while pending:  # waves: a job goes out once every job it waits for has an id
            waiting = {p.id for p in pending}
            ready = [j for j in pending if not any(d in waiting for d in j.after)]
            if not ready:
                raise FocusError(f"jobs wait for each other: {', '.join(sorted(waiting))}")
            for params, group in self.arrays(ready, slurm_ids):
                ids = self.submit(plan, params, group, selection.replace, dry_run)
                slurm_ids.update(ids)
                outcome.submitted.update(ids)
            pending = [j for j in pending if j not in ready]
        return outcome

    def submit(self, plan: Plan, params: dict, group: list[GridJob], replace: set[str],
               dry_run: bool) -> dict[str, str]:
        if dry_run:
            print(f"array of {len(group)}: {json.dumps(params, sort_keys=True)}")
            for job in group:
                print(f"  {job.id}")
            return {job.id: f"dry-run-{job.id}" for job in group}
        import submitit

        from focus_eval.grid.jobs import GridTask

        try:
            executor = submitit.SlurmExecutor(folder=self.logs / "%j", python=self.cluster.python)
        except RuntimeError as exc:
            raise FocusError(f"the slurm executor: {exc}") from None
        executor.update_parameters(**params)
        with executor.batch():
            handles = [executor.submit(GridTask(plan.settings, job, job.id in replace)) for job in group]
        ids = {job.id: str(h.job_id) for job, h in zip(group, handles)}
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.logs.mkdir(parents=True, exist_ok=True)
        with (self.logs / RECORD).open("a", encoding="utf-8") as fh:
            for job, handle in zip(group, handles):
                fh.write(json.dumps({"job": job.id, "slurm_id": ids[job.id], "submitted": now,
                                     "log": str(handle.paths.stdout)}) + "\n")
        print(f"submitted {len(group)} job(s) as {handles[0].job_id.split('_')[0]}"
              f"{' (array)' if len(group) > 1 else ''}: {', '.join(j.id for j in group)}")
        return ids

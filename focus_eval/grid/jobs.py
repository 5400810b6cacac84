"""What one grid job runs: the ordinary ``focus-eval`` command line in a child process (under ``accelerate
launch`` over every visible GPU when there are several); the callable is what the executors run (and requeue)."""

from __future__ import annotations

import contextlib
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

from focus_eval.errors import FocusError
from focus_eval.grid.plan import PLAN_OPTIONS, SFT_OPTIONS, GridJob, Settings
from focus_eval.options import to_argv


def _common(s: Settings, job: GridJob, names: tuple[str, ...]) -> list[str]:
    """``--model``, the model's preset overrides, the plan's run options in ``names``, ``--no-progress``."""
    argv = ["--model", job.model]
    if s.model_args.get(job.model):
        argv += ["--model-args", s.model_args[job.model]]
    return argv + to_argv({name: getattr(s, name) for name in names}) + ["--no-progress"]


def job_argv(s: Settings, job: GridJob, replace: bool = False) -> list[str]:
    """The ``focus-eval`` arguments of a job (without the program name); ``replace`` lets it replace outputs
    computed from other inputs (``--overwrite``; a training job starts again with ``--no-resume``). An eval job
    passes every run option of the plan (``PLAN_OPTIONS``), a training job those ``sft`` shares."""
    adapter_dir = Path(s.adapters_path) / job.model / str(job.adapter)
    if job.kind == "sft":
        return ["sft", *_common(s, job, SFT_OPTIONS), "--dataset", job.dataset, "--target", str(job.target),
                "--output", str(adapter_dir), *s.sft_args, *(["--no-resume"] if replace else [])]
    if job.kind != "eval":
        raise FocusError(f"job {job.id}: unknown kind {job.kind!r} (eval or sft)")
    argv = [*_common(s, job, PLAN_OPTIONS), "--tasks", ",".join(job.tasks), "--methods", ",".join(job.methods)]
    if job.adapter:
        argv += ["--adapter", str(adapter_dir)]
    if replace:
        argv.append("--overwrite")
    return argv


LOCK_FILE = ".grid-job.lock"


def job_folder(s: Settings, job: GridJob) -> Path:
    """The folder a job writes into: the model's output folder, or the adapter's for a training job."""
    if job.kind == "sft":
        return Path(s.adapters_path) / job.model / str(job.adapter)
    return Path(s.output_path) / job.model_dir_name


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[int | None]:
    """Hold the exclusive lock of a job folder (``fcntl.flock`` on its LOCK_FILE): yields the lock's file
    descriptor, or None when another process holds it (a job runs into that folder now). The job's process
    inherits the descriptor, so the lock lasts as long as the job's last process, whatever ends ours."""
    import fcntl
    import os

    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        yield fd
    finally:
        os.close(fd)


def visible_gpus(device: str | None) -> int:
    if device == "cpu":
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def command(argv: list[str], gpus: int = 0) -> list[str]:
    """The process that runs ``focus-eval ARGV``: this interpreter, or ``accelerate launch`` over several GPUs.
    A child process per job frees every model and GPU buffer when the job ends."""
    if gpus < 2:
        return [sys.executable, "-m", "focus_eval", *argv]
    return [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", str(gpus),
            "-m", "focus_eval", *argv]


# seconds a job's processes get to end on SIGTERM before they are killed
STOP_GRACE_S = 10.0


def run_command(argv: list[str], gpus: int = 0, keep_fds: tuple[int, ...] = ()) -> int:
    """Run ``focus-eval ARGV`` in a child process (its output goes where ours goes) and return its status.
    The child leads its own process group (its data loaders, accelerate's ranks); when we stop, for any
    reason (SIGINT, SIGTERM, an error), the whole group is ended. ``keep_fds`` stay open in the child (the
    job folder's lock: held until the last process of the job has ended)."""
    sys.stdout.flush()
    sys.stderr.flush()
    child = subprocess.Popen(command(argv, gpus), start_new_session=True, pass_fds=keep_fds)
    try:
        return child.wait()
    finally:
        stop_group(child)


def stop_group(child: subprocess.Popen, grace_s: float = STOP_GRACE_S) -> None:
    """End every process of ``child``'s process group: SIGTERM, then SIGKILL for those left after
    ``grace_s``; reap the child."""
    import signal

    if _signal_group(child.pid, signal.SIGTERM):
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and _group_alive(child.pid):
            child.poll()
            time.sleep(0.05)
        _signal_group(child.pid, signal.SIGKILL)
    child.wait()


def _signal_group(pgid: int, sig: int) -> bool:
    import os

    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs (zombies, which no signal ends, do not count)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return _signal_group(pgid, 0)
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


class GridTask:
    """One job as a callable: run it, raise FocusError when it fails. Executors pickle it; on preemption or
    time-out Slurm requeues the same call, and the command resumes from what the job already wrote."""

    def __init__(self, settings: Settings, job: GridJob, replace: bool = False):
        self.settings = settings
        self.job = job
        self.replace = replace
        self.keep_fds: tuple[int, ...] = ()  # descriptors the job's process keeps open (the folder lock)

    def __call__(self) -> float:
        argv = job_argv(self.settings, self.job, self.replace)
        gpus = visible_gpus(self.settings.device)
        shown = shlex.join(["focus-eval", *argv])
        print(f"focus-eval grid: {self.job.id} on {socket.gethostname()} ({gpus} GPU): {shown}", flush=True)
        started = time.perf_counter()
        code = run_command(argv, gpus, self.keep_fds)
        elapsed = time.perf_counter() - started
        if code != 0:
            raise FocusError(f"job {self.job.id}: '{shown}' ended with status {code} after {elapsed:.0f} s")
        print(f"focus-eval grid: {self.job.id} finished in {elapsed:.1f} s", flush=True)
        return elapsed

    def checkpoint(self, *args, **kwargs):
        """submitit's requeue hook: run the same job again (it resumes on its own)."""
        from submitit.helpers import DelayedSubmission

        return DelayedSubmission(self, *args, **kwargs)

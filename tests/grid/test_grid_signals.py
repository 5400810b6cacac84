"""SIGTERM and SIGINT end what a command started: ``datasets prepare --workers 2`` ends its worker pool and
records the copies already written, ``grid run --executor local`` ends its job's whole process group; both
print "interrupted" and exit 143 / 130, and leave no process behind. A job folder is locked while a job runs
into it (for as long as the job's last process lives), so no job ever runs twice at once into one folder."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

REPO = Path(__file__).resolve().parents[2]
SIGNALS = [(signal.SIGTERM, 143), (signal.SIGINT, 130)]


# --- processes, read from /proc ----------------------------------------------------------------------------------
def processes() -> list[dict]:
    """pid, ppid, session and command line of every live (non-zombie) process."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            out.append({"pid": int(entry.name), "ppid": int(fields[1]), "session": int(fields[3]),
                        "cmdline": cmdline})
    return out


def wait_for(condition, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def start(argv: list[str], cwd: Path) -> subprocess.Popen:
    """A command in its own session, so that every process it starts can be found by session id."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen(argv, cwd=cwd, env=env, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def leftovers(session: int, marker: str | None = None) -> list[dict]:
    return [p for p in processes() if p["session"] == session or (marker and marker in p["cmdline"])]


def kill_all(proc: subprocess.Popen, marker: str | None = None) -> list[dict]:
    """Test cleanup: SIGKILL every process the command left (by session, or by ``marker`` on the command line);
    returns them (the assertions then fail on them)."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    left = leftovers(proc.pid, marker)
    for p in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p["pid"], signal.SIGKILL)
    return left


# --- datasets prepare -------------------------------------------------------------------------------------------
CARD = """\
manifest: manifest.csv
targets:
  dr: {column: dr, positive: [1], negative: [0]}
"""


def big_dataset(folder: Path, n: int = 160) -> Path:
    """A manifest dataset of ``n`` large PNG images (PNG: no draft decoding, so each takes a while)."""
    images = folder / "images"
    images.mkdir(parents=True)
    ramp = np.linspace(0, 255, 2200, dtype=np.float32)
    pixels = np.stack([np.add.outer(ramp, ramp) / 2, np.add.outer(ramp, -ramp) % 256,
                       np.full((2200, 2200), 90.0)], axis=-1).astype(np.uint8)
    Image.fromarray(pixels).save(images / "0000.png", compress_level=1)
    data = (images / "0000.png").read_bytes()
    for i in range(1, n):
        (images / f"{i:04d}.png").write_bytes(data)
    rows = "".join(f"images/{i:04d}.png,{i % 2}\n" for i in range(n))
    (folder / "manifest.csv").write_text("image,dr\n" + rows)
    (folder / "dataset.yaml").write_text(CARD)
    return folder


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    return big_dataset(tmp_path_factory.mktemp("big") / "clinic")


def prepare_argv(big: Path, root: Path) -> list[str]:
    return [sys.executable, "-m", "focus_eval", "datasets", "prepare", "clinic", "--dataset-path",
            f"clinic={big}", "--data-root", str(root), "--size", "48", "--workers", "2"]


@pytest.mark.parametrize("sig,status", SIGNALS)
def test_prepare_interrupted_ends_its_workers_and_keeps_the_finished_copies(sig, status, big, tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    proc = start(prepare_argv(big, root), tmp_path)
    prepared = root / ".prepared"
    try:
        wait_for(lambda: len([p for p in processes() if p["ppid"] == proc.pid]) >= 2, "two pool workers")
        # results come back in order, a chunk at a time: by 45 copies the first chunks are back in the parent
        wait_for(lambda: len(list(prepared.rglob("*.jpg"))) >= 45, "45 prepared images")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        # the workers end with the command; on a loaded machine the last may end a moment after its parent
        ended = wait_for(lambda: not leftovers(proc.pid), "every pool worker to end", timeout=15)
    finally:
        kill_all(proc)
    assert proc.returncode == status, err
    assert "interrupted" in err and "Traceback" not in err
    assert ended
    (sources,) = prepared.rglob("sources.json")
    recorded = json.loads(sources.read_text())
    assert 0 < len(recorded) < 160  # what was complete is recorded, and the run did stop early
    assert not list(prepared.rglob("*.tmp"))
    done = subprocess.run(prepare_argv(big, root), capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr
    assert f"{len(recorded)} already prepared" in done.stdout


# --- grid run --executor local ----------------------------------------------------------------------------------
RUNNER = """\
import sys
from focus_eval.grid import jobs
from focus_eval.grid.plan import GridJob, Plan, Settings, write_plan

marker, plan_file, out = sys.argv[1], sys.argv[2], sys.argv[3]
# the job's process: start a grandchild (as data loaders and accelerate's ranks are), note it, then wait
CHILD = ("import subprocess, sys, time; "
         "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', sys.argv[1]]); "
         "open(sys.argv[2], 'a').write('started\\\\n'); time.sleep(600)")
jobs.command = lambda argv, gpus=0: [sys.executable, "-c", CHILD, marker, out + "/runs.txt"]
job = GridJob(id="tiny-vit/synth", kind="eval", model="tiny-vit", dataset="synth", tasks=["dr_synth_desktop"],
              methods=["linear_probe"])
write_plan(Plan(settings=Settings(output_path=out, adapters_path=out + "/adapters", device="cpu"), jobs=[job]),
           plan_file)
from focus_eval.cli import main
sys.exit(main(["grid", "run", plan_file]))
"""


def grid_run(tmp_path: Path, marker: str) -> subprocess.Popen:
    script = tmp_path / "grid_runner.py"
    script.write_text(RUNNER)
    (tmp_path / "out").mkdir(exist_ok=True)
    return start([sys.executable, str(script), marker, str(tmp_path / "plan.yaml"), str(tmp_path / "out")],
                 tmp_path)


def runs(tmp_path: Path) -> int:
    path = tmp_path / "out" / "runs.txt"
    return len(path.read_text().splitlines()) if path.is_file() else 0


def grandchildren(marker: str) -> list[dict]:
    return [p for p in processes() if marker in p["cmdline"] and "time.sleep(600)" in p["cmdline"]
            and "subprocess" not in p["cmdline"]]


@pytest.mark.parametrize("sig,status", SIGNALS)
def test_grid_run_interrupted_ends_the_jobs_process_group(sig, status, tmp_path):
    marker = f"focus-grid-test-{uuid.uuid4().hex}"
    proc = grid_run(tmp_path, marker)
    try:
        wait_for(lambda: grandchildren(marker), "the job's grandchild")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        ended = wait_for(lambda: not leftovers(proc.pid, marker), "every process of the job to end", timeout=15)
    finally:
        kill_all(proc, marker)
    assert proc.returncode == status, err
    assert "interrupted" in err and "Traceback" not in err
    assert ended
    assert runs(tmp_path) == 1


def test_a_job_whose_processes_outlive_grid_run_is_not_started_twice(tmp_path):
    marker = f"focus-grid-test-{uuid.uuid4().hex}"
    first = grid_run(tmp_path, marker)
    try:
        wait_for(lambda: grandchildren(marker), "the job's grandchild")
        first.kill()  # SIGKILL: no chance to end the job, whose processes live on in their own group
        first.wait(timeout=30)  # (not communicate: the job's processes still hold its output pipes)
        first.stdout.close()
        first.stderr.close()
        second = subprocess.run([sys.executable, str(tmp_path / "grid_runner.py"), marker,
                                 str(tmp_path / "plan.yaml"), str(tmp_path / "out")],
                                capture_output=True, text=True, timeout=120,
                                env=dict(os.environ, PYTHONPATH=str(REPO)))
        assert second.returncode == 1, second.stderr
        assert "another process is running a job into" in second.stderr
        assert runs(tmp_path) == 1
    finally:
        for p in leftovers(-1, marker):
            os.kill(p["pid"], signal.SIGKILL)
    wait_for(lambda: not leftovers(-1, marker), "the stray job to end", timeout=15)
    third = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import fcntl, os, sys
        fd = os.open(sys.argv[1], os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free again once the job's last process has ended
        """), str(tmp_path / "out" / "tiny-vit" / ".grid-job.lock")], capture_output=True, text=True, timeout=30)
    assert third.returncode == 0, third.stderr

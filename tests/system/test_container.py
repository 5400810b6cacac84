"""The image built and run for real through a Docker engine (the docker Python SDK): the demo as a non-root user
with host folders mounted and no network, two CPU processes against one, the GPU checks of the entrypoint, what the
image holds, and the compose file. Skipped, with the reason, where no engine answers.

The image is built once per session from docker/Dockerfile on a Debian base made with docker/make-base.sh
($FOCUS_TEST_BASE_IMAGE names another). The wheels come from this environment's pip, downloaded once into
.cache/container/wheels and served to the build over 127.0.0.1. Timings and the image size are written to
.cache/container/report.json."""

import configparser
import functools
import http.server
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

docker = pytest.importorskip("docker", reason="the docker Python SDK is not installed (pip install -e '.[test]')")
tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11")

# the first test builds the image and runs the demo in it (its fixtures count against its time limit)
pytestmark = [pytest.mark.container, pytest.mark.slow, pytest.mark.timeout(2700)]

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "focus-eval:test"
BASE = os.environ.get("FOCUS_TEST_BASE_IMAGE", "focus-eval-base:bookworm")
PIP_PORT = int(os.environ.get("FOCUS_TEST_PIP_PORT", "38211"))  # fixed, so that the build args and the cache hold
IMAGE_PYTHON = os.environ.get("FOCUS_TEST_IMAGE_PYTHON", "3.11")  # the Python of the base image (Debian 12: 3.11)
WHEELS = ROOT / ".cache" / "container" / "wheels"
REPORT = ROOT / ".cache" / "container" / "report.json"
report: dict = {}


@pytest.fixture(scope="module")
def client():
    try:
        engine = docker.from_env(timeout=3600)  # a build step may print nothing for minutes
        engine.ping()
    except docker.errors.DockerException as exc:
        pytest.skip(f"no Docker engine answers ({exc}); .ci/run starts one with docker/ci-engine.sh")
    yield engine
    if report:
        REPORT.parent.mkdir(parents=True, exist_ok=True)
        REPORT.write_text(json.dumps(report, indent=2) + "\n")
    engine.close()


@pytest.fixture(scope="module")
def base_image(client):
    try:
        client.images.get(BASE)
        return BASE
    except docker.errors.ImageNotFound:
        pass
    if shutil.which("debootstrap") is None or os.geteuid() != 0:
        pytest.skip(f"no base image {BASE}: make it as root with 'sh docker/make-base.sh {BASE}' (needs debootstrap)")
    done = subprocess.run(["sh", str(ROOT / "docker" / "make-base.sh"), BASE], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return BASE


def wheelhouse() -> Path:
    """Every wheel the image needs (torch and torchvision at the versions of constraints.txt, as the Dockerfile
    installs them), fetched by this environment's pip (its indexes, mirrors and certificates) for the image's
    Python into a folder kept between runs; the build installs from there alone."""
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    build_system = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    needed = [*setup["options"]["install_requires"].split(), *build_system]
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(WHEELS),
                           "--python-version", IMAGE_PYTHON, "--only-binary=:all:",
                           "-c", str(ROOT / "constraints.txt"), *needed],
                          capture_output=True, text=True)
    assert done.returncode == 0, f"pip download {needed}: {done.stderr[-3000:]}"
    return WHEELS


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def image(client, base_image):
    handler = functools.partial(QuietHandler, directory=str(wheelhouse()))
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", PIP_PORT), handler)
    except OSError:  # the port is taken: any free one (only the build cache suffers)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    pip = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": f"http://127.0.0.1:{server.server_address[1]}/"}
    log: list[str] = []
    start = time.perf_counter()
    try:
        for chunk in client.api.build(path=str(ROOT), dockerfile="docker/Dockerfile", tag=IMAGE, rm=True,
                                      forcerm=True, network_mode="host", decode=True,
                                      buildargs={"BASE_IMAGE": base_image, **pip}):
            log.append(chunk.get("stream", ""))
            assert "error" not in chunk, "".join(log)[-4000:] + chunk["error"]
    finally:
        server.shutdown()
        server.server_close()
    built = client.images.get(IMAGE)
    report.update(base_image=base_image, build_seconds=round(time.perf_counter() - start, 1),
                  build_steps_cached="".join(log).count("Using cache"), image_bytes=built.attrs["Size"])
    return built


def readme_docker_run() -> dict:
    """The README's `docker run` command, split into the options the SDK takes and focus-eval's arguments."""
    text = (ROOT / "README.md").read_text()
    line = re.search(r"docker run(?:.*\\\n)*.*", text).group(0).replace("\\\n", " ")
    words = shlex.split(line.replace("$(id -u)", "UID").replace("$(id -g)", "GID"))[2:]
    run = {"volumes": {}, "env": [], "gpus": None, "shm_size": None, "user": None}
    while words[0].startswith("-"):
        flag, value = words.pop(0), words.pop(0)
        if flag == "-v":
            host, container, *mode = value.split(":")
            run["volumes"][container] = mode[0] if mode else "rw"
        elif flag == "-e":
            run["env"].append(value)
        else:
            run[flag.lstrip("-").replace("-", "_")] = value
    run["image"], run["args"] = words[0], words[1:]
    return run


def run_container(client, args, *, volumes=None, **options) -> tuple[int, str, float]:
    """Runs the image to the end: exit code, output, seconds."""
    start = time.perf_counter()
    container = client.containers.run(IMAGE, args, detach=True, volumes=volumes or {}, **options)
    try:
        code = container.wait(timeout=1800)["StatusCode"]
        return code, container.logs().decode(errors="replace"), time.perf_counter() - start
    finally:
        container.remove(force=True)


@pytest.fixture(scope="module")
def user_ids():
    """The calling user, as `--user $(id -u):$(id -g)` passes it; a non-root stand-in when the tests run as root."""
    return (os.getuid(), os.getgid()) if os.getuid() != 0 else (2345, 2345)


@pytest.fixture(scope="module")
def demo(client, image, user_ids, tmp_path_factory):
    """`focus-eval demo` in the container, run as the README's line runs it, with no network and HF offline."""
    readme = readme_docker_run()
    root = tmp_path_factory.mktemp("mounts")
    mounts = {container: root / container.strip("/") for container in readme["volumes"]}
    for folder in mounts.values():
        folder.mkdir()
        os.chown(folder, *user_ids)
    volumes = {str(mounts[c]): {"bind": c, "mode": mode} for c, mode in readme["volumes"].items()}
    code, out, seconds = run_container(client, ["demo", "--out", "/results/demo"], volumes=volumes,
                                       user="{}:{}".format(*user_ids), shm_size=readme["shm_size"],
                                       environment={"HF_HUB_OFFLINE": "1"}, network_mode="none")
    report["demo_seconds"] = round(seconds, 1)
    return {"code": code, "out": out, "mounts": mounts, "readme": readme}


def test_readme_line_is_what_the_tests_run(demo):
    readme = demo["readme"]
    assert set(readme["volumes"]) == {"/data", "/hf", "/results"} and readme["user"] == "UID:GID"
    assert readme["shm_size"] and readme["gpus"] == "all" and readme["image"] == "focus-eval"


def test_demo_runs_offline_as_the_calling_user(demo, user_ids):
    assert demo["code"] == 0, demo["out"][-4000:]
    results = demo["mounts"]["/results"] / "demo"
    assert (results / "site" / "index.html").is_file()
    manifests = sorted(results.glob("results/*/run-*.json"))
    assert len(manifests) >= 6, demo["out"][-2000:]
    for manifest in manifests:  # offline mode reached every run, and none had a network to fall back on
        assert json.loads(manifest.read_text())["environment"]["hf_hub_offline"] == "1"
    written = [results, *results.rglob("*"), *demo["mounts"]["/hf"].rglob("*")]
    assert len(written) > 50
    wrong = [str(p) for p in written if (p.lstat().st_uid, p.lstat().st_gid) != tuple(user_ids)]
    assert not wrong, f"not owned by {user_ids}: {wrong[:5]}"


def _results_and_samples(model_dir: Path) -> tuple[list[dict], dict[str, str]]:
    rows = [json.loads(line) for line in (model_dir / "results.jsonl").read_text().splitlines()]
    for row in rows:
        row.pop("created", None)
    return rows, {p.name: p.read_text() for p in sorted((model_dir / "samples").glob("*.jsonl"))}


def test_two_cpu_processes_give_the_results_of_one(client, demo, user_ids):
    assert demo["code"] == 0, "the demo's data is needed"
    results = demo["mounts"]["/results"]
    volumes = {str(results / "demo" / "data"): {"bind": "/data", "mode": "ro"},
               str(demo["mounts"]["/hf"]): {"bind": "/hf", "mode": "rw"},  # the tiny models the demo built
               str(results): {"bind": "/results", "mode": "rw"}}
    args = ["--model", "tiny-vit", "--tasks", "dr_synth_desktop,glaucoma_synth_mobile", "--device", "cpu",
            "--batch-size", "8", "--num-workers", "0", "--n-boot", "200", "--no-progress"]
    runs = {}
    for n in (1, 2):
        code, out, seconds = run_container(
            client, [*args, "--output-path", f"/results/p{n}", "--cache-dir", f"/results/cache{n}"],
            volumes=volumes, user="{}:{}".format(*user_ids), shm_size="1g", network_mode="none",
            environment={"FOCUS_NUM_PROCESSES": str(n), "HF_HUB_OFFLINE": "1"})
        assert code == 0, out[-4000:]
        runs[n] = results / f"p{n}" / "tiny-vit"
        report[f"tiny_vit_{n}_process_seconds"] = round(seconds, 1)
    manifest = json.loads(next(runs[2].glob("run-*.json")).read_text())
    assert manifest["environment"]["num_processes"] == 2 and manifest["environment"]["device"].startswith("cpu")
    assert list((results / "cache2").rglob("shard-r1-*.npz")), "the second process embedded nothing"
    assert _results_and_samples(runs[2]) == _results_and_samples(runs[1])


def test_forgotten_gpus_and_old_driver_are_refused(client, image, tmp_path):
    code, out, _ = run_container(client, ["--model", "tiny-vit", "--tasks", "dr_synth_desktop"])
    assert code == 3 and "--gpus all" in out and "--device cpu" in out, out
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho 'NVIDIA H100 80GB HBM3, 550.54.15'\n")
    fake.chmod(0o755)
    code, out, _ = run_container(client, ["--model", "tiny-vit", "--tasks", "dr_synth_desktop"],
                                 volumes={str(fake): {"bind": "/usr/local/bin/nvidia-smi", "mode": "ro"}})
    # the Debian-based test image has no forward-compatibility libraries: a 550 driver cannot run CUDA 13
    assert code == 3 and "550.54.15 is too old" in out and "CUDA 13" in out and "580 or newer" in out, out


IMAGE_SCAN = r"""
import json, os
bad_names = {'.git', '.venv', '.env', '.netrc', '.git-credentials', '.pypirc', 'id_rsa', 'id_ed25519',
             'test_container.py', 'browser_support.py', 'focus_eval.egg-info', 'demo-out'}
found, files = [], 0
for top in ('/', ):
    for dirpath, dirnames, filenames in os.walk(top):
        if dirpath in ('/proc', '/sys', '/dev'):
            dirnames[:] = []
            continue
        files += len(filenames)
        found += [os.path.join(dirpath, n) for n in dirnames + filenames if n in bad_names]
empty = {d: os.listdir(d) for d in ('/data', '/hf', '/results')}
print(json.dumps({'found': found, 'files': files, 'mounts': empty, 'src': os.path.exists('/src'),
                  'home': sorted(os.listdir(os.path.expanduser('~')))}))
"""


def test_image_holds_no_secrets_tests_or_context_leftovers(client, image):
    code, out, _ = run_container(client, ["-c", IMAGE_SCAN], entrypoint=["python"], network_mode="none")
    assert code == 0, out
    scan = json.loads(out.strip().splitlines()[-1])
    assert scan["files"] > 1000 and scan["found"] == [], scan["found"]
    assert not scan["src"] and scan["mounts"] == {"/data": [], "/hf": [], "/results": []}
    assert not set(scan["home"]) & {".cache", ".netrc", ".docker", ".git-credentials"}, scan["home"]
    config = image.attrs["Config"]
    assert not [e for e in config["Env"] if re.match(r"\w*(TOKEN|SECRET|PASSWORD|KEY)\w*=", e, flags=re.I)]
    history = " ".join(layer.get("CreatedBy", "") for layer in image.history())
    assert not re.search(r"(TOKEN|SECRET|PASSWORD)\w*=\S|//[^/\s]+:[^@\s]+@", history, flags=re.I)
    assert config["User"] == "1000:1000"
    assert image.attrs["Size"] < 12 * 2**30, f"image of {image.attrs['Size'] / 2**30:.1f} GiB"


def _compose_command() -> list[str] | None:
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    return ["docker-compose"] if shutil.which("docker-compose") else None


def test_compose_file_is_valid(tmp_path):
    command = _compose_command()
    if command is None:
        pytest.skip("neither 'docker compose' nor 'docker-compose' is installed (docker/ci-engine.sh installs it)")
    env = {**os.environ, "DATA": str(tmp_path), "HF_HOME": str(tmp_path / "hf")}
    compose = ROOT / "docker" / "compose.yaml"
    done = subprocess.run([*command, "-f", str(compose), "config"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    for expected in (f"{tmp_path}:/data:ro", ":/hf", ":/results", "shm_size", "driver: nvidia", "gpu"):
        assert expected in done.stdout, done.stdout
    broken = tmp_path / "compose.yaml"
    broken.write_text(compose.read_text().replace("shm_size:", "shm_sise:"))
    done = subprocess.run([*command, "-f", str(broken), "config"], capture_output=True, text=True, env=env)
    assert done.returncode != 0 and "shm_sise" in done.stdout + done.stderr

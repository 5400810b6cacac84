"""--log-to: a tiny run logs every unit's parameters, metrics with intervals and sample file to a real local
MLflow tracking server (started and stopped by this test) and to W&B in offline mode; a tracker that fails only
warns, once, and every result is still written."""

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from focus_eval.cli import main

TASKS = "dr_synth_desktop,glaucoma_synth_desktop"


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    root = tmp_path_factory.mktemp("trk") / "data"
    assert main(["synth", "--out", str(root), "--n", "40"]) == 0
    return root


def _run(synth: Path, out: Path, *log_to: str) -> None:
    args = ["--model", "tiny-vit", "--tasks", TASKS, "--data-root", str(synth), "--output-path", str(out),
            "--n-boot", "20", "--num-workers", "0", "--no-progress", "--device", "cpu"]
    for target in log_to:
        args += ["--log-to", target]
    assert main(args) == 0


def _lines(out: Path) -> list[dict]:
    rows = [json.loads(x) for x in (out / "tiny-vit" / "results.jsonl").read_text().splitlines()]
    return [r for r in rows if r.get("kind") != "group"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def mlflow_server(tmp_path):
    pytest.importorskip("mlflow", reason="the mlflow extra is not installed")
    port = _free_port()
    mlflow_bin = Path(sys.executable).parent / "mlflow"
    server = subprocess.Popen(
        [str(mlflow_bin), "server", "--backend-store-uri", f"sqlite:///{tmp_path}/db.sqlite",
         "--default-artifact-root", str(tmp_path / "art"), "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1"], stdout=subprocess.DEVNULL, stderr=open(tmp_path / "server.log", "wb"))
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while True:
            try:
                urllib.request.urlopen(f"{uri}/health", timeout=2)
                break
            except OSError:
                if time.time() > deadline or server.poll() is not None:
                    pytest.fail("the MLflow server did not start: " + (tmp_path / "server.log").read_text()[-2000:])
                time.sleep(0.5)
        yield uri
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.mark.slow
def test_every_unit_reaches_a_local_mlflow_server(synth, tmp_path, mlflow_server):
    import mlflow

    out = tmp_path / "out"
    _run(synth, out, f"mlflow:{mlflow_server}")
    mlflow.set_tracking_uri(mlflow_server)
    runs = mlflow.search_runs(experiment_names=["focus-eval/tiny-vit"], output_format="list")
    lines = _lines(out)
    assert len(runs) == len(lines) > 0
    by_name = {r.info.run_name: r for r in runs}
    client = mlflow.MlflowClient(mlflow_server)
    for line in lines:
        run = by_name[f"{line['task']}.{line['method']}"]
        metrics, params = run.data.metrics, run.data.params
        assert metrics["auroc"] == pytest.approx(line["metrics"]["auroc"])
        assert metrics["auroc_ci_low"] == pytest.approx(line["ci"]["auroc"][0])
        assert metrics["n"] == line["n"]
        assert params["model"] == "tiny-vit" and params["preset_hash"] == line["preset_hash"]
        assert params["task"] == line["task"] and params["option.n_boot"] == "20"
        artefacts = [a.path for a in client.list_artifacts(run.info.run_id)]
        assert f"{line['task']}.{line['method']}.jsonl" in artefacts


def test_a_failing_tracker_warns_once_and_loses_nothing(synth, tmp_path, capsys, monkeypatch):
    pytest.importorskip("mlflow", reason="the mlflow extra is not installed")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "3")
    out, reference = tmp_path / "out", tmp_path / "ref"
    _run(synth, out, f"mlflow:http://127.0.0.1:{_free_port()}")
    assert capsys.readouterr().err.count("--log-to mlflow") == 1
    _run(synth, reference)
    assert [r["metrics"] for r in _lines(out)] == [r["metrics"] for r in _lines(reference)]


def test_wandb_offline_runs_hold_each_units_metrics(synth, tmp_path, monkeypatch):
    pytest.importorskip("wandb", reason="the wandb extra is not installed")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wb"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    (tmp_path / "wb").mkdir()
    out = tmp_path / "out"
    _run(synth, out, "wandb")
    from helpers.wandb_log import config_and_summary

    runs = {}
    for run_dir in sorted((tmp_path / "wb" / "wandb").glob("offline-run-*")):
        [log] = run_dir.glob("run-*.wandb")
        config, summary = config_and_summary(log)
        runs[(config["task"], config["method"])] = (config, summary)
        assert (run_dir / "files" / f"{config['task']}.{config['method']}.jsonl").is_file()
    lines = _lines(out)
    assert len(runs) == len(lines) > 0
    for line in lines:
        config, summary = runs[(line["task"], line["method"])]
        assert config["model"] == "tiny-vit" and config["preset_hash"] == line["preset_hash"]
        assert summary["auroc"] == pytest.approx(line["metrics"]["auroc"])
        assert summary["auroc_ci_high"] == pytest.approx(line["ci"]["auroc"][1])

"""--log-to against the real trackers: MLflow with a sqlite store (and a real local server) and W&B offline.
One command is one parent run (W&B group) holding a run per unit, in one experiment (project) per benchmark or
the one MLFLOW_EXPERIMENT_NAME / WANDB_PROJECT names; every run carries the provenance; logging is batched and
W&B's config typed; artifacts go beside the results. A target that cannot work is refused before anything is
written, with or without --check; a tracker that fails during the run is named in the final summary and every
result is still written."""

import json
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from focus_eval.cli import main
from focus_eval.digests import file_sha256
from focus_eval.version import __version__

TASKS = "dr_synth_desktop,glaucoma_synth_desktop"
UNITS = {"dr_synth_desktop.linear_probe", "glaucoma_synth_desktop.linear_probe"}


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    root = tmp_path_factory.mktemp("trk") / "data"
    assert main(["synth", "--out", str(root), "--n", "40"]) == 0
    return root


def _args(synth: Path, out: Path, *log_to: str, check: bool = False) -> list[str]:
    args = ["--model", "tiny-vit", "--tasks", TASKS, "--data-root", str(synth), "--output-path", str(out),
            "--n-boot", "20", "--num-workers", "0", "--no-progress", "--device", "cpu"]
    for target in log_to:
        args += ["--log-to", target]
    return args + (["--check"] if check else [])


def _run(synth: Path, out: Path, *log_to: str) -> None:
    assert main(_args(synth, out, *log_to)) == 0


def _lines(out: Path) -> list[dict]:
    rows = [json.loads(x) for x in (out / "tiny-vit" / "results.jsonl").read_text().splitlines()]
    return [r for r in rows if r.get("kind") != "group"]


def _manifest(out: Path) -> Path:
    [path] = (out / "tiny-vit").glob("run-*.json")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _mlflow_runs(uri: str, experiment: str) -> tuple[list, list]:
    """(parent runs, unit runs) of one experiment."""
    import mlflow

    client = mlflow.MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    assert found is not None, f"no experiment {experiment!r}"
    runs = client.search_runs([found.experiment_id])
    parents = [r for r in runs if r.data.tags.get("focus_eval.kind") == "command"]
    return parents, [r for r in runs if r.data.tags.get("focus_eval.kind") == "unit"]


def test_one_command_is_one_mlflow_parent_run_holding_its_units(synth, tmp_path, monkeypatch):
    import mlflow

    calls = {"log_batch": 0, "log_metric": 0, "log_param": 0}
    for name in calls:
        real = getattr(mlflow.MlflowClient, name)

        def counted(self, *args, _real=real, _name=name, **kwargs):
            calls[_name] += 1
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(mlflow.MlflowClient, name, counted)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    out, uri = tmp_path / "out", f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    _run(synth, out, f"mlflow:{uri}")
    [parent], children = _mlflow_runs(uri, "focus-eval/focus")
    lines, digest = _lines(out), file_sha256(_manifest(out))
    manifest = json.loads(_manifest(out).read_text())
    assert {r.info.run_name for r in children} == UNITS and len(lines) == len(children) == 2
    assert parent.info.run_name.startswith("tiny-vit-") and parent.info.status == "FINISHED"
    for run in [parent, *children]:
        tags = run.data.tags
        assert tags["focus_eval.version"] == __version__ == manifest["versions"]["focus-eval"]
        assert tags.get("focus_eval.git_commit") == manifest["git_commit"]
        assert tags["focus_eval.manifest"] == str(_manifest(out).resolve()) or \
            Path(tags["focus_eval.manifest"]).resolve() == _manifest(out).resolve()
        assert tags["focus_eval.manifest_sha256"] == digest and tags["focus_eval.command"] == parent.info.run_name
    client = mlflow.MlflowClient(uri)
    by_name = {r.info.run_name: r for r in children}
    for line in lines:
        run = by_name[f"{line['task']}.{line['method']}"]
        assert run.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert run.data.tags["focus_eval.data_fingerprint"] == line["extra"]["data_fingerprint"]
        assert run.data.metrics["auroc"] == pytest.approx(line["metrics"]["auroc"])
        assert run.data.metrics["auroc_ci_low"] == pytest.approx(line["ci"]["auroc"][0])
        assert run.data.params["preset_hash"] == line["preset_hash"] and run.data.params["option.n_boot"] == "20"
        artefacts = [a.path for a in client.list_artifacts(run.info.run_id)]
        assert f"{line['task']}.{line['method']}.jsonl" in artefacts
        # a local store keeps the artifacts beside the results
        assert run.info.artifact_uri.startswith((out / "mlflow-artifacts").resolve().as_uri())
    assert [a.path for a in client.list_artifacts(parent.info.run_id)] == [_manifest(out).name]
    # batched: no metric or parameter logged one by one; one batch per unit, one for the parent's options, and
    # one per run for the manifest's digest at the end
    assert calls["log_metric"] == calls["log_param"] == 0 and calls["log_batch"] == 2 + 1 + 3


def test_mlflow_without_a_uri_logs_beside_the_results_into_the_named_experiment(synth, tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "retina-study")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    _run(synth, out, "mlflow")
    assert (out / "mlflow.db").is_file() and (out / "mlflow-artifacts").is_dir()
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "mlruns").exists()
    parents, children = _mlflow_runs(f"sqlite:///{out / 'mlflow.db'}", "retina-study")
    assert len(parents) == 1 and len(children) == 2


def _wandb_runs(folder: Path) -> list[dict]:
    from helpers.wandb_log import config_and_summary, wandb_records

    runs = []
    for run_dir in sorted(folder.glob("wandb/offline-run-*")):
        [log] = run_dir.glob("run-*.wandb")
        records = list(wandb_records(log))
        [run] = [r.run for r in records if r.WhichOneof("record_type") == "run"]
        config, summary = config_and_summary(log)
        histories = [r for r in records if r.WhichOneof("record_type") == "history"]
        runs.append({"project": run.project, "group": run.run_group, "job_type": run.job_type,
                     "name": run.display_name, "config": config, "summary": summary, "histories": len(histories),
                     "files": run_dir / "files"})
    return runs


def test_wandb_offline_one_group_per_command_typed_config_and_files_beside_the_results(synth, tmp_path,
                                                                                        monkeypatch):
    pytest.importorskip("wandb", reason="the wandb extra is not installed")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_PROJECT", "retina-study")
    monkeypatch.delenv("WANDB_DIR", raising=False)
    out = tmp_path / "out"
    _run(synth, out, "wandb")
    runs = _wandb_runs(out)  # beside the results: <output>/wandb
    units = [r for r in runs if r["job_type"] == "unit"]
    [command] = [r for r in runs if r["job_type"] == "command"]
    assert {r["name"] for r in units} == UNITS and command["name"].startswith("tiny-vit-")
    assert {r["group"] for r in runs} == {command["name"]} and {r["project"] for r in runs} == {"retina-study"}
    assert command["summary"]["manifest_sha256"] == file_sha256(_manifest(out)) and command["summary"]["units"] == 2
    assert (command["files"] / _manifest(out).name).is_file()
    by_name = {r["name"]: r for r in units}
    for line in _lines(out):
        run = by_name[f"{line['task']}.{line['method']}"]
        config, summary = run["config"], run["summary"]
        assert config["option.n_boot"] == 20 and isinstance(config["option.seed"], int)  # typed, not text
        assert config["preset_hash"] == line["preset_hash"] and config["focus_eval.version"] == __version__
        assert config["focus_eval.data_fingerprint"] == line["extra"]["data_fingerprint"]
        assert summary["auroc"] == pytest.approx(line["metrics"]["auroc"])
        assert summary["auroc_ci_high"] == pytest.approx(line["ci"]["auroc"][1])
        assert run["histories"] == 1  # every metric in one log call
        assert (run["files"] / f"{line['task']}.{line['method']}.jsonl").is_file()


def test_wandb_projects_follow_the_benchmark(tmp_path, monkeypatch):
    from focus_eval.runner.trackers import WandbTracker, benchmark

    monkeypatch.delenv("WANDB_PROJECT", raising=False)
    assert benchmark("funbench_l4c_dr_grading_synth_desktop") == "funbench" and benchmark("dr_brset") == "focus"
    tracker = WandbTracker.__new__(WandbTracker)
    assert [tracker.project(b) for b in ("focus", "funbench")] == ["focus-eval-focus", "focus-eval-funbench"]


@pytest.mark.parametrize("target, message", [
    ("wandb:http://wandb.example:8080", "W&B takes no URI; write --log-to wandb, with WANDB_BASE_URL"),
    ("mlflow:", "--log-to expects mlflow, mlflow:URI"),
    ("mlflow:file:///tmp/mlruns", "MLflow no longer takes a file store"),
    ("mlflow:./mlruns", "MLflow no longer takes a file store"),
    ("mlflow:http://127.0.0.1:{port}", "does not answer"),
])
@pytest.mark.parametrize("check", [False, True])
def test_a_target_that_cannot_work_is_refused_before_anything_is_written(synth, tmp_path, capsys, monkeypatch,
                                                                       target, message, check):
    pytest.importorskip("mlflow", reason="the mlflow extra is not installed")
    out = tmp_path / "out"
    assert main(_args(synth, out, target.format(port=_free_port()), check=check)) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()


def test_a_missing_package_and_an_online_wandb_without_key_name_the_fix(synth, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "mlflow", None)  # as if it were not installed
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    out = tmp_path / "out"
    assert main(_args(synth, out, "mlflow", "wandb", check=True)) == 2
    err = capsys.readouterr().err
    assert "--log-to mlflow: mlflow is not installed: pip install 'focus-eval[mlflow]'" in err
    assert "--log-to wandb: W&B is online and has no API key" in err and "WANDB_MODE=offline" in err
    assert not out.exists()


def test_a_tracker_older_than_its_floor_is_refused(monkeypatch):
    import importlib.metadata

    from focus_eval.errors import FocusError
    from focus_eval.runner.tracker_checks import require

    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.19.9" if name == "wandb" else real(name))
    with pytest.raises(FocusError, match=r"wandb 0\.19\.9 is older than 0\.19\.10.*pip install 'wandb>=0\.19\.10'"):
        require("wandb")


def test_a_tracker_failing_during_the_run_is_named_in_the_summary(synth, tmp_path, capsys, monkeypatch):
    """The store breaks after the first unit (its runs table taken away): the run goes on, every result is
    written, the summary names the tracker, when and why."""
    from focus_eval.runner.run import Runner

    db = tmp_path / "mlflow.db"
    real = Runner.finish_unit

    def finish_then_break(self, unit, samples, extra):
        real(self, unit, samples, extra)
        if len(self.report.finished) == 1:
            with sqlite3.connect(db) as connection:
                connection.execute("ALTER TABLE runs RENAME TO runs_gone")

    monkeypatch.setattr(Runner, "finish_unit", finish_then_break)
    out, reference = tmp_path / "out", tmp_path / "ref"
    _run(synth, out, f"mlflow:sqlite:///{db}")
    err = capsys.readouterr().err
    assert err.count("--log-to mlflow:sqlite") == 2  # the warning when it fails, the summary at the end
    assert f"tracker failed: --log-to mlflow:sqlite:///{db}: failed at unit " in err
    monkeypatch.setattr(Runner, "finish_unit", real)
    _run(synth, reference)
    assert [r["metrics"] for r in _lines(out)] == [r["metrics"] for r in _lines(reference)]


@pytest.fixture
def mlflow_server(tmp_path):
    pytest.importorskip("mlflow", reason="the mlflow extra is not installed")
    from helpers.processes import stop

    port = _free_port()
    mlflow_bin = Path(sys.executable).parent / "mlflow"
    log = open(tmp_path / "server.log", "wb")
    server = subprocess.Popen(
        [str(mlflow_bin), "server", "--backend-store-uri", f"sqlite:///{tmp_path}/db.sqlite",
         "--default-artifact-root", str(tmp_path / "art"), "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1"], stdout=subprocess.DEVNULL, stderr=log)
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
        stop(server, timeout=20)
        log.close()


@pytest.mark.slow
def test_every_unit_reaches_a_local_mlflow_server(synth, tmp_path, mlflow_server):
    import mlflow

    out = tmp_path / "out"
    _run(synth, out, f"mlflow:{mlflow_server}")
    [parent], children = _mlflow_runs(mlflow_server, "focus-eval/focus")
    assert {r.info.run_name for r in children} == UNITS
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parent.info.run_id}
    client = mlflow.MlflowClient(mlflow_server)
    for run in children:  # a server keeps the artifacts where it keeps them
        assert f"{run.info.run_name}.jsonl" in [a.path for a in client.list_artifacts(run.info.run_id)]
        assert not (out / "mlflow-artifacts").exists()

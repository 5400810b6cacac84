"""Every command-line table fits the width it is given (off a terminal: $COLUMNS, else 200 characters), cells
wrapping inside their column; `--json` prints the same rows machine-readably."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers.records import synthetic_root

from focus_eval.cli import main
from focus_eval.commands.run import print_summary, summary_json
from focus_eval.tables import PLAIN_WIDTH, render, width

WIDTHS = (60, 200)


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    return synthetic_root(tmp_path_factory, "synth", n=40, seed=1)


def printed(capsys, argv: list[str], status: int = 0) -> str:
    capsys.readouterr()
    assert main(argv) == status
    return capsys.readouterr().out


def fits(text: str, columns: int) -> None:
    long = [line for line in text.splitlines() if len(line) > columns]
    assert not long, f"{len(long)} line(s) wider than {columns}: {long[:3]}"


def first_column(text: str, name: str) -> list[str]:
    """The first cell of each row of the table that starts ``text``, whose first column is ``name``: after its
    header line in the table layout; in the narrow layout each row's block starts at the margin."""
    lines = text.split("\n\n")[0].splitlines()
    if lines and lines[0].split()[0] == name:
        lines = lines[1:]
    return [line.split()[0] for line in lines if line and not line.startswith(" ")]


@pytest.mark.parametrize("columns", WIDTHS)
def test_models_and_tasks_fit_and_their_json_has_the_same_rows(columns, monkeypatch, capsys, synth):
    monkeypatch.setenv("COLUMNS", str(columns))
    text = printed(capsys, ["models"])
    fits(text, columns)
    assert first_column(text, "name") == [r["name"] for r in json.loads(printed(capsys, ["models", "--json"]))]
    argv = ["tasks", "*_synth_*", "--data-root", str(synth)]
    text = printed(capsys, argv)
    fits(text, columns)
    listed = json.loads(printed(capsys, [*argv, "--json"]))
    assert first_column(text, "task") == [r["task"] for r in listed["tasks"]]
    assert listed["tasks"][0].keys() == {"task", "dataset", "target", "cohort", "proxy", "version", "test",
                                         "test_pos", "label rule"}
    fits(printed(capsys, ["tasks", "dr_idrid", "--groups"]), columns)


@pytest.mark.parametrize("columns", WIDTHS)
def test_datasets_check_synth_and_run_check_fit(columns, monkeypatch, capsys, synth, tmp_path):
    monkeypatch.setenv("COLUMNS", str(columns))
    text = printed(capsys, ["datasets", "check", "--data-root", str(synth)])
    fits(text, columns)
    reports = json.loads(printed(capsys, ["datasets", "check", "--data-root", str(synth), "--json"]))["datasets"]
    assert first_column(text, "dataset") == [r["name"] for r in reports] == ["synth_desktop", "synth_mobile"]
    # the closing line names the folder to pass, whatever its length
    fits(printed(capsys, ["synth", "--out", str(tmp_path / "more"), "--n", "10"]).split("use it with")[0], columns)
    text = printed(capsys, ["--model", "tiny-clip", "--tasks", "synth", "--data-root", str(synth), "-o",
                            str(tmp_path / "out"), "--check"])
    fits(text, columns)
    assert len(first_column(text.split("12 unit(s)")[0], "task")) == 12  # six tasks x (zero_shot, linear_probe)


@pytest.mark.parametrize("columns", WIDTHS)
def test_grid_plan_and_status_fit_and_status_json_has_the_same_jobs(columns, monkeypatch, capsys, synth, tmp_path):
    monkeypatch.setenv("COLUMNS", str(columns))
    plan = tmp_path / "plan.yaml"
    text = printed(capsys, ["grid", "plan", "--models", "tiny-vit,tiny-medgemma", "--tasks", "synth", "--data-root",
                            str(synth), "--output-path", str(tmp_path / "results"), "--list", "-o", str(plan)])
    fits(text.split("plan: ")[0], columns)  # the table; the summary below it is prose
    text = printed(capsys, ["grid", "status", str(plan)])
    fits(text, columns)
    jobs = json.loads(printed(capsys, ["grid", "status", str(plan), "--json"]))
    assert first_column(text.split("jobs: ")[0], "job") == [j["job"] for j in jobs]
    assert {j["state"] for j in jobs} == {"missing"}


def report():
    binary = {"task": "glaucoma_synth_desktop_with_a_long_name", "method": "linear_probe", "n": 120, "n_pos": 31,
              "metrics": {"auroc": 0.8123, "auprc": 0.6, "accuracy": 0.75, "ece": None}, "proxy": True,
              "underpowered": True}
    classes = {"task": "funbench_l4c_dr_grading_synth_desktop", "method": "multiple_choice", "n": 60,
               "output_type": "multiclass", "extra": {"random_guess": {"funbench_f1": 0.2}},
               "metrics": {"funbench_f1": 0.41, "accuracy": 0.5, "qw_kappa": None}}
    group = {"group": "synth", "method": "linear_probe", "metrics": {"auroc": 0.8}, "ci": {"auroc": [0.7, 0.9]},
             "tasks": ["a", "b"]}
    return SimpleNamespace(results=[binary, classes], groups=[group], model_dir=Path("/results/tiny-vit"),
                           finished=["x"], skipped=[], failed={}, skipped_by_task={}, trackers_failed={})


@pytest.mark.parametrize("columns", WIDTHS)
def test_the_run_summary_fits_and_its_json_has_the_same_rows(columns, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", str(columns))
    print_summary(report())
    text = capsys.readouterr().out
    fits(text.split("results: ")[0], columns)  # the closing line names a path, whatever its length
    rows = [line.split() for line in text.splitlines()]
    if columns == 200:  # a table; at 60 its rows do not fit side by side and become blocks
        assert rows[0] == ["task", "method", "n", "n_pos", "auroc", "auprc", "acc", "ece"]
        assert rows[1] == ["glaucoma_synth_desktop_with_a_long_name", "linear_probe", "120", "31", "0.812", "0.600",
                           "0.750", "-", "proxy", "underpowered"]
    else:
        assert rows[0] == ["glaucoma_synth_desktop_with_a_long_name"] and rows[1] == ["method:", "linear_probe"]
    assert "0.410" in text and all(part in text for part in ("0.800", "[0.700,", "0.900]"))
    listed = summary_json(report())
    assert listed["binary"] == [{"task": "glaucoma_synth_desktop_with_a_long_name", "method": "linear_probe",
                                 "n": 120, "n_pos": 31, "auroc": 0.8123, "auprc": 0.6, "acc": 0.75, "ece": None,
                                 "flags": "proxy underpowered"}]
    assert listed["classes"][0]["f1"] == 0.41 and listed["groups"][0]["ci_low"] == 0.7
    assert listed["results"] == "/results/tiny-vit/results.jsonl" and listed["finished"] == 1
    assert listed["trackers_failed"] == {}


def test_off_a_terminal_the_width_is_columns_else_200_and_nothing_is_styled(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert width() == PLAIN_WIDTH == 200
    monkeypatch.setenv("COLUMNS", "77")
    assert width() == 77
    text = render(["a", "number"], [["x" * 150, 1.5], ["y", None]], align="lr", max_width=60)
    fits(text, 60)
    assert "\x1b" not in text and "-" in text.splitlines()[-1]
    assert render(["a", "b"], [["left", "right"]], max_width=200).splitlines() == ["a     b", "left  right"]


def test_a_tracker_that_failed_is_named_after_the_summary(capsys):
    failed = report()
    failed.trackers_failed = {"mlflow:http://tracker:5000": "failed at unit a.linear_probe: MlflowException: gone"}
    print_summary(failed)
    err = capsys.readouterr().err
    assert ("tracker failed: --log-to mlflow:http://tracker:5000: failed at unit a.linear_probe: MlflowException: "
            "gone; it holds the units logged before, the results on disk are complete") in err
    assert summary_json(failed)["trackers_failed"] == failed.trackers_failed

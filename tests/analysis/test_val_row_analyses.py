"""``operating-points`` and ``recalibration`` on a real run: the runner writes validation rows, so both analyses
have rows, and each threshold and scaling is the one fitted on the line's own validation rows."""

import json

import numpy as np
import pytest
from helpers.records import synthetic_root

from focus_eval.analysis.base import ReportOptions
from focus_eval.analysis.operating_points import NO_VALIDATION, load_settings, operating_points
from focus_eval.analysis.recalibration import recalibration
from focus_eval.cli import main
from focus_eval.leaderboard.conventions import collect_results
from focus_eval.metrics.operating import choose_threshold, fit_temperature

OPTIONS = ReportOptions(n_boot=50, include_proxy=True)  # a small run's tasks are underpowered


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    data = synthetic_root(tmp_path_factory, "data", n=80, seed=6)
    out = tmp_path_factory.mktemp("out")
    assert main(["--no-progress", "--num-workers", "0", "--n-boot", "50", "--model", "tiny-clip", "--tasks",
                 "referable_dr_synth_*", "--data-root", str(data), "--output-path", str(out), "--cache-dir",
                 str(out / "cache")]) == 0
    return out


def val_rows(results, task, method):
    path = results / "tiny-clip" / "samples" / f"{task}.{method}.jsonl"
    rows = [r for r in map(json.loads, path.read_text().splitlines()) if r["split"] == "val"]
    return np.array([r["label"] for r in rows], dtype=float), np.array([r["score"] for r in rows], dtype=float)


def test_operating_points_choose_thresholds_on_the_runs_val_rows(results):
    found = operating_points(collect_results([results]), OPTIONS)
    assert found.rows and not found.no_validation
    assert not any(NO_VALIDATION in n for n in found.notes)
    rules = {r.name: r for r in load_settings(None).rules}
    sources = {(r.model, r.source_task, r.rule) for r in found.rows}
    # every configuration, both synthetic tasks as sources, every rule (each task's test rows and the other's)
    assert {(m.split(" \u00b7 ")[1], t) for m, t, _ in sources} == {
        (method, f"referable_dr_synth_{d}") for method in ("linear_probe", "zero_shot") for d in ("desktop", "mobile")}
    for row in found.rows:
        y, score = val_rows(results, row.source_task, row.model.split(" \u00b7 ")[1])
        assert row.threshold == choose_threshold(y, score, rules[row.rule])


def test_recalibration_fits_on_the_runs_val_rows(results):
    found = recalibration(collect_results([results]), OPTIONS)
    assert found.rows and not found.no_validation
    temperature = [r for r in found.rows if r.scaling == "temperature"]
    assert {(r.method, r.source_task) for r in temperature} == {
        (method, f"referable_dr_synth_{d}") for method in ("linear_probe", "zero_shot") for d in ("desktop", "mobile")}
    for row in temperature:
        y, p = val_rows(results, row.source_task, row.method)
        assert row.parameters == f"T={fit_temperature(y, p):.4g}"


def test_the_report_tables_have_rows_and_no_missing_validation_note(results):
    from focus_eval.analysis import ANALYSES

    collection = collect_results([results])
    for name in ("operating-points", "recalibration"):
        table = ANALYSES.get(name).compute(collection, OPTIONS)
        assert table.rows and not any("no validation rows" in n for n in table.notes)

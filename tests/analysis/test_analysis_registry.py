"""The analyses' registry and records: lazy registration, one Table with CSV and JSON forms, the typed compare and
group lines (same JSON both ways), one underpowered rule and one interval rule for a mean of task scores."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import focus_eval
from focus_eval.analysis import ANALYSES
from focus_eval.analysis.base import Table
from focus_eval.metrics.bootstrap import mean_of_tasks, summarize
from focus_eval.results import power
from focus_eval.results.schema import (DESCRIPTIVE, CompareLine, CompareSummaryLine, GroupLine, ResultLine,
                                       UnitMeta, validate_group_dict)

PACKAGE = Path(focus_eval.__file__).resolve().parent


def test_analyses_are_registered_by_name_and_imported_on_first_use():
    code = ("import sys; from focus_eval.analysis import ANALYSES; names = ANALYSES.names(); "
            "print(names, [m for m in ('focus_eval.analysis.attribution', 'focus_eval.analysis.deltas', "
            "'focus_eval.analysis.focus_figures') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ("['funbench', 'finetune', 'ranks', 'pairwise', 'operating-points', 'recalibration', "
                           "'domain-gap', 'domain-gap-pooled', 'fairness-calibration', 'specialisation', "
                           "'zero-shot-probe', 'interfaces', 'reliability', 'prompt-sensitivity', 'corruptions', "
                           "'label-efficiency', 'label-rule-sensitivity', 'agreement'] []")
    for name in ("funbench", "finetune", "prompt-sensitivity", "corruptions", "label-efficiency",
                 "label-rule-sensitivity"):
        analysis = ANALYSES.get(name)
        assert analysis.name == name and analysis.summary and "\n" not in analysis.summary
        assert callable(analysis.compute) and analysis.inputs


def test_a_table_writes_csv_and_json_and_prints_aligned():
    table = Table(("model", "score", "flag"), title="t", notes=["n"])
    table.add("=m", 0.5, True)
    table.add("m2", None, False)
    assert table.to_csv() == "model,score,flag\n'=m,0.5,true\nm2,,false\n"
    assert json.loads(table.to_json()) == {"title": "t", "columns": ["model", "score", "flag"], "notes": ["n"],
                                           "rows": [{"model": "=m", "score": 0.5, "flag": True},
                                                    {"model": "m2", "score": None, "flag": False}]}
    assert table.to_text().splitlines()[3:] == ["=m     0.500   True", "m2         -  False", "note: n"]
    with pytest.raises(ValueError, match="needs 3 values"):
        table.add(1)


def test_compare_lines_read_back_as_written():
    delta = {"kind": "delta", "adapter": "a", "base_model": "b", "model": "b", "train_dataset": "x",
             "target": "dr", "test_task": "dr_x", "test_dataset": "x", "in_domain": True, "method": "prompt",
             "metric": "auroc", "base": 0.7, "ft": 0.8, "delta": 0.1, "ci": [0.05, 0.15], "p": 0.01, "q": 0.02,
             "n": 300, "n_pos": 60, "n_boot": 100, "seed": 0, "ci_method": "paired", "p_method": "pm",
             "proxy": False, "underpowered": False, "n_unpaired": 0, "n_label_mismatch": 0}
    summary = {"kind": "summary", "metric": "auroc", "domain": "ood", "mean_delta": 0.1, "ci": [0.0, 0.2],
               "p": 0.04, "q": 0.05, "n_comparisons": 3, "win_rate": 1.0, "n_boot": 100, "n_boot_used": 99,
               "seed": 0, "resampling": "r", "p_method": "pm", "included": "all", "adapters": ["a"],
               "test_tasks": ["dr_x"]}
    assert json.dumps(CompareLine.from_dict(delta).to_dict()) == json.dumps(delta)
    assert json.dumps(CompareSummaryLine.from_dict(summary).to_dict()) == json.dumps(summary)
    with pytest.raises(ValueError, match="'q' must be a finite number"):
        CompareLine.from_dict({**delta, "q": "0.01"})
    assert CompareLine.from_dict({"metric": "auroc", "train_dataset": "x", "test_dataset": "y"}).in_domain is False


def test_group_lines_read_back_as_written():
    line = GroupLine(group="dr", model="m", method="linear_probe", metrics={k: None for k in (
        "auroc", "auprc", "accuracy", "f1", "precision", "recall", "ece", "brier")}, family="vm", domain="general",
        untrained=False, members=["a", "b"], tasks=["a"], excluded={"b": "proxy"}, ci_method="c", n_boot=10,
        created="2026-01-01T00:00:00Z")
    line.ci = {k: [None, None] for k in line.metrics}
    d = line.to_dict()
    validate_group_dict(d)
    assert list(d)[:3] == ["kind", "group", "model"] and GroupLine.from_dict(d).to_dict() == d
    with pytest.raises(ValueError, match="needs model, group and metrics"):
        GroupLine.from_dict({"kind": "group", "model": "m"})


def test_results_lines_and_meta_share_their_descriptive_fields():
    assert DESCRIPTIVE == ("model", "family", "domain", "untrained", "method", "task", "dataset", "target", "proxy",
                           "adapter", "task_version", "task_hash", "preset_hash")
    described = dict(zip(DESCRIPTIVE, ("m", "vm", "general", False, "linear_probe", "t", "d", "dr", False, None, 1,
                                       "th", "ph")))
    line = ResultLine(**described, n=1, n_pos=1, n_valid=1, n_unparsed=0, n_errors=0, metrics={}, ci={},
                      ci_method="patient_bootstrap", n_boot=1, fairness={}, robustness={}, created="c")
    assert list(line.to_dict())[10:12] == ["n", "n_pos"] and list(line.to_dict())[21:25] == [
        "task_version", "task_hash", "preset_hash", "created"]
    assert list(UnitMeta(**described).to_dict())[:13] == list(DESCRIPTIVE)


def test_one_underpowered_rule():
    assert power.underpowered(9) and not power.underpowered(10) and not power.underpowered(None)
    assert power.underpowered_pair(300, 4) and power.underpowered_pair(12, 60) and not power.underpowered_pair(
        300, 60)
    spelled = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value == 10 \
                    and any("POSITIVE" in getattr(t, "id", "") for t in node.targets):
                spelled.append(path.relative_to(PACKAGE).as_posix())
    assert spelled == ["results/power.py"]


def test_one_interval_rule_for_a_mean_of_task_scores():
    rng = np.random.default_rng(0)
    a, b = rng.random(101), rng.random(101)
    b[5] = np.nan
    value, ci = mean_of_tasks([a, b])
    mean = np.nanmean(np.vstack([a, b]), axis=0)
    assert (value, ci) == summarize(mean) and value == pytest.approx((a[0] + b[0]) / 2)
    assert mean_of_tasks([]) == (None, [None, None])


def test_no_leaderboard_module_but_conventions_imports_the_runner():
    found = []
    for path in (PACKAGE / "leaderboard").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("focus_eval.runner"):
                found.append(path.relative_to(PACKAGE).as_posix())
    assert set(found) <= {"leaderboard/conventions.py"}

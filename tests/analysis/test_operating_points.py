"""Operating points and recalibration: a threshold chosen on the in-domain validation rows is applied unchanged
to an external set (never refit there), endpoints are judged as the preset says, lines without validation rows
are named, and temperature scaling fitted on validation calibrates an over-confident model without moving its
AUROC."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from focus_eval.analysis import ANALYSES
from focus_eval.analysis.base import ReportOptions
from focus_eval.analysis.operating_points import load_settings
from focus_eval.cli import main
from focus_eval.errors import FocusError
from focus_eval.leaderboard.conventions import collect_results
from focus_eval.metrics.core import auroc, ece
from helpers.paired_data import rows, write_model

TASKS = {"referable_dr_home": ("home", "referable_dr"), "referable_dr_away": ("away", "referable_dr")}


def youden_by_hand(y, s):
    """Every score as a threshold (positive when score >= threshold); the highest of the best."""
    best, best_t = -np.inf, None
    for t in sorted(set(s), reverse=True):
        j = np.mean(s[y == 1] >= t) + np.mean(s[y == 0] < t) - 1
        if j > best:
            best, best_t = j, t
    return best_t


def shifted_world(tmp_path, shift=-0.25):
    rng = np.random.default_rng(2)
    y_val, y_test, y_away = (rng.permutation(np.repeat([0, 1], [n - k, k])) for n, k in ((100, 40), (120, 40),
                                                                                          (120, 50)))

    def scores(y):
        return np.clip(0.55 + 0.2 * (2 * y - 1) + rng.normal(0, 0.12, y.size), 0, 1).round(4)

    val, test, away = scores(y_val), scores(y_test), np.clip(scores(y_away) + shift, 0, 1).round(4)
    write_model(tmp_path, "m", "linear_probe", TASKS, {
        "referable_dr_home": rows("val", y_val, val) + rows("test", y_test, test),
        "referable_dr_away": rows("test", y_away, away, prefix="x")})
    return (y_val, val), (y_test, test), (y_away, away)


def read(path):
    return list(csv.DictReader(path.open()))


def test_the_in_domain_threshold_is_applied_unchanged_to_the_external_set(tmp_path):
    (y_val, val), (y_test, test), (y_away, away) = shifted_world(tmp_path / "out")
    out = tmp_path / "op.csv"
    assert main(["report", "operating-points", str(tmp_path / "out"), "--csv", str(out), "--n-boot", "50"]) == 0
    found = {(r["task"], r["rule"]): r for r in read(out)}
    t = youden_by_hand(y_val, val)
    home, away_row = found[("referable_dr_home", "youden")], found[("referable_dr_away", "youden")]
    assert away_row["source_task"] == home["source_task"] == "referable_dr_home"
    assert float(home["threshold"]) == float(away_row["threshold"]) == pytest.approx(t)
    sens_home, sens_away = np.mean(test[y_test == 1] >= t), np.mean(away[y_away == 1] >= t)
    assert float(home["sensitivity"]) == pytest.approx(sens_home)
    assert float(away_row["sensitivity"]) == pytest.approx(sens_away)
    assert float(away_row["specificity"]) == pytest.approx(np.mean(away[y_away == 0] < t))
    tp, fp = np.sum(away[y_away == 1] >= t), np.sum(away[y_away == 0] >= t)
    assert float(away_row["ppv"]) == pytest.approx(tp / (tp + fp))
    assert sens_away < sens_home - 0.2  # the shift costs sensitivity ...
    refit = youden_by_hand(y_away, away)
    assert abs(refit - t) > 0.05  # ... which a threshold refit on the external set would have hidden
    assert float(away_row["sens_low"]) <= sens_away <= float(away_row["sens_high"])
    # the away task has no validation rows of its own: it is never a source, and the notes say why
    assert not any(r["source_task"] == "referable_dr_away" for r in read(out))


def test_endpoints_are_judged_and_users_add_their_own(tmp_path):
    shifted_world(tmp_path / "out")
    preset = load_settings()
    [trial] = preset.endpoints
    assert (trial.target, trial.sensitivity, trial.specificity) == ("referable_dr", 0.85, 0.825)
    assert "npj Digital Medicine 2018" in trial.source
    extra = tmp_path / "mine.yaml"
    extra.write_text("rules:\n  - sensitivity: 0.8\nendpoints:\n  - name: lenient\n    target: referable_dr\n"
                     "    sensitivity: 0.1\n    specificity: 0.1\n")
    table = ANALYSES.get("operating-points").compute(collect_results([tmp_path / "out"]),
                                                      ReportOptions(n_boot=20, endpoints=extra))
    found = [dict(zip(table.columns, r)) for r in table.rows]
    assert {r["rule"] for r in found} == {"sensitivity>=0.8"}
    for r in found:
        meets_trial = r["sensitivity"] > 0.85 and r["specificity"] > 0.825
        assert r["meets"] == (meets_trial and r["sensitivity"] > 0.1 and r["specificity"] > 0.1)
        assert r["endpoints"] == "abramoff2018-mtmdr lenient"
    assert any("no validation rows" in n and "referable_dr_away" in n for n in table.notes)
    extra.write_text("endpoints:\n  - name: broken\n    sensitivity: 2\n")
    with pytest.raises(FocusError):
        load_settings(extra)


def test_without_validation_rows_there_is_no_row_and_the_report_says_why(tmp_path, capsys):
    rng = np.random.default_rng(0)
    y = rng.permutation(np.repeat([0, 1], [60, 40]))
    write_model(tmp_path, "m", "linear_probe", TASKS, {"referable_dr_home": rows("test", y, rng.uniform(0, 1, 100))})
    out = tmp_path / "op.csv"
    assert main(["report", "operating-points", str(tmp_path), "--csv", str(out)]) == 0
    assert read(out) == []
    assert "no validation rows" in capsys.readouterr().out


def test_temperature_scaling_calibrates_an_over_confident_model_and_keeps_its_auroc(tmp_path):
    rng = np.random.default_rng(7)

    def world(n):
        z = rng.normal(0, 1.5, n)
        y = (rng.uniform(0, 1, n) < 1 / (1 + np.exp(-z))).astype(int)
        return y, 1 / (1 + np.exp(-4 * z))  # reported log-odds four times too large

    (yv, pv), (yt, pt) = world(400), world(400)
    write_model(tmp_path, "m", "linear_probe", {"glaucoma_x": ("x", "glaucoma")},
                {"glaucoma_x": rows("val", yv, pv) + rows("test", yt, pt)})
    out = tmp_path / "recal.csv"
    assert main(["report", "recalibration", str(tmp_path), "--csv", str(out)]) == 0
    found = {r["scaling"]: r for r in read(out)}
    temp = found["temperature"]
    assert float(temp["ece"]) == pytest.approx(ece(yt, pt))
    assert float(temp["ece_recalibrated"]) < 0.5 * float(temp["ece"])
    assert float(temp["brier_recalibrated"]) < float(temp["brier"])
    assert float(temp["auroc_recalibrated"]) == pytest.approx(float(temp["auroc"]), abs=1e-12)
    assert float(temp["auroc"]) == pytest.approx(auroc(yt, pt))
    t = float(temp["parameters"].split("=")[1])
    assert 3.0 < t < 5.5  # the temperature undoes the factor of four
    assert float(found["platt"]["ece_recalibrated"]) < float(found["platt"]["ece"])

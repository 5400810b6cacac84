"""The paired statistics against computations written out here: DeLong's covariance by placement values, the
paired bootstrap of an AUROC difference replicate by replicate, Holm's adjustment, and rank intervals of two
models with the same samples."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from focus_eval.analysis import ANALYSES
from focus_eval.analysis.base import ReportOptions
from focus_eval.leaderboard.conventions import collect_results
from focus_eval.metrics.paired import delong, delong_test, holm
from focus_eval.metrics.resamples import Resamples
from helpers.paired_data import rows, write_model


def psi(x: float, y: float) -> float:
    return 1.0 if x > y else 0.5 if x == y else 0.0


def delong_reference(y, scores):
    """DeLong et al. 1988 as written: V10(X_i) = mean_j psi(X_i, Y_j), V01(Y_j) = mean_i psi(X_i, Y_j), S10 and
    S01 the sample covariances over positives and negatives, S = S10 / m + S01 / n."""
    y = np.asarray(y, dtype=bool)
    v10, v01, aucs = [], [], []
    for s in scores:
        pos, neg = s[y], s[~y]
        table = np.array([[psi(x, z) for z in neg] for x in pos])
        aucs.append(table.mean())
        v10.append(table.mean(axis=1))
        v01.append(table.mean(axis=0))
    m, n = y.sum(), (~y).sum()
    return np.array(aucs), np.cov(np.array(v10)) / m + np.cov(np.array(v01)) / n


def test_delong_covariance_equals_the_placement_value_computation():
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, 90)
    # ties within and across classes (rounded scores) exercise the midranks
    scores = np.round(np.vstack([y * 0.8 + rng.normal(0, 1, 90), y * 0.3 + rng.normal(0, 1, 90),
                                 rng.normal(0, 1, 90)]), 1)
    aucs, cov = delong(y, scores)
    ref_aucs, ref_cov = delong_reference(y, scores)
    assert np.allclose(aucs, ref_aucs, atol=1e-12, rtol=0)
    assert np.allclose(cov, ref_cov, atol=1e-9, rtol=0)
    delta, p = delong_test(y, scores[0], scores[1])
    variance = ref_cov[0, 0] + ref_cov[1, 1] - 2 * ref_cov[0, 1]
    from scipy.stats import norm
    assert delta == pytest.approx(ref_aucs[0] - ref_aucs[1])
    assert p == pytest.approx(2 * norm.sf(abs(delta) / np.sqrt(variance)), abs=1e-12)
    assert delong_test(y, scores[0], scores[0])[1] is None  # no variance, no test


def auroc_pairs(y, s, counts):
    """AUROC of the resample with ``counts`` copies of each row, by counting every (positive, negative) pair."""
    yy, ss = np.repeat(y, counts), np.repeat(s, counts)
    pos, neg = ss[yy == 1], ss[yy == 0]
    if not pos.size or not neg.size:
        return np.nan
    return np.mean([[psi(a, b) for b in neg] for a in pos])


def test_paired_bootstrap_reproduces_the_hand_computation(tmp_path):
    # 24 images, 10 positives (fewer would make the task underpowered and leave it out), ties included
    y = np.tile([1, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 0], 2)
    a = np.array([.9, .2, .7, .4, .1, .8, .35, .3, .6, .65, .5, .2, .55, .25, .75, .45, .15, .85, .3, .3, .6, .7,
                  .4, .1])
    b = np.array([.6, .5, .4, .45, .3, .7, .3, .2, .65, .4, .55, .1, .7, .35, .5, .4, .2, .6, .45, .25, .5, .5,
                  .6, .2])
    tasks = {"dr_x": ("x", "dr")}
    for name, s in (("a", a), ("b", b)):
        write_model(tmp_path, name, "linear_probe", tasks, {"dr_x": rows("test", y, s)})
    n_boot, seed = 60, 5
    table = ANALYSES.get("pairwise").compute(collect_results([tmp_path]), ReportOptions(n_boot=n_boot, seed=seed))
    [row] = [dict(zip(table.columns, r)) for r in table.rows]
    # rows in image-id order; patients are test0000.. pairs: the stream of the only task is 0
    patients = [f"testp{i // 2:04d}" for i in range(y.size)]
    weights = Resamples(patients, n_boot, seed, stream=0, point=False).matrix()
    assert (weights[:, 0::2] == weights[:, 1::2]).all() and (weights.sum(axis=1) == y.size).all()
    point = auroc_pairs(y, a, np.ones(y.size, int)) - auroc_pairs(y, b, np.ones(y.size, int))
    deltas = np.array([auroc_pairs(y, a, w.astype(int)) - auroc_pairs(y, b, w.astype(int)) for w in weights])
    deltas = deltas[np.isfinite(deltas)]
    low, high = np.percentile(deltas, [2.5, 97.5])
    p = min(1.0, 2 * min((1 + (deltas <= 0).sum()) / (deltas.size + 1), (1 + (deltas >= 0).sum()) / (deltas.size + 1)))
    assert (row["model_a"], row["model_b"]) == ("a \u00b7 linear_probe", "b \u00b7 linear_probe")
    assert row["delta"] == pytest.approx(point, abs=1e-12)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), abs=1e-12)
    assert row["p"] == pytest.approx(p, abs=1e-12)
    assert row["q"] == row["p"] and row["p_holm"] == row["p"]  # one comparison: nothing to adjust


def test_holm_steps_down_and_keeps_the_order():
    p = [0.01, 0.04, None, 0.03, 0.5]
    # sorted 0.01, 0.03, 0.04, 0.5 -> x4, x3, x2, x1 -> 0.04, 0.09, 0.08 -> max 0.09, 0.5
    assert holm(p) == pytest.approx([0.04, 0.09, None, 0.09, 0.5])


def test_identical_samples_give_equal_rank_intervals_and_half_the_first_places(tmp_path):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 80)
    s = np.clip(0.5 + 0.2 * (2 * y - 1) + rng.normal(0, 0.2, 80), 0, 1)
    tasks = {"dr_x": ("x", "dr")}
    for name in ("twin_a", "twin_b"):
        write_model(tmp_path, name, "linear_probe", tasks, {"dr_x": rows("test", y, s)})
    write_model(tmp_path, "noise", "linear_probe", tasks, {"dr_x": rows("test", y, rng.uniform(0, 1, 80))})
    out = tmp_path / "ranks.csv"
    from focus_eval.cli import main
    assert main(["report", "ranks", str(tmp_path), "--csv", str(out), "--n-boot", "300"]) == 0
    found = {(r["scope"], r["model"].split(" ")[0]): r for r in csv.DictReader(out.open())}
    for scope in ("overall", "target:dr", "task:dr_x"):
        a, b, noise = (found[(scope, m)] for m in ("twin_a", "twin_b", "noise"))
        assert (a["rank"], a["rank_low"], a["rank_high"]) == (b["rank"], b["rank_low"], b["rank_high"]) == \
               ("1", "1", "1")
        assert float(a["p_first"]) == pytest.approx(0.5, abs=0.02) and float(b["p_first"]) == pytest.approx(0.5, abs=0.02)
        assert noise["rank"] == "3" and float(noise["p_first"]) < 0.05


def test_a_close_second_is_tied_with_the_leader(tmp_path):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 60)
    base = 0.6 * (2 * y - 1) + rng.normal(0, 1, 60)
    tasks = {"dr_x": ("x", "dr")}
    for name, noise in (("first", 0.0), ("second", 0.05), ("far", 3.0)):
        write_model(tmp_path, name, "linear_probe", tasks,
                    {"dr_x": rows("test", y, 1 / (1 + np.exp(-(base + rng.normal(0, noise + 1e-9, 60)))))})
    from focus_eval.analysis.ranks import ranking
    result = ranking(collect_results([tmp_path]), ReportOptions(n_boot=200))
    status = {r.model.split(" ")[0]: r.status for r in result.scope("task:dr_x")}
    assert status["first"] in ("leader", "tied") and status["second"] in ("leader", "tied")
    assert status["far"] == ""
    json.dumps(status)

"""Fairness and quality gaps (hand-computed), minimum group sizes, the cluster bootstrap, paired deltas, BH."""

import numpy as np
import pytest

from focus_eval.metrics import bootstrap
from focus_eval.metrics.arrays import SampleArrays, pair_samples
from focus_eval.metrics.fairness import age_threshold, fairness, fairness_gaps
from focus_eval.metrics.robustness import quality_gaps, robustness

# group A (10 rows): tp 3, fn 1, fp 1, tn 5 ; group B (10 rows): tp 1, fn 1, fp 2, tn 6
Y_A = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
P_A = [1, 1, 1, 0, 1, 0, 0, 0, 0, 0]
S_A = [0.9, 0.8, 0.7, 0.2, 0.6, 0.5, 0.4, 0.3, 0.1, 0.05]  # AUROC 20/24
Y_B = [1, 1, 0, 0, 0, 0, 0, 0, 0, 0]
P_B = [1, 0, 1, 1, 0, 0, 0, 0, 0, 0]
S_B = [0.9, 0.5, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05, 0.02, 0.01]  # AUROC 15.5/16 (one tie)


def two_groups(n_a=10, n_b=10):
    y, p, s = Y_A[:n_a] + Y_B[:n_b], P_A[:n_a] + P_B[:n_b], S_A[:n_a] + S_B[:n_b]
    masks = [np.arange(n_a + n_b) < n_a, np.arange(n_a + n_b) >= n_a]
    return y, s, p, masks


def test_every_fairness_gap_hand_computed():
    y, s, p, masks = two_groups()
    gaps = fairness_gaps(y, s, p, masks)
    assert gaps["n_min"] == 10
    assert gaps["dp_gap"] == pytest.approx(0.4 - 0.3)
    assert gaps["accuracy_gap"] == pytest.approx(0.8 - 0.7)
    assert gaps["tpr_gap"] == pytest.approx(0.75 - 0.5)
    assert gaps["fpr_gap"] == pytest.approx(2 / 8 - 1 / 6)
    assert gaps["eo_gap"] == pytest.approx(0.25)
    assert gaps["auroc_gap"] == pytest.approx(15.5 / 16 - 20 / 24)


def test_gaps_are_null_below_ten_rows_per_group():
    y, s, p, masks = two_groups(n_a=10, n_b=9)
    gaps = fairness_gaps(y, s, p, masks)
    assert gaps["n_min"] == 9
    assert all(gaps[k] is None for k in gaps if k != "n_min")
    empty = fairness_gaps(y, s, p, [masks[0], np.zeros(19, dtype=bool)])
    assert empty["n_min"] == 0 and empty["dp_gap"] is None


def test_per_gap_null_when_a_group_lacks_positives_or_negatives():
    y, s, p, masks = two_groups()
    y_no_pos_b = Y_A + [0] * 10
    gaps = fairness_gaps(y_no_pos_b, s, p, masks)
    assert gaps["tpr_gap"] is None and gaps["eo_gap"] is None and gaps["auroc_gap"] is None
    assert gaps["fpr_gap"] is not None and gaps["dp_gap"] == pytest.approx(0.1)
    y_no_neg_a = [1] * 10 + Y_B
    gaps = fairness_gaps(y_no_neg_a, s, p, masks)
    assert gaps["fpr_gap"] is None and gaps["eo_gap"] is None and gaps["tpr_gap"] is not None


def test_threshold_gaps_count_only_rows_with_a_prediction():
    y, s, p, _ = two_groups()
    y, s, p = y + [0], s + [0.03], p + [None]  # group B: 11 score rows, 10 prediction rows
    masks = [np.arange(21) < 10, np.arange(21) >= 10]
    gaps = fairness_gaps(y, s, p, masks)
    assert gaps["accuracy_gap"] is not None
    p[-2] = None  # now 9 prediction rows: threshold gaps null, the score gap stays
    gaps = fairness_gaps(y, s, p, masks)
    assert gaps["accuracy_gap"] is None and gaps["dp_gap"] is None and gaps["eo_gap"] is None
    assert gaps["auroc_gap"] is not None


def test_age_threshold_is_median_and_groups_split_at_or_below():
    assert age_threshold([30.0, None, 50.0, 70.0, 90.0]) == 60.0
    assert age_threshold([None, None]) is None
    ages = [40.0] * 10 + [60.0] * 10
    y, s, p, _ = two_groups()
    arrays = SampleArrays.from_columns(y, score=s, pred=p, age=ages, sex=["male"] * 20)
    result = fairness(arrays, np.ones((1, 20)), threshold=40.0)
    assert result["age"]["threshold"] == 40.0 and result["age"]["n_min"] == 10
    assert result["age"]["dp_gap"] == pytest.approx(0.1)
    assert result["sex"]["n_min"] == 0 and result["sex"]["dp_gap"] is None
    none = fairness(arrays, np.ones((1, 20)), threshold=None)
    assert none["age"]["threshold"] is None and none["age"]["eo_gap"] is None


def test_every_quality_gap_hand_computed():
    y = [1, 1, 0, 0, 0] + [1, 0, 1, 0, 0]
    s = [0.9, 0.6, 0.4, 0.2, 0.1] + [0.8, 0.7, 0.3, 0.2, 0.2]
    p = [1, 1, 0, 0, 1] + [1, 1, 0, 0, 0]
    q = ["adequate"] * 5 + ["inadequate"] * 5
    gaps = quality_gaps(y, s, p, q)
    assert gaps["n_min"] == 5
    assert gaps["accuracy_gap"] == pytest.approx(0.8 - 0.6)
    assert gaps["f1_gap"] == pytest.approx(0.8 - 0.5)
    assert gaps["auroc_gap"] == pytest.approx(1 - 5 / 6)
    assert gaps["auprc_gap"] == pytest.approx(1 - (0.5 + 0.5 * 2 / 3))
    assert gaps["ece_gap"] == pytest.approx(0.4 - 0.24)
    small = quality_gaps(y[:9], s[:9], p[:9], q[:9])
    assert small["n_min"] == 4 and all(small[k] is None for k in small if k != "n_min")
    unknown = quality_gaps(y, s, p, [None] * 10)
    assert unknown["n_min"] == 0 and unknown["ece_gap"] is None


def test_cluster_bootstrap_keeps_patients_together_and_is_seeded():
    patients = ["a", "a", "b", "c", "c", "c", "d"]
    w = bootstrap.bootstrap_weights(patients, n_boot=200, seed=7).matrix()
    assert w.shape == (201, 7) and (w[0] == 1).all()
    w = w[1:]
    assert np.all(w[:, 0] == w[:, 1]) and np.all(w[:, 3] == w[:, 5])
    assert np.allclose(w[:, [0, 2, 3, 6]].sum(1), 4)  # as many patients drawn as there are
    assert np.array_equal(w, bootstrap.bootstrap_weights(patients, n_boot=200, seed=7).matrix()[1:])
    assert not np.array_equal(w, bootstrap.bootstrap_weights(patients, n_boot=200, seed=8).matrix()[1:])
    assert bootstrap.ci_method(["x", "y"], ["x", "y"]) == "image_bootstrap"
    assert bootstrap.ci_method(["x", "y"], ["x", "p"]) == "patient_bootstrap"


def test_percentile_interval_and_summary():
    assert bootstrap.percentile_ci(np.arange(101.0)) == pytest.approx([2.5, 97.5])
    assert bootstrap.percentile_ci(np.array([np.nan, np.nan])) == [None, None]
    assert bootstrap.summarize(np.array([np.nan, 1.0, 2.0])) == (None, [None, None])
    point, ci = bootstrap.summarize(np.array([0.5, *np.linspace(0, 1, 101)]))
    assert point == 0.5 and ci == pytest.approx([0.025, 0.975])


def test_bootstrap_p_formula():
    # #{d<=0} = 2, #{d>=0} = 4, B = 5 -> 2 * min(3/6, 5/6) = 1
    assert bootstrap.bootstrap_p(np.array([-1.0, 0.0, 1.0, 2.0, 3.0])) == pytest.approx(1.0)
    # all positive, B = 9 -> 2 * (1 + 0) / 10
    assert bootstrap.bootstrap_p(np.arange(1.0, 10.0)) == pytest.approx(0.2)
    assert bootstrap.bootstrap_p(np.zeros(4)) == 1.0  # clipped at 1
    # NaN resamples do not count in B: 19 finite negatives -> 2 * 1/20
    assert bootstrap.bootstrap_p(np.array([-1.0] * 19 + [np.nan] * 5)) == pytest.approx(0.1)
    assert bootstrap.bootstrap_p(np.array([np.nan])) is None


def test_benjamini_hochberg_hand_computed():
    assert bootstrap.bh_qvalues([0.01, 0.04, 0.03, 0.2]) == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.2])
    assert bootstrap.bh_qvalues([0.9, 0.95]) == pytest.approx([0.95, 0.95])
    assert bootstrap.bh_qvalues([0.6, 0.7, 0.8]) == pytest.approx([0.8, 0.8, 0.8])
    assert bootstrap.bh_qvalues([None, 0.5, None]) == [None, 0.5, None]
    assert bootstrap.bh_qvalues([0.5, 0.5]) == [1.0 * 0.5, 0.5]
    assert bootstrap.bh_qvalues([]) == []


def _samples(scores, labels, preds=None, patients=None):
    preds = preds or [int(s >= 0.5) for s in scores]
    patients = patients or [f"p{i // 2}" for i in range(len(scores))]
    return [{"image_id": f"i{i}", "patient_id": patients[i], "split": "test", "label": labels[i],
             "score": scores[i], "pred": preds[i], "age": None, "sex": None, "quality": None, "error": None}
            for i in range(len(scores))]


def test_paired_delta_identical_models_and_a_clear_improvement():
    rng = np.random.default_rng(0)
    labels = [int(v) for v in rng.integers(0, 2, 120)]
    noisy = [float(np.clip(0.3 * y + 0.7 * rng.random(), 0, 1)) for y in labels]
    sharp = [0.95 if y else 0.05 for y in labels]
    base, same = pair_samples(_samples(noisy, labels), list(reversed(_samples(noisy, labels))))
    result = bootstrap.paired_delta(base, same, "auroc", n_boot=300, seed=1)
    assert result["delta"] == 0.0 and result["ci"] == [0.0, 0.0] and result["p"] == 1.0
    assert result["ci_method"] == "patient_bootstrap" and result["n"] == 120
    base, tuned = pair_samples(_samples(noisy, labels), _samples(sharp, labels))
    better = bootstrap.paired_delta(base, tuned, "accuracy", n_boot=300, seed=1)
    assert better["delta"] > 0 and better["ci"][0] > 0 and better["p"] == pytest.approx(2 / 301)
    worse = bootstrap.paired_delta(tuned, base, "ece", n_boot=300, seed=1)
    assert worse["delta"] > 0  # noisy model is worse calibrated: ECE rises from sharp to noisy


def test_pairing_requires_the_same_images_and_labels():
    labels = [0, 1, 0, 1]
    with pytest.raises(ValueError, match="different images"):
        pair_samples(_samples([0.1] * 4, labels), _samples([0.1] * 3, labels[:3]))
    flipped = _samples([0.1] * 4, [1, 1, 0, 1])
    with pytest.raises(ValueError, match="disagree on the label"):
        pair_samples(_samples([0.1] * 4, labels), flipped)


def test_gap_intervals_come_with_the_gaps():
    rng = np.random.default_rng(2)
    n = 200
    y = rng.integers(0, 2, n)
    s = np.clip(0.4 * y + 0.6 * rng.random(n), 0, 1)
    arrays = SampleArrays.from_columns(y, score=s, pred=(s > 0.5).astype(int), quality=rng.choice(
        ["adequate", "inadequate"], n), patient_id=[f"p{i // 2}" for i in range(n)])
    weights = bootstrap.bootstrap_weights(arrays.patient_id, 200, 0)
    quality = robustness(arrays, weights)["quality"]
    for gap in ("accuracy_gap", "auroc_gap", "auprc_gap", "f1_gap", "ece_gap"):
        low, high = quality[f"{gap}_ci"]
        assert 0 <= low <= high and quality[gap] is not None

"""Core metrics against scikit-learn on random inputs, and hand-computed cases (ties, one class, ECE bins)."""

import numpy as np
import pytest
from sklearn import metrics as skm

from focus_eval.metrics import core


@pytest.mark.parametrize("seed", range(25))
def test_metrics_match_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 400))
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    score = np.round(rng.random(n), int(rng.integers(1, 4)))  # coarse rounding makes many ties
    pred = rng.integers(0, 2, n)
    assert core.auroc(y, score) == pytest.approx(skm.roc_auc_score(y, score), abs=1e-12)
    assert core.auprc(y, score) == pytest.approx(skm.average_precision_score(y, score), abs=1e-12)
    assert core.brier(y, score) == pytest.approx(skm.brier_score_loss(y, score), abs=1e-12)
    assert core.accuracy(y, pred) == pytest.approx(skm.accuracy_score(y, pred), abs=1e-12)
    assert core.precision(y, pred) == pytest.approx(skm.precision_score(y, pred, zero_division=0), abs=1e-12)
    assert core.recall(y, pred) == pytest.approx(skm.recall_score(y, pred), abs=1e-12)
    assert core.f1(y, pred) == pytest.approx(skm.f1_score(y, pred), abs=1e-12)


def test_weighted_batch_equals_repeating_rows():
    rng = np.random.default_rng(3)
    y, score, pred = rng.integers(0, 2, 50), np.round(rng.random(50), 1), rng.integers(0, 2, 50)
    weights = rng.integers(0, 4, (6, 50)).astype(float)
    for name, (function, column) in core.METRIC_FUNCTIONS.items():
        values = score if column == "score" else pred
        batch = function(y, values, weights)
        for b in range(6):
            idx = np.repeat(np.arange(50), weights[b].astype(int))
            single = function(y[idx], values[idx])[0]
            assert batch[b] == pytest.approx(single, nan_ok=True), name


def test_auroc_counts_ties_half():
    assert core.auroc([0, 1], [0.5, 0.5]) == 0.5
    # positive 0.8 beats both negatives, positive 0.4 ties one (0.5) and beats one -> (2 + 1.5) / 4
    assert core.auroc([1, 1, 0, 0], [0.8, 0.4, 0.4, 0.1]) == pytest.approx(0.875)
    assert core.auroc([1, 0, 1, 0], [0.9, 0.1, 0.2, 0.3]) == pytest.approx(0.75)


def test_auprc_is_stepwise_average_precision():
    # ranks: 0.9 (pos) -> P=1, R=.5 ; 0.7 (neg) ; 0.3 (pos) -> P=2/3, R=1  => AP = .5*1 + .5*2/3
    assert core.auprc([1, 0, 1, 0], [0.9, 0.7, 0.3, 0.1]) == pytest.approx(0.5 + 1 / 3)
    # a tie between a positive and a negative is one threshold: precision 1/2 for that step
    assert core.auprc([1, 0], [0.5, 0.5]) == pytest.approx(0.5)


def test_single_class_and_empty_inputs_give_none():
    for function in (core.auroc, core.auprc, core.ece):
        assert function([1, 1, 1], [0.2, 0.5, 0.9]) is None
        assert function([0, 0], [0.2, 0.5]) is None
        assert function([], []) is None
    assert core.brier([1, 1], [1.0, 0.5]) == pytest.approx(0.125)  # defined with one class
    assert core.accuracy([], []) is None and core.brier([], []) is None and core.precision([], []) is None


def test_zero_division_rules():
    # nothing predicted positive: precision 0, recall 0, f1 0 (positives exist)
    assert core.precision([1, 0, 1], [0, 0, 0]) == 0.0
    assert core.recall([1, 0, 1], [0, 0, 0]) == 0.0
    assert core.f1([1, 0, 1], [0, 0, 0]) == 0.0
    # no positive label: recall and f1 undefined, precision 0 when something was called positive
    assert core.recall([0, 0], [1, 0]) is None
    assert core.f1([0, 0], [1, 0]) is None
    assert core.precision([0, 0], [1, 0]) == 0.0
    assert core.precision([0, 0], [0, 0]) == 0.0


def test_ece_hand_computed_with_bin_edges():
    # bins: 0.05 -> 0 ; 0.15 -> 1 ; 1.0 and 0.95 -> 9 (p = 1 goes to the last bin)
    # sum |B|/n |mean p - mean y| = (0.05 + 0.85 + 2 * |0.975 - 0.5|) / 4
    assert core.ece([0, 1, 1, 0], [0.05, 0.15, 1.0, 0.95]) == pytest.approx(1.85 / 4)
    # 0.55 -> bin 5 (mean y .5), 0.45 -> bin 4 (mean y .5): 2/4 * .05 + 2/4 * .05
    assert core.ece([0, 1, 0, 1], [0.55, 0.55, 0.45, 0.45]) == pytest.approx(0.05)
    # 0.5 and 0.55 share bin 5: one bin, |0.525 - 0.5|
    assert core.ece([0, 1, 0, 1], [0.55, 0.55, 0.5, 0.5]) == pytest.approx(0.025)
    # a perfectly calibrated bin gives 0
    assert core.ece([1, 0, 1, 0] * 5, [0.5] * 20) == pytest.approx(0.0)


def test_ece_is_positive_class_not_top_label():
    # top-label ECE would treat p = 0.1, y = 0 as confident and correct; positive-class ECE sees |0.1 - 0|
    assert core.ece([0, 1], [0.1, 0.9]) == pytest.approx(0.1)


def test_bad_inputs_are_rejected():
    with pytest.raises(ValueError, match="labels must be 0 or 1"):
        core.auroc([0, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        core.ece([0, 1], [0.1, 1.2])
    with pytest.raises(ValueError, match="differ in length"):
        core.accuracy([0, 1], [1])
    with pytest.raises(ValueError, match="predictions must be 0 or 1"):
        core.f1([0, 1], [0.3, 1])

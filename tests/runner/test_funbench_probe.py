"""Linear probe: C chosen by validation log-loss (binary and multinomial), the AUROC rule behind a flag, and the
criterion recorded."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss as sk_log_loss
from sklearn.preprocessing import StandardScaler

from focus_eval.errors import FocusError
from focus_eval.runner.methods.linear_probe import C_GRID, fit_predict, fit_predict_multilabel, log_loss
from focus_eval.runner.run import RunOptions


def _data(n_classes: int, seed: int = 0, n: int = 240, d: int = 12):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    centres = rng.normal(0, 0.9, (n_classes, d))
    x = centres[y] + rng.normal(0, 1.0, (n, d))
    return (x[:120], y[:120]), (x[120:180], y[120:180]), (x[180:], y[180:])


def _reference_val_losses(train, val):
    scaler = StandardScaler().fit(train[0])
    out = {}
    for c in C_GRID:
        clf = LogisticRegression(C=c, class_weight="balanced", max_iter=2000, random_state=0)
        clf.fit(scaler.transform(train[0]), train[1])
        out[c] = sk_log_loss(val[1], clf.predict_proba(scaler.transform(val[0])), labels=clf.classes_)
    return out


@pytest.mark.parametrize("n_classes", [2, 4])
def test_c_is_the_one_with_the_lowest_validation_log_loss(n_classes):
    train, val, test = _data(n_classes)
    result = fit_predict(*train, *val, test[0], n_classes=n_classes)
    expected = _reference_val_losses(train, val)
    assert result.info["c_selection"] == "val_log_loss" and result.info["probe_select"] == "log_loss"
    assert result.info["C"] == min(expected, key=lambda c: (expected[c], c))
    recorded = result.info["val_log_loss"]
    assert {float(k): v for k, v in recorded.items()} == pytest.approx(expected, rel=1e-9)
    assert result.probs.shape == (len(test[0]), n_classes)
    np.testing.assert_allclose(result.probs.sum(axis=1), 1.0)
    assert np.array_equal(result.preds, result.probs.argmax(axis=1))


def test_the_auroc_rule_stays_available_and_is_recorded():
    train, val, test = _data(2, seed=3)
    result = fit_predict(*train, *val, test[0], select="auroc")
    assert result.info["c_selection"] == "val_auroc" and "val_log_loss" not in result.info
    figures = {float(k): v for k, v in result.info["val_auroc"].items()}
    best = max(figures.values())
    assert result.info["C"] == min(c for c, v in figures.items() if v == best)  # ties: smaller C
    with pytest.raises(FocusError, match="unknown probe selection"):
        fit_predict(*train, *val, test[0], select="accuracy")
    with pytest.raises(FocusError, match="probe_select"):
        RunOptions(model="m", tasks="t", probe_select="brier")


def test_log_loss_matches_scikit_learn_and_a_class_missing_from_train_gets_zero_probability():
    y = np.array([0, 2, 1, 2])
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.3, 0.4, 0.3], [0.25, 0.25, 0.5]])
    assert log_loss(y, probs) == pytest.approx(sk_log_loss(y, probs))
    train, val, test = _data(3, seed=5)
    keep = train[1] != 1  # class 1 never seen in training
    result = fit_predict(train[0][keep], train[1][keep], *val, test[0], n_classes=3)
    assert np.all(result.probs[:, 1] == 0) and result.info["val_log_loss"] is not None


def test_multilabel_probe_fits_one_probe_per_class():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 6))
    y = np.stack([(x[:, 0] > 0).astype(int), (x[:, 1] > 0.5).astype(int), np.zeros(200, int)], axis=1)
    result = fit_predict_multilabel(x[:100], y[:100], x[100:150], y[100:150], x[150:], select="log_loss")
    assert result.probs.shape == (50, 3) and np.all(result.probs[:, 2] == 0)
    assert result.info["per_class"]["2"]["c_selection"].startswith("constant")
    assert np.mean(result.preds[:, 0] == y[150:, 0]) > 0.8

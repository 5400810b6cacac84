"""Multi-class metrics against hand-computed values and scikit-learn: FunBench's F1 (harmonic mean of sensitivity
and specificity, averaged over classes), quadratic-weighted kappa, macro precision/recall/F1, the exact
random-guess baseline, the confusion matrix; and a multi-class unit scored into a valid results line."""

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, precision_recall_fscore_support

from focus_eval.metrics.bootstrap import bootstrap_weights
from focus_eval.metrics.classes import ClassArrays, class_metrics, confusion, random_guess
from focus_eval.results.schema import (CLASS_METRICS, SampleLine, UnitMeta, validate_result_dict,
                                       validate_sample_dict)
from focus_eval.scoring import evaluate_samples


def rows(labels, preds, probs=None, options=None, **extra):
    out = []
    for i, (y, p) in enumerate(zip(labels, preds)):
        out.append({"image_id": f"i{i}", "patient_id": f"p{i // 2}", "split": "test", "label": y, "score": None,
                    "pred": p, "age": 50.0 + i, "sex": ("male", "female")[i % 2], "quality": "adequate",
                    "error": None, "output_type": "multiclass",
                    "probs": None if probs is None else list(probs[i]),
                    **({} if options is None else {"options": options[i]}), **extra})
    return out


def arrays(labels, preds, k, **kw):
    return ClassArrays.from_samples(rows(labels, preds, **kw), k, ordinal=kw.pop("ordinal", False))


LABELS = [0, 0, 1, 1, 2, 2, 2, 0]
PREDS = [0, 1, 1, 1, 2, 0, None, 0]  # one unanswered row


def point(a):
    return class_metrics(a, np.ones((1, a.n)))[0]


def test_funbench_f1_is_the_class_mean_of_the_harmonic_mean_of_sensitivity_and_specificity():
    m = point(arrays(LABELS, PREDS, 3))
    # by hand: class 0 sens 2/3 spec 4/5; class 1 sens 1 spec 5/6; class 2 sens 1/3 spec 1 (the unanswered
    # row is a miss for class 2 and a false alarm for nobody)
    f1 = [2 * (2 / 3) * (4 / 5) / (2 / 3 + 4 / 5), 2 * 1 * (5 / 6) / (1 + 5 / 6), 2 * (1 / 3) * 1 / (1 / 3 + 1)]
    assert m["funbench_f1"] == pytest.approx(np.mean(f1))
    assert m["accuracy"] == pytest.approx(5 / 8)
    assert m["qw_kappa"] is None  # not an ordinal task


def test_macro_scores_and_kappa_match_scikit_learn():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, 80)
    pred = np.clip(y + rng.integers(-1, 2, 80), 0, 4)
    a = ClassArrays.from_samples(rows(y.tolist(), pred.tolist()), 5, ordinal=True)
    m = point(a)
    p, r, f, _ = precision_recall_fscore_support(y, pred, average="macro", zero_division=0)
    assert (m["macro_precision"], m["macro_recall"], m["macro_f1"]) == pytest.approx((p, r, f))
    assert m["qw_kappa"] == pytest.approx(cohen_kappa_score(y, pred, weights="quadratic"))
    # sensitivity and specificity per class, from scikit-learn's recall of each class against the rest
    per_class = []
    for k in range(5):
        sens = precision_recall_fscore_support(y == k, pred == k, average="binary", zero_division=0)[1]
        spec = precision_recall_fscore_support(y != k, pred != k, average="binary", zero_division=0)[1]
        per_class.append(2 * sens * spec / (sens + spec) if sens + spec else 0.0)
    assert m["funbench_f1"] == pytest.approx(np.mean(per_class))


def test_kappa_leaves_unanswered_rows_out():
    a = ClassArrays.from_samples(rows([0, 1, 2, 2, 1], [0, 2, 2, None, 1]), 3, ordinal=True)
    assert point(a)["qw_kappa"] == pytest.approx(cohen_kappa_score([0, 1, 2, 1], [0, 2, 2, 1], weights="quadratic"))


def test_random_guess_baseline_is_exact_from_options_and_class_frequencies():
    # uniform over all K classes: sensitivity 1/K, specificity 1 - 1/K for every class
    a = arrays([0, 1, 2, 3, 4] * 4, [0] * 20, 5)
    guess = random_guess(a)
    assert guess["funbench_f1"] == pytest.approx(2 * (1 / 5) * (4 / 5))  # 0.32: FunBench's DR-grading row
    assert guess["accuracy"] == pytest.approx(0.2)
    # two options per question (the truth and one distractor) on a three-class task
    options = [[0, 1], [1, 2], [2, 0], [0, 2]]
    b = arrays([0, 1, 2, 0], [0, 1, 2, 0], 3, options=options)
    g = random_guess(b)
    assert g["accuracy"] == pytest.approx(0.5)
    # by hand, expected counts: class 0 (truths rows 0, 3): TP 1, FN 1; negatives rows 1, 2: row 2 offers 0
    # -> FP 0.5, TN 1.5. class 1 (row 1): TP .5 FN .5; negatives: row 0 offers 1 -> FP .5, TN 2.5.
    # class 2 (row 2): TP .5 FN .5; negatives: rows 1 and 3 offer 2 -> FP 1, TN 2.
    def hm(s, t):
        return 2 * s * t / (s + t)
    expected = np.mean([hm(1 / 2, 1.5 / 2), hm(0.5, 2.5 / 3), hm(0.5, 2 / 3)])
    assert g["funbench_f1"] == pytest.approx(expected)
    # binary laterality: 0.5, as in FunBench's table
    assert random_guess(arrays([0, 1, 1, 0, 1], [0] * 5, 2))["funbench_f1"] == pytest.approx(0.5)


def test_multilabel_metrics_and_baseline():
    labels = [[0, 2], [1], [0], [2]]
    preds = [[0], [1], [0, 1], None]
    samples = [{**r, "output_type": "multilabel"} for r in rows(labels, preds)]
    a = ClassArrays.from_samples(samples, 3, multilabel=True)
    m = point(a)
    assert m["accuracy"] == pytest.approx(1 / 4)  # only row 1 is exactly right
    # class 0: truths rows 0, 2 both found, negatives rows 1, 3 clean -> 1; class 1: truth row 1 found,
    # negatives 0, 2, 3 with a false alarm on row 2 -> sens 1, spec 2/3; class 2: truths rows 0, 3 missed -> 0
    assert m["funbench_f1"] == pytest.approx(np.mean([1.0, 2 * (2 / 3) / (1 + 2 / 3), 0.0]))
    y = np.array([[1, 0, 1], [0, 1, 0], [1, 0, 0], [0, 0, 1]])
    p = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 0]])
    ref = precision_recall_fscore_support(y, p, average="macro", zero_division=0)
    assert (m["macro_precision"], m["macro_recall"], m["macro_f1"]) == pytest.approx(ref[:3])
    guess = random_guess(a)
    assert guess["accuracy"] == pytest.approx(1 / 8)  # three options each, every subset equally likely
    assert confusion(a, ["a", "b", "c"])["counts"]["b"] == {"tp": 1, "fp": 1, "fn": 0, "tn": 2}


def test_confusion_matrix_has_an_unanswered_column():
    c = confusion(arrays(LABELS, PREDS, 3), ["x", "y", "z"])
    assert c["columns"] == ["x", "y", "z", "unanswered"]
    assert c["counts"] == [[2, 1, 0, 0], [0, 2, 0, 0], [1, 0, 1, 1]]


def test_probability_metrics_and_bootstrap_intervals():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 60)
    logits = rng.normal(size=(60, 3)) + 2.0 * np.eye(3)[y]
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    a = ClassArrays.from_samples(rows(y.tolist(), probs.argmax(1).tolist(), probs=probs), 3)
    metrics, ci = class_metrics(a, bootstrap_weights(a.patient_id, 200, 0))
    brier = np.mean(((probs - np.eye(3)[y]) ** 2).sum(1))
    assert metrics["brier"] == pytest.approx(brier)
    assert 0.5 < metrics["macro_auroc"] <= 1.0 and 0 <= metrics["ece"] <= 1
    for name in CLASS_METRICS:
        if metrics[name] is not None:
            low, high = ci[name]
            assert low <= metrics[name] + 1e-9 and metrics[name] - 1e-9 <= high, name


def meta(**extra):
    return UnitMeta.from_dict({
        "model": "m", "family": "vm", "domain": "general", "untrained": False, "method": "linear_probe",
        "task": "funbench_l4c_dr_grading_x", "dataset": "x", "target": "dr_grade", "proxy": False, "adapter": None,
        "task_version": 1, "task_hash": "h", "preset_hash": "p", "n_boot": 50, "seed": 0,
        "extra": {"output_type": "multiple_choice", "classes": ["g0", "g1", "g2"], "multilabel": False,
                  "ordinal": True, **extra}})


def test_a_multiclass_unit_scores_into_a_valid_results_line_and_binary_lines_stay_as_they_were():
    samples = rows(LABELS, PREDS)
    for s in samples:
        validate_sample_dict(s)
    result = evaluate_samples(samples, meta()).to_dict()
    validate_result_dict(result)
    assert result["output_type"] == "multiple_choice" and set(result["metrics"]) == set(CLASS_METRICS)
    assert result["n"] == 8 and result["n_pos"] == 5 and result["extra"]["classes"] == ["g0", "g1", "g2"]
    assert result["extra"]["confusion_matrix"]["counts"][2] == [1, 0, 1, 1]
    assert result["extra"]["random_guess"]["funbench_f1"] == pytest.approx(4 / 9)
    assert result["fairness"]["sex"]["tpr_gap"] is None and "accuracy_gap" in result["fairness"]["sex"]
    with pytest.raises(ValueError, match="metrics"):
        validate_result_dict({**result, "metrics": {"auroc": 0.5}})
    binary = SampleLine("a", "a", "test", 1, 0.3, 1)
    assert "output_type" not in binary.to_dict(True) and "probs" not in binary.to_dict(False)
    with pytest.raises(ValueError, match="label"):
        validate_sample_dict({**samples[0], "label": [2, 1]})  # a set of classes is written sorted

"""The expected FunBench F1 of an actual uniform random run (``metrics.chance``): equal to the mean over every
possible run, enumerated here with the package's own F1, for single- and multi-answer questions with any options
shown; never above the plug-in value (F1 of the expected counts); the seeded-run fallback agrees with the exact
value and says so; and every results line records it beside the plug-in value."""

from __future__ import annotations

from itertools import product
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from focus_eval.metrics.chance import (EXACT, SIMULATED, ClassChance, expected_run, form_chances, row_chances)
from focus_eval.metrics.classes import funbench_f1_batch, random_guess


def enumerated(y: np.ndarray, options: np.ndarray, multilabel: bool) -> float:
    """The mean FunBench F1 over every run of the guesser, each weighted by its chance."""
    choices = []
    for shown in options:
        idx = list(np.flatnonzero(shown))
        if multilabel:  # every subset of the shown options, each option taken with chance 1/2
            choices.append([(tuple(k for k, take in zip(idx, mask) if take), 0.5 ** len(idx))
                            for mask in product((0, 1), repeat=len(idx))])
        else:
            choices.append([((k,), 1 / len(idx)) for k in idx])
    total = 0.0
    for run in product(*choices):
        pred = np.zeros_like(y, dtype=float)
        weight = 1.0
        for row, (picked, chance) in enumerate(run):
            pred[row, list(picked)] = 1
            weight *= chance
        total += weight * float(funbench_f1_batch(y, pred, np.ones((1, len(y))))[0])
    return total


def onehot(labels, k):
    y = np.zeros((len(labels), k))
    y[np.arange(len(labels)), labels] = 1
    return y


def test_two_options_one_positive_is_a_third_not_a_half():
    # one positive among three negatives, two options: the positive class scores 0 or H(1, 1/2..) per run
    y = onehot([1, 0, 0, 0], 2)
    exact = expected_run(row_chances(y, np.ones_like(y), False))
    assert exact.method == EXACT and exact.value == pytest.approx(enumerated(y, np.ones_like(y), False))
    assert exact.value < 0.5 - 0.05


def test_single_answer_with_distractors_matches_enumeration():
    y = onehot([0, 1, 2, 0, 2], 3)
    options = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]])
    assert expected_run(row_chances(y, options, False)).value == pytest.approx(enumerated(y, options, False))


def test_multi_answer_matches_enumeration():
    y = np.array([[1, 0, 1], [0, 1, 0], [1, 0, 0], [0, 0, 1]])
    options = np.array([[1, 1, 1], [1, 1, 0], [1, 0, 1], [0, 1, 1]])
    assert expected_run(row_chances(y, options, True)).value == pytest.approx(enumerated(y, options, True))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_exact_value_is_the_mean_over_every_run_and_never_above_the_plug_in(data):
    k = data.draw(st.integers(2, 3))
    n = data.draw(st.integers(1, 5))
    multilabel = data.draw(st.booleans())
    if multilabel:
        y = np.array(data.draw(st.lists(st.lists(st.integers(0, 1), min_size=k, max_size=k).filter(any),
                                        min_size=n, max_size=n)))
    else:
        y = onehot(data.draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)), k)
    extra = np.array(data.draw(st.lists(st.lists(st.integers(0, 1), min_size=k, max_size=k), min_size=n,
                                        max_size=n)))
    options = np.maximum(y, extra)  # the truth is always shown
    run = expected_run(row_chances(y, options, multilabel))
    assert run.value == pytest.approx(enumerated(y, options, multilabel), abs=1e-12)
    arrays = SimpleNamespace(y=y, options=options, error=np.zeros(n, dtype=bool), multilabel=multilabel)
    guess = random_guess(arrays)
    assert guess["funbench_f1_run"] == pytest.approx(run.value)
    assert guess["funbench_f1_run"] <= guess["funbench_f1"] + 1e-12  # F1 is concave: a run scores below the plug-in


def test_seeded_runs_where_the_grid_is_too_large_and_say_so():
    chances = form_chances([5, 30, 7, 60], options=4)
    exact = expected_run(chances)
    simulated = expected_run(chances, max_cells=0, runs=20000, seed=3)
    assert simulated.method == SIMULATED and simulated.runs == 20000 and "20000 seeded runs, seed 3" in \
        simulated.describe()
    assert simulated.value == pytest.approx(exact.value, abs=0.005)
    assert expected_run(chances, max_cells=0, runs=20000, seed=3) == simulated  # the seed fixes it
    with pytest.raises(ValueError, match="at least 1000"):
        expected_run(chances, max_cells=0, runs=999)


def test_large_sets_approach_the_plug_in_and_small_ones_fall_below():
    # four classes of 250, all four options shown: the plug-in is 2 * 1/4 * 3/4 = 0.375
    assert expected_run(form_chances([250] * 4, options=4)).value == pytest.approx(0.375, abs=0.002)
    # IDRiD's grading test set (34, 5, 32, 19, 13), five options: the grade with 5 images pulls the value down
    idrid = expected_run(form_chances([34, 5, 32, 19, 13], options=5)).value
    assert 0.29 < idrid < 0.32 - 0.01


def test_a_class_without_negatives_scores_its_expected_sensitivity():
    assert expected_run([ClassChance({0.25: 7}, {})]).value == pytest.approx(0.25)  # FunBench L1a: 1 of 4 options
    assert expected_run([ClassChance({}, {0.5: 3})]).value is None  # no class with a positive


def test_a_bad_question_form_is_refused():
    with pytest.raises(ValueError, match="at least one option"):
        form_chances([3, 4], options=0)
    with pytest.raises(ValueError, match="shown share"):
        form_chances([3, 4], options=2, shown=1.5)

"""Options at their edges are usage errors at parse time (exit 2, naming the option and what it expects),
before anything is loaded: --n-boot 0, negative or huge, a negative --seed or --num-workers, a bad --limit."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from focus_eval import validators
from focus_eval.cli import main

RUN = ["--model", "tiny-vit", "--tasks", "dr_synth_desktop"]


@pytest.mark.parametrize("argv,expected", [
    ([*RUN, "--n-boot", "0"], "argument --n-boot: expected 1 to 100000 resamples, got '0'"),
    ([*RUN, "--n-boot", "-5"], "argument --n-boot: expected 1 to 100000 resamples, got '-5'"),
    ([*RUN, "--n-boot", "10000000000"], "argument --n-boot: expected 1 to 100000 resamples"),
    ([*RUN, "--n-boot", "many"], "argument --n-boot: expected a whole number, got 'many'"),
    ([*RUN, "--seed", "-1"], "argument --seed: expected a seed from 0 to 4294967295, got '-1'"),
    ([*RUN, "--num-workers", "-2"], "argument --num-workers: expected 0 to 256 worker processes, got '-2'"),
    ([*RUN, "--limit", "0"], "argument --limit: expected a number of images"),
    ([*RUN, "--limit", "-3"], "argument --limit: expected a number of images"),
    (["grid", "plan", "--n-boot", "0"], "argument --n-boot: expected 1 to 100000 resamples"),
    (["grid", "plan", "--seed", "-4"], "argument --seed: expected a seed"),
    (["grid", "plan", "--limit", "0"], "argument --limit: expected a number of images"),
    (["compare", "--base", "a", "--ft", "b", "--n-boot", "-1"], "argument --n-boot: expected 1 to 100000 resamples"),
    (["datasets", "export", "brset", "-o", "x.csv", "--seed", "-1"], "argument --seed: expected a seed"),
    (["synth", "--workers", "0"], "argument --workers: expected 1 or more"),
])
def test_out_of_range_options_are_usage_errors(argv, expected, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err


@given(st.integers(min_value=-10 ** 12, max_value=10 ** 12))
def test_n_boot_accepts_exactly_one_to_the_maximum(value):
    if 1 <= value <= validators.MAX_N_BOOT:
        assert validators.n_boot(str(value)) == value
    else:
        with pytest.raises(argparse.ArgumentTypeError):
            validators.n_boot(str(value))


@given(st.integers(min_value=-10 ** 12, max_value=10 ** 12))
def test_seed_and_counts_accept_exactly_their_ranges(value):
    for check, ok in ((validators.seed, 0 <= value < 2 ** 32), (validators.non_negative, value >= 0),
                      (validators.positive, value >= 1)):
        if ok:
            assert check(str(value)) == value
        else:
            with pytest.raises(argparse.ArgumentTypeError):
                check(str(value))


def test_n_boot_is_bounded_for_usefulness_not_memory():
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        validators.n_boot(str(validators.MAX_N_BOOT + 1))
    assert "add nothing to a 95% interval" in str(refused.value) and "memory" not in str(refused.value)

"""Every run option's syntax and range is checked where it is declared (``focus_eval/options.py``), before
anything runs, in one message style: on the command line a usage error naming the flag (exit 2), in a --config
file the file and key, through the Python API the option. Before, ``--corruptions "blur:"`` ran every severity,
``--corruptions ","`` (or ``--methods ","``, ``--prompt-variants ","``) none or all without a word,
``--train-seeds 1000000`` and ``--zs-scale nan`` were accepted."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from focus_eval import validators
from focus_eval.cli import main
from focus_eval.errors import FocusError
from focus_eval.options import DECLARED, check_keywords, config_values

RUN = ["--model", "tiny-clip", "--tasks", "dr_synth_desktop", "--check"]


@pytest.mark.parametrize("flag, value, expected", [
    ("--corruptions", "blur:", "expected a severity of 1, 2 or 3 after 'blur:', got ''"),
    ("--corruptions", "blur:0", "expected a severity of 1, 2 or 3 after 'blur:', got '0'"),
    ("--corruptions", "blur::3", "after 'blur:', got ':3'"),
    ("--corruptions", ",", "expected one or more names separated by commas, got ','"),
    ("--corruptions", "blur,,jpeg", "an empty name in 'blur,,jpeg'"),
    ("--corruptions", "fog", "unknown kind 'fog'"),
    ("--methods", ",", "expected one or more names separated by commas, got ','"),
    ("--methods", "zero_shot,", "an empty name in 'zero_shot,'"),
    ("--prompt-variants", " , ", "expected one or more names"),
    ("--label-rules", "severe,,", "an empty name"),
    ("--train-seeds", "1000000", "expected 1 to 100 draws, got '1000000'"),
    ("--train-seeds", "0", "expected 1 to 100 draws, got '0'"),
    ("--zs-scale", "nan", "expected a finite number above 0, got 'nan'"),
    ("--zs-scale", "inf", "expected a finite number above 0, got 'inf'"),
    ("--zs-scale", "-3", "expected a finite number above 0, got '-3'"),
    ("--zs-scale", "big", "expected a number, got 'big'"),
    ("--num-workers", "100000", "expected 0 to 256 worker processes, got '100000'"),
])
def test_a_malformed_or_out_of_range_option_is_a_usage_error_naming_it(flag, value, expected, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*RUN, f"{flag}={value}"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"error: argument {flag}: " in err and expected in err and "Traceback" not in err


@pytest.mark.parametrize("argv, expected", [
    (["--size", "100000"], "argument --size: expected a side of 1 to 8192 pixels, got '100000'"),
    (["--size", "0"], "argument --size: expected a side of 1 to 8192 pixels, got '0'"),
    (["--size", "big"], "argument --size: expected a whole number, got 'big'"),
    (["--size", "32", "--workers", "0"], "argument --workers: expected 1 to 256 worker processes, got '0'"),
    (["--size", "32", "--workers", "100000"], "argument --workers: expected 1 to 256 worker processes"),
])
def test_datasets_prepare_sizes_and_workers_are_bounded(argv, expected, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["datasets", "prepare", "brset", *argv])
    assert exit_.value.code == 2 and expected in capsys.readouterr().err


@pytest.mark.parametrize("key, value, expected", [
    ("corruptions", "blur:", "after 'blur:'"),
    ("corruptions", ",", "expected one or more names"),
    ("methods", ",", "expected one or more names"),
    ("methods", [], "expected one or more names"),
    ("methods", ["zero_shot", ""], "an empty name"),
    ("prompt_variants", "", "expected one or more names"),
    ("train_seeds", 1000000, "expected 1 to 100 draws"),
    ("zs_scale", float("nan"), "expected a finite number above 0"),
])
def test_files_and_keywords_get_the_same_checks_and_words(key, value, expected):
    with pytest.raises(FocusError, match=rf"^run.yaml: {key}: .*{expected}"):
        config_values({key: value}, "run.yaml")
    with pytest.raises(FocusError, match=rf"^option {key}: .*{expected}"):
        check_keywords({key: value})


def test_options_that_need_each_other_are_checked_together(capsys):
    assert main([*RUN, "--train-seeds", "3"]) == 2
    assert "--train-seeds 3: the draws are of --train-fraction's training patients" in capsys.readouterr().err
    assert main([*RUN, "--train-fraction", "0.5", "--train-seeds", "3", "--seed", str(2 ** 32 - 2)]) == 2
    assert "past the largest seed 4294967295" in capsys.readouterr().err


def test_every_value_option_that_parses_text_checks_it_at_parse_time():
    """Each option taking text from the command line has a parser (its syntax checked before anything runs),
    except those whose text is a name, path or pattern resolved later with its own error."""
    free_text = {"model", "tasks", "model_args", "data_root", "output_path", "device", "adapter", "cache_dir"}
    unchecked = [n for n, d in DECLARED.items() if d.spec.kind == "value" and d.spec.parse is None
                 and not d.spec.choices and n not in free_text]
    assert unchecked == []


KINDS = st.sampled_from([*validators.CORRUPTION_KINDS, "fog", "Blur", ""])
SEVERITY = st.sampled_from(["", ":", ":1", ":2", ":3", ":0", ":4", "::1", ": 2", ":x"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(KINDS, SEVERITY), min_size=1, max_size=4), st.sampled_from([",", ", ", " ,"]))
def test_corruption_specs_are_accepted_exactly_when_each_item_is_a_kind_with_an_optional_severity(items, sep):
    text = sep.join(kind + severity for kind, severity in items)
    valid = all(kind in validators.CORRUPTION_KINDS and severity in ("", ":1", ":2", ":3") for kind, severity in items)
    if not valid:
        with pytest.raises(argparse.ArgumentTypeError):
            validators.corruptions(text)
        return
    from focus_eval.data.corruptions import parse

    parsed = parse(validators.corruptions(text))
    expected = {(k, int(s[1:])) if s else None for k, s in items} - {None}
    expected |= {(k, n) for k, s in items if not s for n in validators.SEVERITIES}
    assert {(c.kind, c.severity) for c in parsed} == expected and len(parsed) == len(expected)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab_ ", max_size=4), min_size=1, max_size=5))
def test_name_lists_are_accepted_exactly_when_no_name_is_empty(names):
    text = ",".join(names)
    if all(n.strip() for n in names):
        assert validators.names(text).split(",") == [n.strip() for n in names]
    else:
        with pytest.raises(argparse.ArgumentTypeError):
            validators.names(text)


def test_every_corruption_kind_has_its_parameters_at_every_severity():
    from focus_eval.data.corruptions import PARAMETERS

    assert tuple(PARAMETERS) == validators.CORRUPTION_KINDS
    assert all(len(p) == len(validators.SEVERITIES) for p in PARAMETERS.values())

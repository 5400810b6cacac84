"""YAML texts and prompt templates are parsed once per process, keyed by the text itself: a task index reads
the shared base files once per task that includes them, and every index built reads the shipped files again.
What the cache gives back must be exactly what a fresh parse gives: the caller's own value, a changed file parsed
anew, an error raised every time."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from focus_eval.errors import FocusError
from focus_eval.files import PARSED_TEXT_BYTES, load_yaml
from focus_eval.task import TaskIndex
from focus_eval.task.task import compile_prompt

SCALARS = st.one_of(st.integers(-1000, 1000), st.booleans(), st.text(alphabet="abcxyz", min_size=1, max_size=6))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(st.text("abc", min_size=1, max_size=4),
                                                                        inner, max_size=3)), max_leaves=8)


@settings(max_examples=60, deadline=None)
@given(value=st.dictionaries(st.text("abcdef", min_size=1, max_size=5), VALUES, min_size=1, max_size=4))
def test_a_text_parsed_again_gives_an_equal_value_that_is_the_callers_own(value):
    text = yaml.safe_dump(value)
    first = load_yaml(text)
    assert first == value
    first.clear()  # a caller that changes its value changes nobody else's
    second = load_yaml(text)
    assert second == value and second is not first


def test_an_error_is_raised_each_time_and_a_changed_file_is_read_anew(tmp_path):
    for _ in range(2):
        with pytest.raises(yaml.YAMLError):
            load_yaml("a: [1, 2\n")
        with pytest.raises(FocusError, match="not a valid Jinja template"):
            compile_prompt("{% if %}", tmp_path / "t.yaml")
    assert compile_prompt("Is {{ target }} seen?", tmp_path / "a.yaml") is compile_prompt("Is {{ target }} seen?",
                                                                                           tmp_path / "b.yaml")
    long = "Is {{ target }} seen? " + "x" * PARSED_TEXT_BYTES  # a long text is compiled each time, never kept
    assert compile_prompt(long, tmp_path / "a.yaml") is not compile_prompt(long, tmp_path / "a.yaml")
    task = tmp_path / "t_once.yaml"
    body = ("task: t_once\ninclude: _base_dr.yaml\ndataset: idrid\nprompt: '{}'\n"
            "metadata: {{version: 1, label_rule: grade >= 1}}\n")
    task.write_text(body.format("Any retinopathy? Answer yes or no."))
    assert TaskIndex([tmp_path]).get("t_once").render_prompt(None) == "Any retinopathy? Answer yes or no."
    task.write_text(body.format("Any sign of retinopathy? Answer yes or no."))  # same folder, new text
    assert TaskIndex([tmp_path]).get("t_once").render_prompt(None) == "Any sign of retinopathy? Answer yes or no."

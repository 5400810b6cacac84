"""User YAML and Jinja cannot amplify: aliases are refused in every user file before anything expands, and a
prompt template's string operations are checked before they build, not after."""

import tracemalloc

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from focus_eval.data.cards import read_card
from focus_eval.errors import FocusError
from focus_eval.files import MAX_YAML_BYTES, load_yaml
from focus_eval.presets import read_preset_file
from focus_eval.task.config import read_yaml
from focus_eval.task.sandbox import MAX_CHARS, PromptSandbox, RenderLimit
from helpers.processes import deadline

# nine levels of ten aliases: 10**9 copies of "lol" once expanded
LAUGHS = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8))


def test_load_yaml_refuses_an_alias_and_names_where():
    with pytest.raises(yaml.YAMLError, match=r"aliases \(\*name\) are not allowed"):
        load_yaml("base: &b {x: 1}\nother: *b\n")
    with pytest.raises(yaml.YAMLError, match="aliases"):
        load_yaml("base: &b {x: 1}\nother:\n  <<: *b\n")
    assert load_yaml("anchor_only: &b {x: 1}\n") == {"anchor_only": {"x": 1}}  # an anchor alone expands nothing


def test_load_yaml_keeps_safe_types_only():
    with pytest.raises(yaml.YAMLError):
        load_yaml("x: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(yaml.YAMLError, match="at most"):
        load_yaml("x: " + "a" * (MAX_YAML_BYTES + 1))


@pytest.mark.parametrize("reader, name", [
    (read_yaml, "task.yaml"),
    (read_preset_file, "preset.yaml"),
    (read_card, "dataset.yaml"),
])
def test_billion_laughs_in_a_user_file_is_refused_fast_naming_the_file(tmp_path, reader, name):
    path = tmp_path / name
    path.write_text(LAUGHS, encoding="utf-8")
    tracemalloc.start()
    with pytest.raises(FocusError) as caught:
        reader(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert str(path) in str(caught.value) and "alias" in str(caught.value)
    assert peak < 20e6  # refused before the aliases were expanded: the work done is bounded by what was read


def render(source: str, **context) -> str:
    env = PromptSandbox()
    return env.render(env.from_string(source), context)


BIG = "{% set s = 'a' * 16000 %}{% set l = [s] * 16000 %}"


@pytest.mark.parametrize("source", [
    "{% set s = 'a' * 16000 %}{{ s|replace('a', 'b' * 16000) }}",
    "{% set s = 'a' * 16000 %}{{ s.replace('a', 'b' * 16000) }}",
    "{% set s = '\n' * 16000 %}{{ s|indent(16000) }}",
    "{% set s = '\t' * 16000 %}{{ s.expandtabs(16000) }}",
    BIG + "{{ l|join }}",
    BIG + "{{ ''.join(l) }}",
    BIG + "{{ l }}",
    BIG + "{{ 'x' ~ l }}",
    BIG + "{{ l|tojson }}",
    BIG + "{{ l|string }}",
    "{% set s = 'a' * 16000 %}{{ ('%s' * 8000)|format(*([s] * 8000)) }}",
    "{% set s = 'a' * 16000 %}{{ ('%s' * 8000) % (s,) }}",
    "{% set s = 'a' * 16000 %}{{ ('{0}' * 5000).format(s) }}",
    "{% set s = 'a' * 16000 %}{{ ('{x}' * 5000).format_map({'x': s}) }}",
    # a lazy result (map, select, a generator) is counted as it is consumed, not once it is built
    "{% set s = 'a b' * 5000 %}{{ s.split()|map('center', 16000)|list }}",
    "{% set s = 'a' * 16000 %}{{ s|list|map('center', 16000)|join }}",
    "{% set s = 'a' * 16000 %}{{ ''.join(s|list|map('center', 16000)) }}",
])
def test_growing_operations_are_refused_before_they_build(source):
    tracemalloc.start()
    try:
        with pytest.raises(RenderLimit):
            render(source)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16e6, f"{peak / 1e6:.0f} MB allocated before the refusal"


def test_lipsum_is_refused_before_it_writes_its_paragraphs():
    tracemalloc.start()
    try:
        with pytest.raises(RenderLimit, match="lipsum would build"):
            render("{{ lipsum(300, max=1000) }}")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1e6, f"{peak / 1e6:.1f} MB allocated before the refusal"
    assert 0 < len(render("{{ lipsum(2, html=False) }}")) <= 2 * 100 * 13


def test_ordinary_prompts_still_render():
    text = render("Is there {{ x|lower }} here? Options: {{ opts|join(', ') }}. {{ 'a-b'|replace('-', ' or ') }} "
                  "{{ '{0} of {1}'.format(1, 2) }} {{ '%s!'|format(x) }}{{ ' %d' % 3 }}\n{{ 'l1\nl2'|indent(2) }}",
                  x="DR", opts=["yes", "no"])
    assert text == "Is there dr here? Options: yes, no. a or b 1 of 2 DR! 3\nl1\n  l2"


PIECES = st.sampled_from([
    "'ab' * {n}", "'a{{}}' * {n}", "[x] * {n}", "x|replace('a', 'b' * {n})", "x|indent({n})", "x|center({n})",
    "(x ~ x)|replace('', '-')", "[x, x]|join('-' * {n})", "x.ljust({n})", "('%s' * {n}) % (x,)",
    "('{{0}}' * {n}).format(x)", "x|wordwrap(3)", "[x] * {n}|tojson", "x|list|map('center', {n})|list",
])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(PIECES, st.integers(0, 20_000)), min_size=1, max_size=4))
def test_any_chain_of_growing_operations_stays_bounded(steps):
    """Whatever a template chains, it renders within MAX_CHARS or stops with a RenderLimit, and never allocates
    far beyond the bounds on the way."""
    source = "{% set x = 'a' * 100 %}"
    for piece, n in steps:
        source += "{% set x = " + piece.format(n=n) + " %}"
    source += "{{ x }}"
    tracemalloc.start()
    try:
        try:
            out = render(source)
            assert len(out) <= MAX_CHARS
        except MemoryError:
            raise
        except Exception:  # a RenderLimit, or a type a filter does not take: either way nothing was built
            pass
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 24e6, source


def test_a_growing_filter_on_a_list_is_checked_on_the_lists_text():
    """``replace`` and ``indent`` write a list out before they work on it: the growth is that text's."""
    tracemalloc.start()
    try:
        for source in ("{% set x = ['a' * 100] * 342 %}{{ x|replace('a', 'b' * 691) }}",
                       "{% set x = ['\\n' * 50] * 300 %}{{ x|indent(16000) }}"):
            with pytest.raises(RenderLimit, match="would build"):
                render(source)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4e6


@pytest.mark.parametrize("reader, name", [
    (read_yaml, "task.yaml"),
    (read_preset_file, "preset.yaml"),
    (read_card, "dataset.yaml"),
])
@pytest.mark.parametrize("kind", ["not utf-8", "named pipe", "folder"])
def test_a_user_file_that_is_no_utf8_text_file_is_refused_naming_it(tmp_path, reader, name, kind):
    import os

    path = tmp_path / name
    if kind == "not utf-8":
        path.write_bytes(b"task: x\nname: \xff\xfe bad\n")
    elif kind == "named pipe":
        os.mkfifo(path)
    else:
        path.mkdir()
    with deadline(10, "opening a named pipe"), pytest.raises(FocusError) as caught:
        reader(path)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_run_config_and_grid_plan_files_are_read_by_the_bounded_loader(tmp_path, suffix, capsys):
    from focus_eval.cli import main
    from focus_eval.grid.plan import read_plan

    config = tmp_path / f"run{suffix}"
    config.write_bytes(b"seed: \xff\n")
    assert main(["run", "--config", str(config), "--tasks", "x", "--model", "tiny-vit"]) == 2
    assert f"--config {config}: not UTF-8 text" in capsys.readouterr().err
    plan = tmp_path / "plan.yaml"
    plan.write_text(LAUGHS, encoding="utf-8")
    with pytest.raises(FocusError, match="aliases"):
        read_plan(plan)
    config.write_text(LAUGHS, encoding="utf-8")
    if suffix == ".yaml":
        assert main(["run", "--config", str(config), "--tasks", "x", "--model", "tiny-vit"]) == 2
        assert "aliases" in capsys.readouterr().err

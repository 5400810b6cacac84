"""A key given twice in a user's YAML or JSON file is an error naming the file, the line and the key, in every
such file: task files, presets, dataset cards, run configs (YAML or JSON), grid plans, JSON Lines manifests.
Before, the second value silently replaced the first (``seed: 1`` then ``seed: 2`` ran with seed 2)."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from focus_eval.cli import main
from focus_eval.data.cards import read_card
from focus_eval.errors import FocusError
from focus_eval.files import DuplicateKeyError, load_json, load_yaml
from focus_eval.grid.plan import read_plan
from focus_eval.presets import read_preset_file
from focus_eval.task.config import read_yaml

KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)
VALUES = st.one_of(st.integers(-1000, 1000), st.text(alphabet="abcxyz ", max_size=6).map(str.strip).filter(bool),
                   st.booleans())


def test_a_yaml_key_given_twice_names_the_key_and_both_lines():
    with pytest.raises(DuplicateKeyError, match=r"key 'seed' is given twice \(lines 1 and 3\)"):
        load_yaml("seed: 1\nlimit: 5\nseed: 2\n")
    with pytest.raises(DuplicateKeyError, match=r"key 'x' is given twice \(lines 3 and 4\)"):
        load_yaml("outer:\n  a: 1\n  x: 1\n  x: 2\n")
    # keys equal once read are one key, whatever their spelling (YAML 1.1 reads yes and true as True)
    with pytest.raises(DuplicateKeyError, match="given twice"):
        load_yaml("yes: 1\ntrue: 2\n")
    assert load_yaml("a: {x: 1}\nb: {x: 2}\n") == {"a": {"x": 1}, "b": {"x": 2}}  # one key in two mappings
    assert load_yaml("1: a\n'1': b\n") == {1: "a", "1": "b"}  # a number and a text are two keys


def test_a_json_key_given_twice_names_the_key_and_its_line():
    with pytest.raises(DuplicateKeyError, match=r"key 'seed' is given twice \(lines 2 and 4\)"):
        load_json('{\n  "seed": 1,\n  "limit": 5,\n  "seed": 2\n}\n')
    with pytest.raises(DuplicateKeyError, match=r"key 'x' is given twice \(lines 1 and 2\)"):
        load_json('{"x": {"x": 1},\n "x": 2}')
    assert load_json('{"a": {"x": 1}, "b": {"x": 2}}') == {"a": {"x": 1}, "b": {"x": 2}}
    with pytest.raises(ValueError):  # still a ValueError, as json.loads's errors are, for existing handlers
        load_json('{"a": 1, "a": 1}')


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(KEYS, VALUES), min_size=1, max_size=8), st.data())
def test_any_document_with_a_repeated_key_is_refused_and_any_without_one_reads_as_json_does(pairs, data):
    keys = [k for k, _ in pairs]
    yaml_text = "".join(f"{json.dumps(k)}: {json.dumps(v)}\n" for k, v in pairs)  # quoted: "on" is a text
    json_text = "{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in pairs) + "\n}"
    if len(set(keys)) == len(keys):
        assert load_yaml(yaml_text) == dict(pairs) == load_json(json_text)
        return
    first_repeat = next(i for i, k in enumerate(keys) if k in keys[:i])
    first = keys.index(keys[first_repeat])
    expected = f"key {keys[first_repeat]!r} is given twice (lines {first + 1} and {first_repeat + 1})"
    with pytest.raises(DuplicateKeyError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        load_yaml(yaml_text)
    expected = f"key {keys[first_repeat]!r} is given twice (lines {first + 2} and {first_repeat + 2})"
    with pytest.raises(DuplicateKeyError) as caught:
        load_json(json_text)
    assert str(caught.value) == expected


@pytest.mark.parametrize("reader, name, text", [
    (read_yaml, "task.yaml", "task: a\ndataset: synth_desktop\ntask: b\n"),
    (read_preset_file, "preset.yaml", "name: a\nfamily: vm\nname: b\n"),
    (read_card, "dataset.yaml", "manifest: m.csv\ntargets: {dr: {column: dr}}\nmanifest: n.csv\n"),
    (read_plan, "plan.yaml", "models: [tiny-vit]\ntasks: [dr_synth_desktop]\nmodels: [tiny-clip]\n"),
])
def test_every_user_yaml_file_refuses_a_repeated_key_naming_file_line_and_key(tmp_path, reader, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FocusError) as caught:
        reader(path)
    message = str(caught.value)
    assert str(path) in message and "is given twice (lines 1 and 3)" in message and "\n" not in message


@pytest.mark.parametrize("suffix, text", [(".yaml", "seed: 1\nseed: 2\n"),
                                          (".json", '{"seed": 1,\n "seed": 2}')])
def test_a_run_config_with_a_repeated_option_stops_the_run(tmp_path, suffix, text, capsys):
    config = tmp_path / f"run{suffix}"
    config.write_text(text, encoding="utf-8")
    assert main(["run", "--config", str(config), "--tasks", "x", "--model", "tiny-vit", "--check"]) == 2
    err = capsys.readouterr().err
    assert f"--config {config}: key 'seed' is given twice (lines 1 and 2)" in err and "Traceback" not in err


def test_a_jsonl_manifest_row_with_a_repeated_column_names_the_file_and_row(tmp_path):
    from focus_eval.data.readers.manifest import read_manifest_rows

    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text('{"image": "a.png", "dr": 0}\n{"image": "b.png", "dr": 0, "dr": 1}\n', encoding="utf-8")
    with pytest.raises(FocusError, match=rf"{manifest}, row 2: key 'dr' is given twice"):
        read_manifest_rows(manifest)


def test_yaml_errors_of_other_kinds_still_name_their_line():
    with pytest.raises(yaml.YAMLError, match="line 2"):
        load_yaml("a: 1\nb: [1\n")

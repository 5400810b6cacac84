"""Inputs stay inside their bounds: task includes inside the task search path, prompt renders within a time and
size bound and without other templates, model arguments, weights files and dtypes checked with one-line errors,
and the leaderboard writing only under -o, never through a link."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from helpers import leaderboard_data as data
from helpers.records import synthetic_root
from focus_eval.adapters.checkpoints import read_checkpoint
from focus_eval.cli import main
from focus_eval.errors import FocusError
from focus_eval.task import TaskIndex

TASK = "task: {name}\ninclude: _base_dr.yaml\ndataset: idrid\nmetadata: {{version: 1, label_rule: test}}\n"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def tasks_error(capsys, folder: Path) -> str:
    """The one-line error of 'focus-eval tasks --include-path FOLDER' (exit status 2, no traceback)."""
    capsys.readouterr()
    assert main(["tasks", "--include-path", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("focus-eval: error: ") and "Traceback" not in err
    return err


# --- includes -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["parent", "absolute", "link"])
def test_an_include_outside_the_task_search_path_is_an_error_naming_the_file(tmp_path, capsys, how):
    outside = write(tmp_path / "elsewhere", "_secret.yaml", "target: dr\n")
    mine = tmp_path / "mine"
    name = {"parent": "../elsewhere/_secret.yaml", "absolute": str(outside), "link": "_linked.yaml"}[how]
    if how == "link":
        mine.mkdir()
        os.symlink(outside, mine / "_linked.yaml")
    including = write(mine, "t_escape.yaml", f"task: t_escape\ninclude: {name}\ndataset: idrid\n")
    err = tasks_error(capsys, mine)
    assert f"{including}: included file {name!r} resolves to {outside}, outside the task search path" in err


def test_includes_inside_the_search_path_still_resolve(tmp_path):
    mine = tmp_path / "mine"
    write(mine, "bases/_local.yaml", "include: ../_top.yaml\n")
    write(mine, "_top.yaml", "include: _base_glaucoma.yaml\n")
    write(mine, "deep/t_inside.yaml", "task: t_inside\ninclude: ../bases/_local.yaml\ndataset: papila\n"
                                      "metadata: {version: 1, label_rule: test}\n")
    task = TaskIndex([mine]).get("t_inside")
    assert (task.target, task.dataset) == ("glaucoma", "papila")


# --- prompts --------------------------------------------------------------------------------------------------

NESTED = "{% for a in range(9000) %}{% for b in range(9000) %}{{ '' }}{% endfor %}{% endfor %}"


@pytest.mark.parametrize("prompt, message", [
    (NESTED, "took longer than 1 s"),
    ("{% for a in 'abcdefghij' %}" * 8 + "{{ '' }}" + "{% endfor %}" * 8, "took longer than 1 s"),
    ("{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}", "took longer"),
    ("{% for i in range(9000) %}yes or no? {% endfor %}", "the prompt grew past 16384 characters"),
    ("{{ 'x' * 100000 }}", "a repetition of 1 x 100000 items"),
    ("{% set s = 'abcdefgh' %}" + "{% set s = s ~ s %}" * 40 + "{{ s }}",
     "a value of 32768 items or characters was built (at most 16384)"),
    ("{{ 9 ** 9 ** 9 }}", "a power above 2**256"),
    ("{{ 'x'|center(2 ** 30) }}", "the number 1073741824 was passed"),
    ("{{ '%999999999d' % 1 }}", "a format string with a width or precision above 16384"),
    ("{{ '{:>999999999}'.format(1) }}", "a format string with a width or precision above 16384"),
    ("{% include 'base.txt' %}", "{% include %} is not allowed in a prompt"),
    ("{% import 'macros.txt' as m %}", "{% import %} is not allowed in a prompt"),
    ("{{ 1 / 0 }}", "prompt cannot be rendered: ZeroDivisionError"),
])
def test_a_runaway_or_reaching_prompt_fails_fast_with_a_one_line_error(tmp_path, capsys, prompt, message):
    path = write(tmp_path / "mine", "t_prompt.yaml", TASK.format(name="t_prompt") + f"prompt: {json.dumps(prompt)}\n")
    err = tasks_error(capsys, path.parent)  # a prompt that runs away instead hits the per-test timeout
    assert str(path) in err and message in err


def test_a_prompt_that_runs_away_for_some_records_only_fails_on_them(tmp_path):
    prompt = "{% if age %}" + NESTED + "{% endif %}ok"
    write(tmp_path, "t_age.yaml", TASK.format(name="t_age") + f"prompt: {json.dumps(prompt)}\n")
    task = TaskIndex([tmp_path]).get("t_age")
    assert task.render_prompt() == "ok"  # no record: no age
    record = type("Record", (), {"age": 70.0, "sex": "female"})()
    with pytest.raises(FocusError, match="t_age.yaml: prompt stopped: rendering took longer than 1 s"):
        task.render_prompt(record)


def test_honest_templates_render_as_before(tmp_path):
    text = ("{{ dataset_title }}: {% for word in ['a', 'b'] %}{{ loop.index }}{{ word }} {% endfor %}"
            "{{ '%3d' % 7 }} {{ '{:>4}'.format('x') }} {{ 'ab' * 2 }} {{ 2 ** 10 }} {{ 'a' ~ 'b' }}"
            "{{ 'x'|center(5) }}|{{ [3, 1, 2]|sort|join(',') }}")
    write(tmp_path, "t_fine.yaml", TASK.format(name="t_fine") + f"prompt: {json.dumps(text)}\n")
    assert TaskIndex([tmp_path]).get("t_fine").render_prompt() == "IDRiD: 1a 2b   7    x abab 1024 ab  x  |1,2,3"


# --- model arguments, weights files, dtypes -------------------------------------------------------------------

@pytest.fixture(scope="module")
def data_root(tmp_path_factory) -> Path:
    return synthetic_root(tmp_path_factory, "confinement-data", n=12, seed=2)


def run_error(capsys, data_root: Path, tmp_path: Path, model: str, model_args: str) -> str:
    capsys.readouterr()
    argv = ["--model", model, "--tasks", "dr_synth_desktop", "--data-root", str(data_root), "--output-path",
            str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), "--no-progress", "--num-workers", "0",
            "--model-args", model_args]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("focus-eval: error: ") and "Traceback" not in err and err.count("\n") == 1
    return err


@pytest.mark.parametrize("model_args, message", [
    ("preprocessing.size=abc", "preprocessing: 'size' must be a positive whole number of pixels, got 'abc'"),
    ("preprocessing.size=0", "'size' must be a positive whole number of pixels, got 0"),
    ("dtype=int8", "dtype must be one of bfloat16, float16, float32, got 'int8'"),
])
def test_bad_model_arguments_are_one_line_errors(capsys, data_root, tmp_path, model_args, message):
    assert message in run_error(capsys, data_root, tmp_path, "tiny-clip", model_args)


def test_a_zero_byte_weights_file_is_an_error_naming_it(capsys, data_root, tmp_path):
    empty = tmp_path / "weights.safetensors"
    empty.write_bytes(b"")
    err = run_error(capsys, data_root, tmp_path, "efficientnet-lite0", f"weights={empty}")
    assert f"weights file {empty} is empty (0 bytes)" in err


@pytest.mark.parametrize("suffix", [".safetensors", ".pth"])
def test_a_truncated_weights_file_is_an_error_naming_it(tmp_path, suffix):
    whole = tmp_path / f"whole{suffix}"
    tensors = {"weight": torch.ones(64, 64)}
    if suffix == ".safetensors":
        from safetensors.torch import save_file

        save_file(tensors, str(whole))
    else:
        torch.save(tensors, whole)
    cut = tmp_path / f"cut{suffix}"
    cut.write_bytes(whole.read_bytes()[:100])
    assert set(read_checkpoint(whole)) == {"weight"}
    with pytest.raises(FocusError, match=rf"{cut}: (not a readable safetensors file|cannot be read as a torch)"):
        read_checkpoint(cut)


# --- the leaderboard writes under -o only ---------------------------------------------------------------------

@pytest.fixture
def site(tmp_path) -> tuple[Path, Path]:
    results = data.write_results(tmp_path / "results", models=data.MODELS[:2], tasks=data.TASKS[:1])
    out = tmp_path / "site"
    assert main(["leaderboard", str(results), "-o", str(out)]) == 0
    return results, out


@pytest.mark.parametrize("planted", ["models", "index.html", "data/results.json", ".focus-leaderboard"])
def test_a_link_planted_in_the_site_folder_is_refused_and_nothing_is_written_outside(site, tmp_path, capsys,
                                                                                      planted):
    results, out = site
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("untouched")
    link = out / planted
    if link.is_dir():
        import shutil

        shutil.rmtree(link)
    elif link.exists():
        link.unlink()
    os.symlink(outside if planted == "models" else victim, link)
    before = sorted(p.name for p in outside.iterdir())
    capsys.readouterr()
    assert main(["leaderboard", str(results), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{link}: a symbolic link inside the site folder" in err
    assert sorted(p.name for p in outside.iterdir()) == before and victim.read_text() == "untouched"
    assert link.is_symlink()  # not removed either: the user decides


def test_page_names_cannot_leave_the_site_folder(tmp_path):
    from focus_eval.leaderboard.draw.output import write_pages

    out = tmp_path / "site"
    out.mkdir()
    with pytest.raises(FocusError, match="outside the site folder"):
        write_pages(out, {"../escaped.html": "<p>"})
    assert not (tmp_path / "escaped.html").exists()
    write_pages(out, {"models/fine.html": "<p>"})
    assert (out / "models" / "fine.html").read_text() == "<p>"

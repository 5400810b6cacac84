"""An option that does not apply to a method is ignored for it with a note, never turned into units whose numbers
are the task's own: ``--prompt-variants all`` on a model without a prompt method scheduled one unit per
paraphrase, identical to the task's, which then read as "perfectly robust" in the prompt-sensitivity report."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.records import synthetic_root

from focus_eval.cli import main
from focus_eval.options import RunOptions
from focus_eval.runner.methods.knowledge_prompt import KnowledgePrompt
from focus_eval.runner.methods.linear_probe import LinearProbe
from focus_eval.runner.run import Runner
from focus_eval.task import TaskIndex
from focus_eval.task.variants import corrupted_task, expand

VARIANTS = ("plain", "signs", "grader", "screening", "short")


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return synthetic_root(tmp_path_factory, "data", n=12, seed=1)


def runner(tmp_path: Path, **options) -> Runner:
    return Runner(RunOptions(tasks="dr_synth_desktop", data_root=tmp_path, output_path=tmp_path / "out",
                             **options))


def test_prompt_variants_on_a_model_without_prompts_schedule_no_copies_and_say_so(tmp_path, capsys):
    run = runner(tmp_path, model="tiny-clip", prompt_variants=["all"])
    assert sorted(u.stem for u in run.units) == ["dr_synth_desktop.linear_probe", "dr_synth_desktop.zero_shot"]
    skipped = run.report.skipped_by_task
    assert set(skipped) == {f"dr_synth_desktop@{v}.{m}" for v in VARIANTS for m in ("zero_shot", "linear_probe")}
    assert skipped["dr_synth_desktop@plain.zero_shot"].startswith(
        "--prompt-variants does not apply to zero_shot, only to the methods that ask a prompt")
    err = capsys.readouterr().err
    # one line per method and reason, not one per copy
    assert err.count("--prompt-variants does not apply to") == 2 and "5 units (dr_synth_desktop@plain" in err


def test_prompt_variants_on_a_prompt_method_still_make_their_units(tmp_path):
    run = runner(tmp_path, model="tiny-medgemma", prompt_variants=["all"])
    assert {u.task.name for u in run.units} == {"dr_synth_desktop", *(f"dr_synth_desktop@{v}" for v in VARIANTS)}
    assert run.report.skipped_by_task == {}


def test_label_budgets_skip_the_methods_that_fit_no_probe_with_a_note(tmp_path, capsys):
    run = runner(tmp_path, model="tiny-clip", train_fraction="0.5")
    assert {(u.task.name, u.method) for u in run.units} == {
        ("dr_synth_desktop", "zero_shot"), ("dr_synth_desktop", "linear_probe"),
        ("dr_synth_desktop@train0.5-s0", "linear_probe")}
    assert "--train-fraction does not apply to zero_shot" in run.report.skipped_by_task[
        "dr_synth_desktop@train0.5-s0.zero_shot"]
    assert "dr_synth_desktop@train0.5-s0.zero_shot: not scored: --train-fraction does not apply" in \
        capsys.readouterr().err


def test_a_corruption_does_not_apply_to_a_method_that_reads_no_image():
    from focus_eval.runner.run import not_applying

    task = TaskIndex().get("dr_synth_desktop")
    blurred = corrupted_task(task, "blur:1", "blur1")
    assert not_applying(blurred, LinearProbe()) is None
    assert not_applying(blurred, KnowledgePrompt()).startswith("--corruptions does not apply to knowledge_prompt")
    paraphrased = expand([task], ["plain"])[0]
    assert not_applying(paraphrased, KnowledgePrompt()) is None  # it asks the question, so a paraphrase applies
    assert not_applying(paraphrased, LinearProbe()).startswith("--prompt-variants does not apply to linear_probe")


@pytest.mark.parametrize("argv, note", [
    (["--zs-scale", "50", "--methods", "linear_probe"],
     "--zs-scale is ignored: it applies only to zero_shot, and this run's methods are linear_probe"),
    (["--probe-compat", "--methods", "zero_shot"], "--probe-compat is ignored: it applies only to the probes"),
    (["--probe-select", "auroc", "--methods", "zero_shot"], "--probe-select is ignored"),
])
def test_an_option_no_method_of_the_run_uses_is_noted_before_it_runs(data_root, tmp_path, capsys, argv, note):
    assert main(["--model", "tiny-clip", "--tasks", "dr_synth_desktop", "--data-root", str(data_root),
                 "--output-path", str(tmp_path / "out"), "--check", *argv]) == 0
    assert f"note: {note}" in capsys.readouterr().out
    options = dict(zs_scale=50.0) if "--zs-scale" in argv else dict(probe_compat=True) if "--probe-compat" in argv \
        else dict(probe_select="auroc")
    runner(tmp_path, model="tiny-clip", methods=[argv[-1]], **options)
    assert note in capsys.readouterr().err

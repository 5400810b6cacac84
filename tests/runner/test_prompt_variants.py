"""--prompt-variants: each paraphrase of a task's prompt is its own unit and results line, all asked of an
image in one multi-prompt call, with the variant in the unit's fingerprint; ``report prompt-sensitivity``
reads the lines back."""

import json

import pytest
from helpers.records import synthetic_root

from focus_eval.cli import main
from focus_eval.options import RunOptions
from focus_eval.results.schema import read_jsonl
from focus_eval.task import TaskIndex

VARIANTS = ("default", "plain", "signs", "grader", "screening", "short")


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return synthetic_root(tmp_path_factory, "data", n=24, seed=5)


def test_focus_targets_declare_five_paraphrases_or_more():
    index = TaskIndex()
    for name in ("dr_brset", "referable_dr_messidor2", "glaucoma_papila"):
        task = index.get(name)
        assert len(task.prompt_variants) >= 5
        prompts = {task.render_prompt(None)} | set(task.prompt_variants.values())
        assert len(prompts) == len(task.prompt_variants) + 1  # every paraphrase differs from the others


def test_every_variant_is_a_results_line_and_shares_the_image(tmp_path, data_root, monkeypatch, capsys):
    from focus_eval.adapters.mllm import MLLMScorer

    asked = []
    original = MLLMScorer.score_and_generate_multi

    def counting(self, images, prompts, **kwargs):
        asked.extend(len(p) for p in prompts)
        answers = original(self, images, prompts, **kwargs)
        # a tiny random model rarely writes a readable answer, and a line with none is unscored: it answers here
        # in words what its first token says, so that the variants' lines are scored and compared
        for row in (r for per_image in answers for r in per_image):
            row["text"] = "yes" if row["p_yes"] >= row["p_no"] else "no"
        return answers

    monkeypatch.setattr(MLLMScorer, "score_and_generate_multi", counting)
    out = tmp_path / "out"
    assert main(["--no-progress", "--num-workers", "0", "--n-boot", "50", "--model", "tiny-medgemma",
                 "--tasks", "dr_synth_*", "--data-root", str(data_root), "--output-path", str(out),
                 "--prompt-variants", "all", "--batch-size", "4"]) == 0
    rows = read_jsonl(out / "tiny-medgemma" / "results.jsonl")
    by_task = {(r["extra"].get("base_task", r["task"]), r["extra"].get("prompt_variant", "default")): r
               for r in rows}
    assert set(by_task) == {(t, v) for t in ("dr_synth_desktop", "dr_synth_mobile") for v in VARIANTS}
    assert all(r["method"] == "prompt" for r in rows) and len(rows) == 12
    assert by_task[("dr_synth_desktop", "plain")]["task"] == "dr_synth_desktop@plain"
    # each test image is asked every variant of its dataset's task in one call (encoded once)
    assert set(asked) == {len(VARIANTS)}

    capsys.readouterr()
    assert main(["report", "prompt-sensitivity", str(out), "--json", str(tmp_path / "p.json")]) == 0
    record = json.loads((tmp_path / "p.json").read_text())
    spreads = {r["task"]: r for r in record["rows"]}
    assert set(spreads) == {"dr_synth_desktop", "dr_synth_mobile"}
    for task, row in spreads.items():
        scores = [by_task[(task, v)]["metrics"]["auroc"] for v in VARIANTS]
        assert row["variants"] == 6 and row["min"] == min(scores) and row["max"] == max(scores)
        assert row["mean"] == pytest.approx(sum(scores) / 6)
    pairs = record["kendall_tau"]["dr"]
    assert len(pairs) == 15  # every pair of the six variants
    assert "1 model(s) only" in record["stability"][0]


def test_the_variant_is_part_of_the_fingerprint(data_root, tmp_path):
    from focus_eval.runner.provenance import changes
    from focus_eval.runner.run import Runner

    runner = Runner(RunOptions(model="tiny-medgemma", tasks="dr_synth_desktop", data_root=data_root,
                               output_path=tmp_path, prompt_variants=["plain", "signs", "default"]))
    prints = {u.task.name: runner.fingerprint(u) for u in runner.units}
    assert set(prints) == {"dr_synth_desktop", "dr_synth_desktop@plain", "dr_synth_desktop@signs"}
    plain, signs = prints["dr_synth_desktop@plain"], prints["dr_synth_desktop@signs"]
    assert plain["prompt_variant"] == "plain" and "prompt_variant" not in prints["dr_synth_desktop"]
    said = changes(plain, signs)
    assert any(c.startswith("prompt_variant") for c in said) and any(c.startswith("task_hash") for c in said)
    # the default prompt's unit is the unit of a run without variants: resume shares it
    ordinary = Runner(RunOptions(model="tiny-medgemma", tasks="dr_synth_desktop", data_root=data_root,
                                 output_path=tmp_path))
    assert ordinary.fingerprint(ordinary.units[0]) == prints["dr_synth_desktop"]


def test_an_unknown_variant_name_is_refused(data_root, tmp_path):
    from focus_eval.errors import FocusError
    from focus_eval.runner.run import Runner

    with pytest.raises(FocusError, match="no selected task declares plian"):
        Runner(RunOptions(model="tiny-medgemma", tasks="dr_synth_desktop", data_root=data_root,
                          output_path=tmp_path, prompt_variants=["plian"]))


def test_a_funbench_variant_asks_its_paraphrase_with_the_same_options():
    from focus_eval.task.variants import expand

    index = TaskIndex()
    for name in ("funbench_l1a_modality_ddr", "funbench_l2b_laterality_brset", "funbench_l2a_fovea_position_idrid_loc"):
        task = index.get(name)
        assert len(task.prompt_variants) >= 3
        variants = expand([task], ["all"])
        assert len(variants) == len(task.prompt_variants) + 1
        for v in variants[1:]:
            own, asked = task.question.render(task, None, 0, 7), v.question.render(v, None, 0, 7)
            assert task.prompt_variants[v.variant["prompt_variant"]] in asked.prompt
            assert task.question.text not in asked.prompt
            assert (asked.options, asked.answer) == (own.options, own.answer)

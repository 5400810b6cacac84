"""FunBench L4d (AMD categorization on MMC-AMD) under the holistic and the knowledge-prompted modes on a tiny
MLLM: both score the task on the miniature layout, with the four categories and the random guess of the
questions asked."""

import json

import pytest

from focus_eval.synth import layouts

TASK = "funbench_l4d_amd_category_mmc_amd"


@pytest.mark.slow
def test_l4d_runs_under_multiple_choice_and_knowledge_prompt(tmp_path):
    from focus_eval.cli import main

    data = tmp_path / "data"
    layouts.write_layout("mmc_amd", data / "mmc_amd", seed=2)
    out = tmp_path / "out"
    assert main(["--model", "tiny-qwen2.5-vl", "--methods", "multiple_choice,knowledge_prompt", "--tasks", TASK,
                 "--data-root", str(data), "-o", str(out), "--no-progress"]) == 0
    lines = [json.loads(line) for line in (out / "tiny-qwen2.5-vl" / "results.jsonl").read_text().splitlines()]
    lines = {line["method"]: line for line in lines if line["task"] == TASK}
    assert set(lines) == {"multiple_choice", "knowledge_prompt"}
    for line in lines.values():
        assert line["n"] == 11 and line["metrics"]["funbench_f1"] is not None
        assert line["extra"]["classes"] == ["normal", "dry_amd", "pcv", "wet_amd"]
        assert line["extra"]["random_guess"]["funbench_f1"] == pytest.approx(0.375)

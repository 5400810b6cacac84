"""The whole benchmark on the miniature raw layouts of the ten datasets: every clinical task, every method
family, through the real readers, splits, runner and metrics."""

import pytest

from focus_eval.cli import main
from focus_eval.results.schema import read_jsonl, validate_result_dict
from focus_eval.task import TaskIndex

pytestmark = pytest.mark.slow  # every clinical task on the miniature layouts


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    root = tmp_path_factory.mktemp("layouts")
    assert main(["synth", "--out", str(root), "--layout", "real"]) == 0
    return root


def test_dual_encoder_runs_every_clinical_task_and_proxy(layouts, tmp_path):
    out = tmp_path / "results"
    assert main(["--model", "tiny-clip", "--tasks", "focus,proxy", "--include-proxy", "--data-root", str(layouts),
                 "--output-path", str(out), "--cache-dir", str(tmp_path / "cache"), "--n-boot", "50",
                 "--num-workers", "0", "--no-progress"]) == 0
    rows = read_jsonl(out / "tiny-clip" / "results.jsonl")
    expected = set(TaskIndex().expand("focus,proxy", include_proxy=True))
    assert len(expected) == 18
    assert {(r["task"], r["method"]) for r in rows} == {(t, m) for t in expected for m in ("zero_shot", "linear_probe")}
    for r in rows:
        validate_result_dict(r)
        assert r["n"] > 0 and r["n_errors"] == 0
        assert r["proxy"] == (r["task"] in ("referable_dr_rfmid", "referable_dr_rfmid2"))
    brset = next(r for r in rows if r["task"] == "glaucoma_brset")
    assert brset["extra"]["split_policy"]["cohort"] == "diabetic"


def test_multimodal_llm_runs_the_glaucoma_pattern(layouts, tmp_path):
    out = tmp_path / "results"
    assert main(["--model", "tiny-qwen-vl", "--tasks", "glaucoma_*", "--data-root", str(layouts),
                 "--output-path", str(out), "--n-boot", "50", "--num-workers", "0", "--no-progress"]) == 0
    rows = read_jsonl(out / "tiny-qwen-vl" / "results.jsonl")
    assert {r["task"] for r in rows} == {"glaucoma_brset", "glaucoma_papila", "glaucoma_refuge", "glaucoma_g1020"}
    assert all(r["method"] == "prompt" and r["n_valid"] == r["n"] for r in rows)

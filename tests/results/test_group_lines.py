"""A run over a group writes the group's macro mean (kind "group" in results.jsonl) with an interval from the
members' patient resamples; `score` rebuilds it from the samples."""

import pytest

from focus_eval.cli import main
from focus_eval.results.schema import read_jsonl, validate_group_dict

pytestmark = pytest.mark.slow


def test_group_lines_equal_the_mean_of_their_member_tasks(tmp_path, capsys):
    from focus_eval.synth.datasets import write_synthetic

    write_synthetic(tmp_path / "data", n=200, seed=8)
    model = tmp_path / "out" / "tiny-vit"
    assert main(["--model", "tiny-vit", "--tasks", "synth", "--data-root", str(tmp_path / "data"), "--output-path",
                 str(tmp_path / "out"), "--no-progress", "--num-workers", "0", "--n-boot", "100",
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    assert "group synth" in capsys.readouterr().out
    rows = read_jsonl(model / "results.jsonl")
    (group,) = [r for r in rows if r.get("kind") == "group"]
    validate_group_dict(group)
    tasks = {r["task"]: r for r in rows if r.get("kind") != "group"}
    assert set(group["members"]) == set(tasks)
    assert set(group["tasks"]) | set(group["excluded"]) == set(tasks)
    assert all(tasks[t]["underpowered"] for t in group["excluded"])
    expected = sum(tasks[t]["metrics"]["auroc"] for t in group["tasks"]) / len(group["tasks"])
    assert group["metrics"]["auroc"] == pytest.approx(expected, abs=1e-12)
    low, high = group["ci"]["auroc"]
    assert low < group["metrics"]["auroc"] < high
    # the group's interval is narrower than its members' (means of independent resamples)
    widths = [tasks[t]["ci"]["auroc"][1] - tasks[t]["ci"]["auroc"][0] for t in group["tasks"]]
    assert high - low < max(widths)

    def without_time(lines):
        return [{k: v for k, v in r.items() if k != "created"} for r in lines]

    assert main(["score", str(model)]) == 0
    assert without_time(read_jsonl(model / "results.jsonl")) == without_time(rows)


def test_a_group_without_a_counting_member_is_named_not_dropped_silently(tmp_path, capsys):
    from focus_eval.synth.datasets import write_synthetic

    # 16 images: every member task is underpowered, so the group has no line, and the run says so
    write_synthetic(tmp_path / "data", n=16, seed=8)
    assert main(["--model", "tiny-vit", "--tasks", "synth", "--data-root", str(tmp_path / "data"), "--output-path",
                 str(tmp_path / "out"), "--no-progress", "--num-workers", "0", "--n-boot", "20",
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    err = capsys.readouterr().err
    assert "group synth (linear_probe): no group line" in err
    assert not [r for r in read_jsonl(tmp_path / "out" / "tiny-vit" / "results.jsonl") if r.get("kind") == "group"]

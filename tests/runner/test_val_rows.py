"""Validation rows: binary units write their validation split's rows (split "val") beside the test rows, the
results line stays the test rows' (no number moves), ``--no-val-scores`` leaves them out, resume computes a
finished unit again when it lacks rows the run wants, and every reader of sample files picks its split."""

import json
from pathlib import Path

import pytest
from helpers.records import synthetic_root

from focus_eval.cli import main
from focus_eval.data.registry import load_dataset
from focus_eval.results.schema import read_jsonl
from focus_eval.runner.records import task_records
from focus_eval.task import TaskIndex

TASKS = "dr_synth_desktop,glaucoma_synth_desktop"


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return synthetic_root(tmp_path_factory, "data", n=60, seed=4)


def run(data_root, out, *args) -> int:
    return main(["--no-progress", "--num-workers", "0", "--n-boot", "100", "--data-root", str(data_root),
                 "--output-path", str(out), *args])


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def without_file_record(line: dict) -> dict:
    """A results line without what names its sample file or when it was written."""
    line = json.loads(json.dumps(line))
    line.pop("created")
    for key in ("samples_sha256", "val_rows"):
        line["extra"].pop(key)
    return line


def expected_ids(data_root, task_name: str, split: str) -> list[str]:
    task = TaskIndex().get(task_name)
    return [r.image_id for r in task_records(load_dataset(task.dataset, data_root), task, split)]


@pytest.fixture(scope="module")
def clip_runs(data_root, tmp_path_factory):
    """tiny-clip (linear probe and zero-shot) with validation rows and without."""
    base = tmp_path_factory.mktemp("clip")
    cache = ["--cache-dir", str(base / "cache"), "--model", "tiny-clip", "--tasks", TASKS]
    assert run(data_root, base / "with", *cache) == 0
    assert run(data_root, base / "without", *cache, "--no-val-scores") == 0
    return base / "with" / "tiny-clip", base / "without" / "tiny-clip"


def test_embedding_methods_write_val_rows_and_the_results_line_is_unchanged(clip_runs, data_root):
    with_val, without = clip_runs
    for task in TASKS.split(","):
        for method in ("linear_probe", "zero_shot"):
            name = f"{task}.{method}.jsonl"
            rows = rows_of(with_val / "samples" / name)
            plain = rows_of(without / "samples" / name)
            tests = [r for r in rows if r["split"] == "test"]
            vals = [r for r in rows if r["split"] == "val"]
            assert {r["split"] for r in plain} == {"test"}
            assert [r["image_id"] for r in vals] == expected_ids(data_root, task, "val") != []
            assert rows == tests + vals  # test rows first
            assert tests == plain  # the same test rows, bit for bit
            assert all(r["score"] is not None and r["error"] is None for r in vals)
    lines = {(r["task"], r["method"]): r for r in read_jsonl(with_val / "results.jsonl")}
    plain_lines = {(r["task"], r["method"]): r for r in read_jsonl(without / "results.jsonl")}
    assert set(lines) == set(plain_lines) and len(lines) == 4
    for key, line in lines.items():
        assert line["extra"]["val_rows"] is True and plain_lines[key]["extra"]["val_rows"] is False
        assert line["extra"]["split"] == "test" and line["n"] == len(expected_ids(data_root, key[0], "test"))
        assert without_file_record(line) == without_file_record(plain_lines[key])


def test_the_probe_val_rows_are_its_fitted_probe_on_the_val_vectors():
    """The probe's validation scores come from the one probe that scored the test rows (train fit, C chosen on
    val), scored in a call of its own."""
    import numpy as np

    from focus_eval.runner.methods.linear_probe import fit_predict

    rng = np.random.default_rng(0)
    train_x, val_x, test_x = rng.normal(size=(40, 5)), rng.normal(size=(12, 5)), rng.normal(size=(9, 5))
    train_y, val_y = rng.integers(0, 2, 40), np.array([0, 1] * 6)
    alone = fit_predict(train_x, train_y, val_x, val_y, test_x)
    both = fit_predict(train_x, train_y, val_x, val_y, test_x, also=(val_x,))
    assert np.array_equal(alone.probs, both.probs) and alone.info == both.info
    again = fit_predict(train_x, train_y, val_x, val_y, val_x)
    assert np.array_equal(both.also[0], again.probs)


def test_rescoring_a_folder_with_val_rows_rebuilds_the_same_results(clip_runs, tmp_path):
    import shutil

    with_val, _ = clip_runs
    copy = tmp_path / "copy"
    shutil.copytree(with_val, copy)
    (copy / "results.jsonl").unlink()
    assert main(["score", str(copy)]) == 0
    rebuilt = {(r["task"], r["method"]): r for r in read_jsonl(copy / "results.jsonl")}
    written = {(r["task"], r["method"]): r for r in read_jsonl(with_val / "results.jsonl")}
    assert rebuilt == written


def test_readers_of_sample_files_take_the_test_rows(clip_runs, data_root):
    from focus_eval.analysis.lm_eval_export import sample_records
    from focus_eval.notebook import load_samples
    from focus_eval.leaderboard.conventions import collect_results

    with_val, _ = clip_runs
    root = with_val.parent
    test_ids = expected_ids(data_root, "dr_synth_desktop", "test")
    val_ids = expected_ids(data_root, "dr_synth_desktop", "val")
    frame = load_samples(root, "dr_synth_desktop", method="linear_probe")
    assert list(frame["image_id"]) == test_ids and set(frame["split"]) == {"test"}
    assert list(load_samples(root, "dr_synth_desktop", method="linear_probe", split="val")["image_id"]) == val_ids
    assert len(load_samples(root, "dr_synth_desktop", method="linear_probe", split=None)) == len(test_ids + val_ids)
    entry = next(e for e in collect_results([root]).entries if (e.line.task, e.line.method) == ("dr_synth_desktop",
                                                                                       "linear_probe"))
    assert [r["doc"]["image_id"] for r in sample_records(entry)] == test_ids
    from focus_eval.leaderboard.pages.sample_pages import sample_page

    assert [r.image_id for r in sample_page(entry, "samples/x.html").rows] == test_ids


def test_resume_computes_again_a_unit_without_the_val_rows_wanted(data_root, tmp_path, capsys):
    out = tmp_path / "r"
    common = ["--cache-dir", str(tmp_path / "cache"), "--model", "tiny-clip", "--tasks", "dr_synth_desktop",
              "--methods", "zero_shot"]
    sample = out / "tiny-clip" / "samples" / "dr_synth_desktop.zero_shot.jsonl"
    assert run(data_root, out, *common, "--no-val-scores") == 0
    assert {r["split"] for r in rows_of(sample)} == {"test"}
    capsys.readouterr()
    assert run(data_root, out, *common) == 0
    assert "computed again: its sample file has no validation rows" in capsys.readouterr().err
    assert {r["split"] for r in rows_of(sample)} == {"test", "val"}
    # a unit holding more rows than a --no-val-scores run wants is kept as it is
    before = sample.read_bytes()
    assert run(data_root, out, *common, "--no-val-scores", "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["already_done"] == 1 and summary["finished"] == 0
    assert sample.read_bytes() == before


def test_prompt_method_asks_the_val_images_too(data_root, tmp_path):
    out = tmp_path / "p"
    common = ["--model", "tiny-medgemma", "--tasks", "dr_synth_desktop", "--batch-size", "4", "--limit", "5"]
    assert run(data_root, out, *common) == 0
    rows = rows_of(out / "tiny-medgemma" / "limit-5" / "samples" / "dr_synth_desktop.prompt.jsonl")
    # --limit cuts the validation rows as it cuts the test rows
    assert [r["image_id"] for r in rows if r["split"] == "test"] == expected_ids(data_root, "dr_synth_desktop",
                                                                                 "test")[:5]
    assert [r["image_id"] for r in rows if r["split"] == "val"] == expected_ids(data_root, "dr_synth_desktop",
                                                                                "val")[:5]
    assert all(r["p_yes"] is not None and r["score_norm"] is not None for r in rows)
    line, = read_jsonl(out / "tiny-medgemma" / "limit-5" / "results.jsonl")
    assert line["n"] == 5 and line["extra"]["val_rows"] is True


def test_multiple_choice_and_corruption_units_write_test_rows_only(index):
    from focus_eval.options import RunOptions
    from focus_eval.runner.methods import get_method
    from focus_eval.data.corruptions import parse
    from focus_eval.task.variants import expand_corruptions

    options = RunOptions(model="tiny-clip", tasks="x")
    binary = index.get("dr_synth_desktop")
    assert get_method("linear_probe").scored_splits(binary, options) == ("test", "val")
    assert get_method("zero_shot").image_splits(binary, options) == ("test", "val")
    off = RunOptions(model="tiny-clip", tasks="x", val_scores=False)
    assert get_method("prompt").scored_splits(binary, off) == ("test",)
    corrupted, = [t for t in expand_corruptions([binary], parse("blur:1")) if t.variant]
    assert get_method("zero_shot").scored_splits(corrupted, options) == ("test",)
    multi = next(t for t in (index.get(n) for n in index.names) if not t.binary)
    assert get_method("multiple_choice").scored_splits(multi, options) == ("test",)


def test_sample_lines_name_the_tasks_split_not_the_datasets(index):
    """A task that takes its test rows from the dataset's val split writes them as its test rows."""
    from dataclasses import replace

    from helpers.records import image_record

    from focus_eval.runner.records import sample_split, task_sample_line

    task = replace(index.get("dr_synth_desktop"), splits={"train": "train", "val": "test", "test": "val"})
    record = image_record("synth_desktop", split="val", dr=1)
    assert sample_split(task, record) == "test"
    assert task_sample_line(task, record, 0.7, 1).split == "test"
    assert sample_split(task, replace(record, split="test")) == "val"

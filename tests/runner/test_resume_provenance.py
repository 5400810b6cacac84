"""Resume reuses a unit only when everything its numbers came from is unchanged: data copy, label file, task
prompt, preset settings and each number-changing option. Otherwise the run stops, naming what changed, and
--overwrite replaces the unit with what a fresh run gives. --limit runs never replace full results."""

import os
import shutil
import signal
from pathlib import Path

import pytest
from helpers.records import synthetic_root

from focus_eval.cli import main
from focus_eval.results.schema import read_jsonl

pytestmark = pytest.mark.slow

CUSTOM_TASK = """task: dr_synth_custom
include: _base_dr.yaml
dataset: synth_desktop
prompt: "{prompt}"
metadata:
  version: 1.0
  label_rule: icdr >= 1 -> 1, icdr == 0 -> 0
"""


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return synthetic_root(tmp_path_factory, "data", n=40, seed=5)


def run(*args) -> int:
    return main(["--no-progress", "--num-workers", "0", "--n-boot", "50", "--batch-size", "8", *args])


def without_time(path: Path) -> list[dict]:
    rows = read_jsonl(path)
    for r in rows:
        r.pop("created", None)
    return rows


def task_folder(tmp_path: Path, prompt: str) -> Path:
    folder = tmp_path / "tasks"
    folder.mkdir(exist_ok=True)
    (folder / "dr_synth_custom.yaml").write_text(CUSTOM_TASK.format(prompt=prompt))
    return folder


def test_each_changed_input_stops_the_run_and_overwrite_equals_a_fresh_run(tmp_path, data_root, capsys):
    tasks = task_folder(tmp_path, "Does this eye show retinopathy? Answer yes or no.")
    out = tmp_path / "out"
    base = ["--model", "tiny-vit", "--tasks", "dr_synth_desktop,dr_synth_custom", "--include-path", str(tasks),
            "--cache-dir", str(tmp_path / "cache")]
    assert run(*base, "--data-root", str(data_root), "--output-path", str(out)) == 0
    results = out / "tiny-vit" / "results.jsonl"
    written = results.read_bytes()
    assert run(*base, "--data-root", str(data_root), "--output-path", str(out)) == 0
    assert "already done 2" in capsys.readouterr().out

    copy = tmp_path / "copy"
    shutil.copytree(data_root, copy)
    labels = copy / "synth_desktop" / "labels.csv"
    lines = labels.read_text().splitlines()
    header = lines[0].split(",")
    row = lines[1].split(",")
    column = header.index("icdr")
    row[column] = "0" if row[column] != "0" else "3"  # a corrected label
    labels.write_text("\n".join([lines[0], ",".join(row), *lines[2:]]) + "\n")
    split_file = tmp_path / "split.csv"
    from focus_eval.data.registry import load_dataset

    records = sorted(load_dataset("synth_desktop", data_root).records, key=lambda r: r.image_id)
    split_file.write_text("image_id,split\n" + "".join(
        f"{r.image_id},{('train', 'val', 'test')[i % 3]}\n" for i, r in enumerate(records)))
    changed = {
        "data_fingerprint": ["--data-root", str(copy)],
        "seed": ["--seed", "7"],
        "probe_compat": ["--probe-compat"],
        "n_boot": ["--n-boot", "60"],
        "split_file_sha256": ["--split-file", f"synth_desktop={split_file}"],
        "use_prepared": ["--no-prepared"],
    }
    for key, extra in changed.items():
        args = [*base, "--output-path", str(out)] + ([] if "--data-root" in extra else ["--data-root", str(data_root)])
        assert run(*args, *extra) == 2, key
        err = capsys.readouterr().err
        assert key in err and "--overwrite" in err and "--output-path" in err, (key, err)
        assert results.read_bytes() == written, f"{key}: the stopped run changed results.jsonl"
    (tasks / "dr_synth_custom.yaml").write_text(CUSTOM_TASK.format(prompt="Is there any retinopathy? yes or no."))
    assert run(*base, "--data-root", str(data_root), "--output-path", str(out)) == 2
    err = capsys.readouterr().err
    assert "dr_synth_custom.linear_probe: task_hash" in err and "dr_synth_desktop.linear_probe" not in err

    assert run(*base, "--data-root", str(copy), "--output-path", str(out), "--overwrite") == 0
    assert run(*base, "--data-root", str(copy), "--output-path", str(tmp_path / "fresh")) == 0
    assert without_time(results) == without_time(tmp_path / "fresh" / "tiny-vit" / "results.jsonl")


def test_a_torn_or_missing_results_line_is_rebuilt_from_the_samples(tmp_path, data_root, capsys):
    out = tmp_path / "out"
    args = ["--model", "tiny-vit", "--tasks", "dr_synth_desktop,glaucoma_synth_desktop", "--data-root",
            str(data_root), "--output-path", str(out), "--cache-dir", str(tmp_path / "cache")]
    assert run(*args) == 0
    results = out / "tiny-vit" / "results.jsonl"
    written = results.read_bytes()
    results.write_bytes(written[: len(written) - 40])  # a crash in the middle of the last line
    capsys.readouterr()
    assert run(*args) == 0
    assert "already done 2" in capsys.readouterr().out
    assert results.read_bytes() == written
    results.unlink()
    assert run(*args) == 0 and results.read_bytes() == written
    samples = out / "tiny-vit" / "samples" / "dr_synth_desktop.linear_probe.jsonl"
    samples.write_text(samples.read_text().replace('"label": 1', '"label": 0', 1))  # samples edited by hand
    assert run(*args) == 0
    assert results.read_bytes() != written  # the line follows the sample file it now records the digest of


def test_zero_shot_scale_change_stops_the_run(tmp_path, data_root, capsys):
    args = ["--model", "tiny-clip", "--tasks", "dr_synth_desktop", "--methods", "zero_shot", "--data-root",
            str(data_root), "--output-path", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")]
    assert run(*args) == 0
    capsys.readouterr()
    assert run(*args, "--zs-scale", "100") == 2
    assert "zs_scale" in capsys.readouterr().err


def test_a_half_finished_prompt_unit_is_not_continued_after_a_prompt_edit(tmp_path, data_root, monkeypatch, capsys):
    from focus_eval.adapters.mllm import MLLMScorer

    tasks = task_folder(tmp_path, "Does this eye show retinopathy? Answer yes or no.")
    out = tmp_path / "out"
    args = ["--model", "tiny-medgemma", "--tasks", "dr_synth_custom", "--include-path", str(tasks),
            "--data-root", str(data_root), "--output-path", str(out), "--batch-size", "4"]
    calls, original = [], MLLMScorer.score_and_generate_multi

    def answer_then_signal(self, *a, **kw):
        result = original(self, *a, **kw)
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGINT)
        return result

    monkeypatch.setattr(MLLMScorer, "score_and_generate_multi", answer_then_signal)
    assert run(*args) == 130
    monkeypatch.setattr(MLLMScorer, "score_and_generate_multi", original)
    parts = list((out / "tiny-medgemma" / "samples" / ".parts").glob("*.r0.jsonl"))
    assert parts and parts[0].read_text().count("\n") >= 4  # half done: resuming would mix two prompts
    (tasks / "dr_synth_custom.yaml").write_text(CUSTOM_TASK.format(prompt="Any retinopathy here? yes or no."))
    capsys.readouterr()
    assert run(*args) == 2
    assert "task_hash" in capsys.readouterr().err
    assert run(*args, "--model-args", "max_new_tokens=3") == 2  # the preset changed too, both are named
    err = capsys.readouterr().err
    assert "task_hash" in err and "preset_hash" in err
    assert run(*args, "--overwrite") == 0
    fresh = tmp_path / "fresh"
    assert run(*args[:-4], "--output-path", str(fresh), "--batch-size", "4") == 0
    name = "samples/dr_synth_custom.prompt.jsonl"
    assert (out / "tiny-medgemma" / name).read_text() == (fresh / "tiny-medgemma" / name).read_text()


def test_limit_runs_land_beside_full_results_and_are_marked(tmp_path, data_root):
    out = tmp_path / "out"
    args = ["--model", "tiny-vit", "--tasks", "dr_synth_desktop", "--data-root", str(data_root),
            "--output-path", str(out), "--cache-dir", str(tmp_path / "cache")]
    assert run(*args) == 0
    full = (out / "tiny-vit" / "results.jsonl").read_bytes()
    full_samples = (out / "tiny-vit" / "samples" / "dr_synth_desktop.linear_probe.jsonl").read_bytes()
    assert run(*args, "--limit", "5") == 0
    assert (out / "tiny-vit" / "results.jsonl").read_bytes() == full
    assert (out / "tiny-vit" / "samples" / "dr_synth_desktop.linear_probe.jsonl").read_bytes() == full_samples
    limited = out / "tiny-vit" / "limit-5"
    (line,) = read_jsonl(limited / "results.jsonl")
    assert line["limited"] is True and line["n"] == 5 and line["extra"]["limit"] == 5
    assert all(s["limited"] is True for s in read_jsonl(limited / "samples" / "dr_synth_desktop.linear_probe.jsonl"))
    assert read_jsonl(out / "tiny-vit" / "results.jsonl")[0]["limited"] is False

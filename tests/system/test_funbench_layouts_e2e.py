"""FunBench's three modes on the miniature raw layouts of every dataset that only FunBench tasks read: each
(task, method) pair is scored or skipped by its task with the reason in the run manifest, none fails, and the
report reads the outcome (a mode whose lines have not a single readable answer has no score, and the report's
notes say so)."""

import json

import pytest

from focus_eval.synth import layouts
from focus_eval.task import TaskIndex

NEW_DATASETS = ("ddr", "retinal_lesions", "idrid_seg", "idrid_loc", "oia_odir", "deepdrid", "octdl", "oct2017",
                "mmc_amd")
METHODS = ("multiple_choice", "ve_probe", "knowledge_prompt")
MODES = {"holistic": "multiple_choice", "ve": "ve_probe", "llm": "knowledge_prompt"}


@pytest.mark.slow
@pytest.mark.parametrize("model", ["tiny-medgemma", "tiny-qwen2.5-vl"])
def test_three_modes_on_every_new_dataset_layout(tmp_path, model):
    from focus_eval.cli import main

    data = tmp_path / "data"
    for name in NEW_DATASETS:
        layouts.write_layout(name, data / layouts.folder_name(name), seed=3)
    patterns = ",".join(f"funbench_*_{name}" for name in NEW_DATASETS)
    out = tmp_path / "out"
    assert main(["--model", model, "--methods", ",".join(METHODS), "--tasks", patterns, "--data-root", str(data),
                 "-o", str(out), "--no-progress"]) == 0

    index = TaskIndex()
    tasks = [index.get(n) for n in index.names if n.startswith("funbench_")
             and any(n.endswith(f"_{d}") and index.get(n).dataset == d for d in NEW_DATASETS)]
    assert {t.dataset for t in tasks} == set(NEW_DATASETS)
    lines = [json.loads(line) for line in (out / model / "results.jsonl").read_text().splitlines()]
    scored = {(line["task"], line["method"]) for line in lines if line.get("kind", "task") != "group"}
    manifest = json.loads(next((out / model).glob("run-*.json")).read_text())
    skipped = manifest["units"]["skipped_by_task"]
    for task in tasks:
        for method in METHODS:
            if method in task.skip_methods:
                assert (task.name, method) not in scored
                assert skipped[f"{task.name}.{method}"] == task.skip_methods[method]
            else:
                assert (task.name, method) in scored, f"{task.name} under {method} has no results line"
    for line in lines:
        if line.get("kind", "task") != "group":
            assert line["n"] > 0 and line["metrics"]["funbench_f1"] is not None, (line["task"], line["method"])

    report = tmp_path / "report.json"
    assert main(["funbench-report", str(out), "--json", str(report), "--n-boot", "20"]) == 0
    found = json.loads(report.read_text())
    summaries = found["summaries"]
    assert set(summaries) == {"ve", "llm", "holistic"}
    for mode, method in MODES.items():
        mine = [line for line in lines if line.get("kind", "task") != "group" and line["method"] == method]
        if all(line.get("n_answered") == 0 for line in mine):  # a tiny model may read as no answer at all
            assert summaries[mode] == [] and any("no answers" in n and method in n for n in found["notes"])
        else:
            assert len(summaries[mode]) == 1 and summaries[mode][0]["mean"] is not None

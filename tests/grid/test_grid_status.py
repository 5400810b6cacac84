"""grid status: each unit and job read from the output folders as done, partial, stale or missing; the local
executor runs only what is not done; collect refuses an unfinished grid and rescores lost results lines."""

import json
from pathlib import Path

import pytest

from focus_eval.cli import main
from focus_eval.grid.plan import GridJob, Plan, Settings, read_plan
from focus_eval.grid.status import adapter_state, job_state, plan_status, to_run, unit_state
from focus_eval.results.layout import OutputLayout

EXPECTED = {"task_hash": "t1", "preset_hash": "p1", "method": "prompt", "seed": 0, "n_boot": 1000}


def write_unit(layout: OutputLayout, lines: int, meta: dict | None, task="dr_x", method="prompt") -> None:
    samples = layout.samples(task, method)
    samples.parent.mkdir(parents=True, exist_ok=True)
    samples.write_text("".join(json.dumps({"image_id": f"i{n}"}) + "\n" for n in range(lines)))
    if meta is not None:
        layout.meta(task, method).write_text(json.dumps(meta))


def test_unit_state_reads_each_state_from_the_files(tmp_path):
    layout = OutputLayout(tmp_path / "m")
    assert unit_state(layout.root, "dr_x", "prompt", EXPECTED).state == "missing"
    part = layout.part("dr_x", "prompt", 0)
    part.parent.mkdir(parents=True)
    part.write_text('{"image_id": "a"}\n{"image_id": "b"}\n')
    state = unit_state(layout.root, "dr_x", "prompt", EXPECTED)
    assert (state.state, state.reason) == ("partial", "2 sample lines, unfinished")
    part.unlink()
    write_unit(layout, 3, None)
    assert unit_state(layout.root, "dr_x", "prompt", EXPECTED).state == "partial"
    write_unit(layout, 3, {**EXPECTED, "n_expected": 5})
    assert unit_state(layout.root, "dr_x", "prompt", EXPECTED).reason == "3 of 5 sample lines"
    write_unit(layout, 5, {**EXPECTED, "n_expected": 5})
    assert unit_state(layout.root, "dr_x", "prompt", EXPECTED).state == "done"
    write_unit(layout, 5, {**EXPECTED, "task_hash": "t0", "seed": 1})
    state = unit_state(layout.root, "dr_x", "prompt", EXPECTED)
    assert (state.state, state.reason) == ("stale", "changed: seed, task_hash")


def test_a_unit_without_the_validation_rows_the_plan_writes_is_partial_and_one_with_more_is_done(tmp_path):
    layout = OutputLayout(tmp_path / "m")
    wants, plain = {**EXPECTED, "val_rows": True}, {**EXPECTED, "val_rows": False}
    for recorded in ({**EXPECTED, "n_expected": 5}, {**EXPECTED, "n_expected": 5, "val_rows": False}):
        write_unit(layout, 5, recorded)  # recorded before validation rows were written, or with --no-val-scores
        state = unit_state(layout.root, "dr_x", "prompt", wants)
        assert (state.state, state.reason) == ("partial", "its sample file has no validation rows")
    write_unit(layout, 5, {**EXPECTED, "n_expected": 5, "val_rows": True})
    assert unit_state(layout.root, "dr_x", "prompt", wants).state == "done"
    assert unit_state(layout.root, "dr_x", "prompt", plain).state == "done"  # more rows than wanted: kept


def test_adapter_state_and_job_state(tmp_path):
    expected = {"preset_hash": "p1", "task_hash": "t1", "train_dataset": "brset", "train_target": "dr"}
    folder = tmp_path / "sft-dr_brset"
    assert adapter_state(folder, expected).state == "missing"
    (folder / "checkpoints" / "step-000020").mkdir(parents=True)
    assert adapter_state(folder, expected).state == "partial"
    (folder / "focus_eval_adapter.json").write_text(json.dumps({**expected, "created": "x"}))
    assert adapter_state(folder, expected).state == "done"
    (folder / "focus_eval_adapter.json").write_text(json.dumps({**expected, "preset_hash": "p0"}))
    assert adapter_state(folder, expected).reason == "changed: preset_hash"
    assert job_state(["done", "done"]) == "done"
    assert job_state(["missing", "missing"]) == "missing"
    assert job_state(["done", "missing"]) == "partial"
    assert job_state(["done", "stale", "missing"]) == "stale"


def test_jobs_waiting_for_a_job_that_runs_again_run_again():
    from focus_eval.grid.status import JobStatus

    sft = GridJob(id="sft/m/a", kind="sft", model="m", dataset="d", tasks=["dr_d"], adapter="a")
    evaluation = GridJob(id="eval/m@a/d", kind="eval", model="m", dataset="d", tasks=["dr_d"], adapter="a",
                         after=["sft/m/a"])
    other = GridJob(id="eval/m/d", kind="eval", model="m", dataset="d", tasks=["dr_d"])
    statuses = [JobStatus(sft, "stale", reason="changed: preset_hash"), JobStatus(evaluation, "done"),
                JobStatus(other, "missing")]
    replaced = to_run(statuses, overwrite=True)
    assert [j.id for j in replaced.jobs] == ["sft/m/a", "eval/m@a/d", "eval/m/d"]
    assert replaced.replace == {"sft/m/a", "eval/m@a/d"} and replaced.held == {}
    held = to_run(statuses)
    assert [j.id for j in held.jobs] == ["eval/m/d"] and held.replace == set()
    assert held.held == {"sft/m/a": "stale (changed: preset_hash); pass --overwrite to run it again",
                         "eval/m@a/d": "waits for sft/m/a"}
    assert to_run([JobStatus(sft, "done"), JobStatus(evaluation, "done")]).jobs == []
    assert Plan(Settings("/r", "/a"), [sft, evaluation]).output_dir(evaluation) == Path("/r/m@a")
    assert Plan(Settings("/r", "/a", limit=5), [other]).output_dir(other) == Path("/r/m/limit-5")  # as the runner


def status_json(plan: Path, capsys) -> dict[str, dict]:
    capsys.readouterr()
    assert main(["grid", "status", str(plan), "--json"]) == 0
    return {row["job"]: row for row in json.loads(capsys.readouterr().out)}


@pytest.mark.slow
def test_status_of_a_half_finished_output_folder_then_run_and_collect(tmp_path, capsys):
    data, plan, out = tmp_path / "data", tmp_path / "plan.yaml", tmp_path / "results"
    assert main(["synth", "--out", str(data), "--n", "40"]) == 0
    assert main(["grid", "plan", "--models", "tiny-vit,tiny-clip", "--tasks", "synth", "--data-root", str(data),
                 "--output-path", str(out), "--cache-dir", str(tmp_path / "cache"), "--n-boot", "20",
                 "--device", "cpu", "-o", str(plan)]) == 0
    assert main(["grid", "run", str(plan), "--jobs", "eval/tiny-vit/synth_desktop,eval/tiny-vit/synth_mobile,"
                 "eval/tiny-clip/synth_desktop"]) == 0
    (out / "tiny-vit/samples/glaucoma_synth_mobile.linear_probe.meta.json").unlink()  # interrupted at the end
    stale = out / "tiny-clip/samples/dr_synth_desktop.zero_shot.meta.json"
    stale.write_text(json.dumps({**json.loads(stale.read_text()), "task_hash": "0" * 64}))  # older task file

    status = status_json(plan, capsys)
    assert {job: row["state"] for job, row in status.items()} == {
        "eval/tiny-vit/synth_desktop": "done", "eval/tiny-vit/synth_mobile": "partial",
        "eval/tiny-clip/synth_desktop": "stale", "eval/tiny-clip/synth_mobile": "missing"}
    assert status["eval/tiny-vit/synth_mobile"]["units"] == {"done": 2, "partial": 1, "stale": 0, "missing": 0}
    assert "dr_synth_desktop.zero_shot: changed: task_hash" in status["eval/tiny-clip/synth_desktop"]["reason"]
    changed = read_plan(plan)
    changed.settings.n_boot = 30  # an option that changes numbers makes finished units stale
    assert plan_status(changed)[0].state == "stale"
    plain = read_plan(plan)
    plain.settings.val_scores = False  # a plan without validation rows keeps the units that have them
    assert plan_status(plain)[0].state == "done"

    assert main(["grid", "collect", str(plan), "-o", str(tmp_path / "site")]) == 2
    assert "3 job(s) are not done" in capsys.readouterr().err
    assert main(["grid", "run", str(plan), "--dry-run"]) == 1  # the stale job waits for --overwrite
    printed = capsys.readouterr()
    assert "2 of 4 job(s) to run (local)" in printed.out and printed.out.count("focus-eval --model") == 2
    assert "held back: eval/tiny-clip/synth_desktop: stale (dr_synth_desktop.zero_shot: changed: task_hash)" \
        in printed.err
    assert main(["grid", "run", str(plan), "--dry-run", "--overwrite"]) == 0
    commands = [line for line in capsys.readouterr().out.splitlines() if line.startswith("focus-eval --model")]
    assert [("--overwrite" in line, "tiny-clip" in line) for line in commands] == [
        (False, False), (True, True), (False, True)]
    assert main(["grid", "run", str(plan), "--overwrite"]) == 0
    assert {row["state"] for row in status_json(plan, capsys).values()} == {"done"}
    assert json.loads(stale.read_text())["task_hash"] != "0" * 64

    results = out / "tiny-vit/results.jsonl"
    results.write_text("".join(results.read_text().splitlines(keepends=True)[1:]))  # a lost line
    assert main(["grid", "collect", str(plan), "-o", str(tmp_path / "site")]) == 0
    assert "rescored 1 folder(s)" in capsys.readouterr().out
    rows = json.loads((tmp_path / "site/data/results.json").read_text())
    assert len(rows) == 2 * 3 + 2 * 6

"""Several processes writing one model folder at once lose nothing: results.jsonl upserts are locked and every
file is replaced atomically under a unique temporary name."""

import json
import subprocess
import sys
import textwrap

import pytest

from focus_eval.cli import main
from focus_eval.results.schema import read_jsonl, validate_result_dict
from helpers.processes import reaped

HAMMER = textwrap.dedent("""
    import sys
    from focus_eval.results import store
    from focus_eval.results.schema import FAIRNESS_GAPS, METRICS, QUALITY_GAPS

    folder, worker, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    gaps = {g: None for g in FAIRNESS_GAPS}
    for round_ in range(rounds):
        for task in range(3):
            line = {"model": "m", "family": "vm", "domain": "general", "untrained": False, "method": "linear_probe",
                    "task": f"t{worker}_{task}", "dataset": "d", "target": "dr", "proxy": False, "adapter": None,
                    "n": round_, "n_pos": 0, "n_valid": 0, "n_unparsed": 0, "n_errors": 0,
                    "metrics": {m: None for m in METRICS}, "ci": {m: [None, None] for m in METRICS},
                    "ci_method": "image_bootstrap", "n_boot": 0,
                    "fairness": {"age": {"threshold": None, "n_min": None, **gaps}, "sex": {"n_min": None, **gaps}},
                    "robustness": {"quality": {"n_min": None, **{g: None for g in QUALITY_GAPS}}},
                    "task_version": 1, "task_hash": "h", "preset_hash": "p", "created": "now", "underpowered": True,
                    "extra": {}}
            store.upsert_line(folder, line)
""")


@pytest.mark.parametrize("attempt", range(3))
def test_eight_processes_upserting_one_results_file_lose_nothing(tmp_path, attempt):
    workers, rounds = 8, 15
    with reaped() as procs:
        procs += [subprocess.Popen([sys.executable, "-c", HAMMER, str(tmp_path), str(w), str(rounds)],
                                   stderr=subprocess.PIPE, text=True) for w in range(workers)]
        errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * workers, errors
    rows = read_jsonl(tmp_path / "results.jsonl")
    assert sorted(r["task"] for r in rows) == sorted(f"t{w}_{t}" for w in range(workers) for t in range(3))
    assert all(r["n"] == rounds - 1 for r in rows)  # every process's last write of each line survived
    for row in rows:
        validate_result_dict(row)
    assert not list(tmp_path.glob(".results.jsonl.*.tmp"))  # no temporary file left behind


@pytest.mark.slow
def test_two_runs_on_one_output_folder_keep_both_results(tmp_path):
    from focus_eval.synth.datasets import write_synthetic

    data = tmp_path / "data"
    write_synthetic(data, n=24, seed=2)
    assert main(["--model", "tiny-vit", "--tasks", "dr_synth_desktop", "--data-root", str(data), "--output-path",
                 str(tmp_path / "warm"), "--no-progress", "--num-workers", "0"]) == 0  # builds the tiny model once
    for round_ in range(3):
        out = tmp_path / f"out{round_}"
        with reaped() as procs:
            procs += [subprocess.Popen(
                [sys.executable, "-m", "focus_eval", "--model", "tiny-vit", "--tasks", task, "--data-root", str(data),
                 "--output-path", str(out), "--no-progress", "--num-workers", "0", "--n-boot", "20",
                 "--cache-dir", str(tmp_path / f"cache{i}")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True)
                for i, task in enumerate(("dr_synth_desktop,glaucoma_synth_desktop",
                                          "dr_synth_mobile,glaucoma_synth_mobile"))]
            outputs = [p.communicate(timeout=600) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outputs
        rows = read_jsonl(out / "tiny-vit" / "results.jsonl")
        assert sorted(r["task"] for r in rows) == ["dr_synth_desktop", "dr_synth_mobile", "glaucoma_synth_desktop",
                                                    "glaucoma_synth_mobile"]
        assert json.loads(json.dumps(rows)) == rows

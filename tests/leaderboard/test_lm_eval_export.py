"""`focus-eval report export --format lm-eval`: lm-evaluation-harness result files with one results entry per
task, lm-eval's metric names, and one sample file per unit whose samples are at hand."""

import json

from focus_eval.cli import main
from helpers.leaderboard_data import NO_SAMPLES, write_results


def _lines(root):
    return [json.loads(line) for path in sorted(root.glob("*/results.jsonl"))
            for line in path.read_text().splitlines() if line.strip()]


def test_export_has_one_results_entry_per_task_with_lm_eval_names(tmp_path, capsys):
    results = write_results(tmp_path / "results")
    out = tmp_path / "lm"
    assert main(["report", "export", "--format", "lm-eval", str(results), "-o", str(out)]) == 0
    assert "results files" in capsys.readouterr().out
    files = sorted(out.glob("*/results_*.json"))
    lines = _lines(results)
    configs = {(r["model"], r["method"]) for r in lines}
    assert len(files) == len(configs)
    seen = 0
    for path in files:
        data = json.loads(path.read_text())
        assert {"results", "groups", "configs", "versions", "n-samples", "config"} <= set(data)
        model, method = data["config"]["model"], data["config"]["method"]
        mine = {r["task"]: r for r in lines if (r["model"], r["method"]) == (model, method)}
        assert set(data["results"]) == set(mine) == set(data["configs"]) == set(data["versions"])
        for task, block in data["results"].items():
            line = mine[task]
            assert block["alias"] == task
            assert block["auroc,none"] == line["metrics"]["auroc"]
            low, high = line["ci"]["auroc"] if line["ci"].get("auroc") else (None, None)
            if low is None:
                assert block["auroc_stderr,none"] == "N/A"
            else:
                assert abs(block["auroc_stderr,none"] - (high - low) / 3.919927969) < 1e-9
            assert data["n-samples"][task] == {"original": line["n"], "effective": line["n_valid"]}
            assert data["higher_is_better"][task]["auroc"] is True and data["higher_is_better"][task]["ece"] is False
            stamp = path.name[len("results_"):-len(".json")]
            samples = path.parent / f"samples_{task}_{stamp}.jsonl"
            assert samples.is_file() == ((model, task) not in NO_SAMPLES)
            if samples.is_file():
                rows = [json.loads(r) for r in samples.read_text().splitlines()]
                source = results / path.parent.name.split("__")[0] / "samples" / f"{task}.{method}.jsonl"
                # the test rows (the sample file also holds the validation rows, which the export leaves out)
                mine_rows = [r for r in map(json.loads, source.read_text().splitlines()) if r["split"] == "test"] \
                    if source.exists() else None
                assert rows[0]["filter"] == "none" and [r["doc_id"] for r in rows] == list(range(len(rows)))
                if mine_rows is not None:
                    assert [r["filtered_resps"][0] for r in rows] == [r["score"] for r in mine_rows]
            seen += 1
    assert seen == len(lines)


def test_export_needs_an_output_folder(tmp_path, capsys):
    results = write_results(tmp_path / "results")
    assert main(["report", "export", str(results)]) == 2
    assert "-o DIR" in capsys.readouterr().err

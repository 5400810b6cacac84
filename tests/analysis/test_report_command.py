"""``focus-eval report``: the one door to the analyses. Its FunBench table is the leaderboard's
``data/funbench_attribution.csv``, its fine-tuning table the page's ``data/finetune-summary.csv``, and
``funbench-report`` stays an alias with the same output."""

from __future__ import annotations

import csv
import io
import json

import pytest

from focus_eval.cli import main
from focus_eval.leaderboard import build_site
from focus_eval.results.schema import dumps

TASKS = ("funbench_l1a_modality_synth", "funbench_l2b_laterality_synth", "funbench_l3a_hemorrhage_synth",
         "funbench_l3a_exudate_synth", "funbench_l4c_dr_grading_synth")
METHODS = {"holistic": "multiple_choice", "llm": "knowledge_prompt", "ve": "ve_probe"}


def funbench_results(root):
    """Four models in the three modes (the LLM and VE modes skip L1), FunBench F1 made up per model."""
    for k, model in enumerate(("m1", "m2", "m3", "m4")):
        rows = []
        for j, (mode, method) in enumerate(METHODS.items()):
            for i, task in enumerate(TASKS):
                if mode != "holistic" and task.startswith("funbench_l1"):
                    continue
                f1 = round(0.3 + 0.1 * ((k * 7 + i * 3 + j * 5) % 6), 3)
                rows.append({"model": model, "method": method, "task": task, "dataset": "synth",
                             "output_type": "multiclass", "metrics": {"funbench_f1": f1, "accuracy": f1},
                             "extra": {"random_guess": {"funbench_f1": 0.25 + 0.05 * i}}})
        (root / model).mkdir(parents=True)
        (root / model / "results.jsonl").write_text("".join(dumps(r) + "\n" for r in rows))
    return root


def compare_file(path):
    rows = [{"kind": "delta", "adapter": "a", "base_model": "b", "model": "b", "train_dataset": "x", "target": "dr",
             "test_task": f"dr_{d}", "test_dataset": d, "in_domain": d == "x", "metric": "auroc", "base": 0.7,
             "ft": 0.75, "delta": 0.05, "ci": [0.01, 0.09], "p": 0.01, "q": 0.02, "n": 300, "n_pos": 60,
             "n_boot": 100} for d in ("x", "y")]
    rows += [{"kind": "summary", "metric": "auroc", "domain": dom, "mean_delta": 0.05, "ci": [0.01, 0.09],
              "p": 0.01, "q": 0.02, "n_comparisons": n} for dom, n in (("in_domain", 4), ("ood", 1))]
    rows.append({"kind": "by_model", "metric": "auroc"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def csv_rows(text):
    return list(csv.reader(io.StringIO(text)))


def test_the_funbench_page_data_is_the_report_table(tmp_path, capsys):
    results = funbench_results(tmp_path / "out")
    build_site([results], tmp_path / "site")
    assert main(["report", "funbench", str(results), "--csv", str(tmp_path / "a.csv"), "--n-boot", "1000"]) == 0
    page = (tmp_path / "site" / "data" / "funbench_attribution.csv").read_text()
    assert csv_rows((tmp_path / "a.csv").read_text()) == csv_rows(page)
    assert len(csv_rows(page)) > 10


def test_funbench_report_is_an_alias_of_report_funbench(tmp_path, capsys):
    results = funbench_results(tmp_path / "out")
    assert main(["report", "funbench", str(results), "--n-boot", "50", "--json", str(tmp_path / "a.json")]) == 0
    new = capsys.readouterr()
    assert main(["funbench-report", str(results), "--n-boot", "50", "--json", str(tmp_path / "b.json")]) == 0
    old = capsys.readouterr()
    assert old.out.replace("b.json", "a.json") == new.out and "Spearman" in new.out
    assert "focus-eval report funbench" in old.err and new.err == ""
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()


def test_the_finetune_report_is_the_page_summary(tmp_path, capsys):
    path = compare_file(tmp_path / "compare.jsonl")
    build_site([path], tmp_path / "site")
    assert main(["report", "finetune", str(path), "--csv", str(tmp_path / "s.csv")]) == 0
    out = capsys.readouterr().out
    page = (tmp_path / "site" / "data" / "finetune-summary.csv").read_text()
    assert (tmp_path / "s.csv").read_text() == page
    assert [r[-1] for r in csv_rows(page)[1:]] == ["better", "underpowered"]
    assert "by_model (1)" in out


def test_report_lists_its_analyses(capsys):
    assert main(["report"]) == 0
    listed = capsys.readouterr().out
    assert "funbench" in listed and "finetune" in listed and "attribution" in listed
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    assert listed.strip() in capsys.readouterr().out


def test_unknown_analyses_and_missing_results_are_clear_errors(tmp_path, capsys):
    assert main(["report", "funbnch", str(tmp_path)]) == 2
    assert "did you mean funbench" in capsys.readouterr().err
    assert main(["report", "funbench"]) == 2
    assert "needs one or more RESULTS" in capsys.readouterr().err
    funbench_results(tmp_path / "out")
    assert main(["report", "finetune", str(tmp_path / "out")]) == 2
    assert "no comparison lines" in capsys.readouterr().err

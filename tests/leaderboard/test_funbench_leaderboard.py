"""The FunBench page: one row per model and mode, FunBench F1 per level and task code, the random-guess rows (the
expected score of a random run and the plug-in value), cells below the expected run greyed, FunBench's sources and
other datasets in two tables, and the confusion matrix on each multi-class task page; the yes/no pages keep
multi-class lines out of their rankings."""

import csv
import io
import json
import re

import numpy as np

from focus_eval.leaderboard import build_site
from focus_eval.leaderboard.pages.funbench import code_of
from focus_eval.results.schema import UnitMeta, dumps
from focus_eval.scoring import evaluate_samples

CLASSES = {"funbench_l2b_laterality": ["left", "right"],
           "funbench_l4c_dr_grading": ["no_dr", "mild", "moderate", "severe", "proliferative"]}


def line(model: str, method: str, subtask: str, right: float, seed: int, dataset: str = "deepdrid") -> dict:
    """A results line of ``subtask`` on ``dataset`` whose predictions are right on a ``right`` share of 40 images."""
    rng = np.random.default_rng(seed)
    task = f"{subtask}_{dataset}"
    k = len(CLASSES[subtask])
    labels = rng.integers(0, k, 40)
    preds = np.where(rng.random(40) < right, labels, (labels + 1) % k)
    samples = [{"image_id": f"i{i}", "patient_id": f"p{i}", "split": "test", "label": int(y), "score": None,
                "pred": int(p), "age": None, "sex": None, "quality": None, "error": None,
                "output_type": "multiple_choice", "probs": None} for i, (y, p) in enumerate(zip(labels, preds))]
    family = "mllm" if method == "multiple_choice" else "vm"
    meta = UnitMeta.from_dict({
        "model": model, "family": family, "domain": "general", "untrained": False, "method": method,
        "task": task, "dataset": dataset, "target": "dr_grade" if "grading" in task else "laterality",
        "proxy": False, "adapter": None, "task_version": 1,
        "task_hash": "h", "preset_hash": "p", "n_boot": 20, "seed": 0,
        "extra": {"output_type": "multiple_choice", "classes": CLASSES[subtask], "multilabel": False,
                  "ordinal": "grading" in task}})
    return evaluate_samples(samples, meta).to_dict()


def test_funbench_page_rows_random_guess_and_greyed_cells(tmp_path):
    results = tmp_path / "results"
    for model, method, right in (("good-mllm", "multiple_choice", 0.9), ("bad-probe", "linear_probe", 0.05)):
        folder = results / model
        folder.mkdir(parents=True)
        rows = [line(model, method, task, right, seed) for seed, task in enumerate(CLASSES)]
        rows.append(line(model, method, "funbench_l4c_dr_grading", right, 7, dataset="synth_desktop"))
        (folder / "results.jsonl").write_text("".join(dumps(r) + "\n" for r in rows))
    report = build_site([results], tmp_path / "site")
    page = (tmp_path / "site" / "funbench.html").read_text()
    assert "funbench.html" in report.pages and 'href="funbench.html"' in (tmp_path / "site" / "index.html").read_text()
    table = re.search(r'<table class="sortable data" id="funbench-table">(.*?)</table>', page, re.S).group(1)
    heads = re.findall(r"<th [^>]*scope=\"col\"[^>]*>([^<]+)</th>", table)
    assert heads[:10] == ["Model", "Mode", "Overall", "Coverage", "L1", "L2", "L3", "L4", "L2b", "L4c"]
    body = re.findall(r"<tr.*?</tr>", table.split("<tbody>")[1], re.S)
    assert "Random guess (expected run)" in body[0] and "Random guess (plug-in)" in body[1]
    assert "good-mllm" in body[2] and "bad-probe" in body[3] and "synth_desktop" not in table
    # the random guess of the questions: plug-in 0.5 for laterality, 2 * (1/5) * (4/5) = 0.32 for five grades;
    # the expected run of 40 questions is lower
    data = list(csv.DictReader(io.StringIO((tmp_path / "site" / "data" / "funbench.csv").read_text())))
    guess = {(r["sources"], r["model"], r["column"]): float(r["funbench_f1"]) for r in data
             if r["model"].startswith("random guess") and r["funbench_f1"]}
    plug_in, run = "random guess (plug-in)", "random guess (expected run)"
    assert guess[("funbench", plug_in, "L2b")] == 0.5 and abs(guess[("funbench", plug_in, "L4c")] - 0.32) < 0.03
    assert 0.45 < guess[("funbench", run, "L2b")] < 0.5 and guess[("funbench", run, "L4c")] < guess[
        ("funbench", plug_in, "L4c")]
    assert ("funbench", plug_in, "L1") not in guess and ("other", run, "L4c") in guess
    assert "below-chance" not in body[2] and body[3].count("below-chance") == 5  # overall, L2, L4, L2b, L4c
    assert "E-mode III" in body[2] and "E-mode I: linear probe" in body[3]
    other = re.search(r'<table class="sortable data" id="funbench-other-table">(.*?)</table>', page, re.S).group(1)
    assert "good-mllm" in other and page.index('id="funbench-table"') < page.index('id="funbench-other-table"')
    task = (tmp_path / "site" / "tasks").glob("funbench_l4c*.html")
    task_page = next(task).read_text()
    assert "confusion" in task_page and "unanswered" in task_page and "below chance" in task_page
    # multi-class lines have no AUROC: the overview's main table gets no column for their targets
    assert "laterality tasks (higher is better)" not in (tmp_path / "site" / "index.html").read_text()
    site_data = json.loads((tmp_path / "site" / "data" / "results.json").read_text())
    assert len(site_data) == 6


def test_task_codes_come_from_the_names():
    assert code_of("funbench_l4c_dr_grading_brset") == "L4c" and code_of("dr_brset") is None


def test_codes_average_their_lesions_levels_their_codes_and_overall_the_levels():
    from focus_eval.leaderboard.pages.funbench import _nested

    # L3a: haemorrhage on two datasets (0.2, 0.4) and one other lesion (0.9): L3a = (0.3 + 0.9) / 2 = 0.6, not the
    # mean of the three tasks (0.5); L3c one task (0.1): L3 = (0.6 + 0.1) / 2
    cells = _nested({"funbench_l3a_hemorrhage": [(0.2, 0.5), (0.4, 0.5)], "funbench_l3a_new_vessels": [(0.9, 0.4)],
                     "funbench_l3c_hemorrhage": [(0.1, 0.25)], "funbench_l2b_laterality": [(0.6, 0.5)]},
                    ["L1", "L2", "L3", "L4", "L2b", "L3a", "L3c"])
    assert abs(cells["L3a"].value - 0.6) < 1e-12 and abs(cells["L3"].value - 0.35) < 1e-12
    assert abs(cells["overall"].value - 0.475) < 1e-12 and cells["overall"].n == 5
    assert abs(cells["L3a"].guess - 0.45) < 1e-12 and cells["L1"].value is None

"""FunBench module attribution (``focus-eval funbench-report`` and the leaderboard section): level means, MEANs,
ranks, Spearman's rho and its bootstrap interval checked against numbers worked out by hand here, the paper's
random-guess row and Table 4 reproduced, undefined correlations, limited runs, and the command and page run end
to end on real runner outputs."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest
from scipy.stats import spearmanr

from focus_eval.cli import main
from focus_eval.results.schema import dumps

# The units (one task = one subtask on one dataset) and their codes; L3a has two units.
TASKS = {"funbench_l1a_modality_synth": "L1a", "funbench_l1b_modality_synth": "L1b",
         "funbench_l2b_laterality_synth": "L2b", "funbench_l3a_hemorrhage_synth": "L3a",
         "funbench_l3a_exudate_synth": "L3a", "funbench_l4c_dr_grading_synth": "L4c"}
GUESS = dict(zip(TASKS, (0.25, 0.375, 0.5, 0.468, 0.468, 0.319)))  # the paper's random-guess codes
RUN = dict(zip(TASKS, (0.25, 0.37, 0.49, 0.45, 0.41, 0.30)))  # an expected run, below the plug-in values
METHODS = {"holistic": "multiple_choice", "llm": "knowledge_prompt", "ve": "ve_probe"}
# FunBench F1 per task, in the order of TASKS (None: the mode skips the task)
F1 = {
    "holistic": {"m1": (0.9, 0.7, 0.8, 0.6, 0.4, 0.7), "m2": (0.8, 0.6, 0.7, 0.5, 0.3, 0.6),
                 "m3": (0.7, 0.5, 0.6, 0.4, 0.2, 0.5), "m4": (0.6, 0.4, 0.5, 0.3, 0.1, 0.4),
                 "m5": (0.5, 0.3, 0.4, 0.2, 0.0, 0.3), "api": (0.95, 0.85, 0.9, 0.8, 0.6, 0.8)},
    "llm": {"m1": (None, None, 0.9, 0.8, 0.6, 0.7), "m2": (None, None, 0.6, 0.9, 0.7, 0.8),
            "m3": (None, None, 0.8, 0.5, 0.5, 0.8), "m4": (None, None, 0.5, 0.4, 0.4, 0.5),
            "m5": (None, None, 0.7, 0.5, 0.3, 0.5)},
    "ve": {"m1": (None, None, 0.5, 0.4, 0.4, 0.5), "m2": (None, None, 0.9, 0.8, 0.8, 0.9),
           "m3": (None, None, 0.6, 0.5, 0.5, 0.6), "m4": (None, None, 0.8, 0.7, 0.7, 0.8),
           "m5": (None, None, 0.7, 0.6, 0.6, 0.7), "dinov2-l": (None, None, 0.95, 0.9, 0.9, 0.95)},
}
# Worked out by hand: a level is the mean of its codes (L3a = mean of its two units), MEAN the mean of the levels.
LEVELS = {
    ("holistic", "m1"): {"L1": 0.8, "L2": 0.8, "L3": 0.5, "L4": 0.7},  # L1 = (0.9 + 0.7) / 2, L3 = (0.6 + 0.4) / 2
    ("holistic", "api"): {"L1": 0.9, "L2": 0.9, "L3": 0.7, "L4": 0.8},
    ("llm", "m2"): {"L2": 0.6, "L3": 0.8, "L4": 0.8},
    ("ve", "dinov2-l"): {"L2": 0.95, "L3": 0.9, "L4": 0.95},
}
MEAN = {
    "holistic": {"api": 0.825, "m1": 0.7, "m2": 0.6, "m3": 0.5, "m4": 0.4, "m5": 0.3},  # m1: 2.8 / 4
    # no L1 in these modes: MEAN over L2-L4; m1 (0.9 + 0.7 + 0.7) / 3
    "llm": {"m1": 2.3 / 3, "m2": 2.2 / 3, "m3": 2.1 / 3, "m5": 1.6 / 3, "m4": 1.4 / 3},
    "ve": {"dinov2-l": 2.8 / 3, "m2": 2.6 / 3, "m4": 2.3 / 3, "m5": 2.0 / 3, "m3": 1.7 / 3, "m1": 1.4 / 3},
}
RANKS = {"holistic": {"api": 1, "m1": 2, "m2": 3, "m3": 4, "m4": 5, "m5": 6},
         "llm": {"m1": 1, "m2": 2, "m3": 3, "m5": 4, "m4": 5},
         "ve": {"dinov2-l": 1, "m2": 2, "m4": 3, "m5": 4, "m3": 5, "m1": 6}}
# Over m1..m5 (the models in both), ranked again among them: holistic 1 2 3 4 5, LLM 1 2 3 5 4 -> sum d^2 = 2,
# rho = 1 - 6 * 2 / (5 * 24) = 0.9; VE 5 1 4 2 3 -> sum d^2 = 16 + 1 + 1 + 4 + 4 = 26, rho = 1 - 156 / 120 = -0.3
RHO = {"llm": 0.9, "ve": -0.3}


def result(model: str, mode: str, task: str, f1: float, **extra) -> dict:
    method = "linear_probe" if model == "dinov2-l" else METHODS[mode]
    return {"model": model, "method": method, "task": task, "dataset": "ddr", "output_type": "multiclass",
            "metrics": {"funbench_f1": f1, "accuracy": f1},
            "extra": {"random_guess": {"funbench_f1": GUESS[task], "funbench_f1_run": RUN[task],
                                       "funbench_f1_run_method": "exact"}},
            **extra}


def write_results(root, rows_by_model: dict[str, list[dict]]) -> None:
    for model, rows in rows_by_model.items():
        (root / model).mkdir(parents=True, exist_ok=True)
        (root / model / "results.jsonl").write_text("".join(dumps(r) + "\n" for r in rows))


@pytest.fixture()
def results(tmp_path):
    rows: dict[str, list[dict]] = {}
    for mode, per_model in F1.items():
        for model, values in per_model.items():
            rows.setdefault(model, []).extend(result(model, mode, t, v) for t, v in zip(TASKS, values)
                                              if v is not None)
    # left out: a --limit run that would make m5 best, a zero-shot line, a non-FunBench task
    (tmp_path / "out" / "m5" / "limit-2").mkdir(parents=True)
    limited = result("m5", "holistic", "funbench_l2b_laterality_synth", 1.0, limited=True)
    limited["extra"]["limit"] = 2
    (tmp_path / "out" / "m5" / "limit-2" / "results.jsonl").write_text(dumps(limited) + "\n")
    rows["m1"].append({**result("m1", "holistic", "funbench_l4c_dr_grading_synth", 0.0), "method": "zero_shot"})
    rows["m1"].append({"model": "m1", "method": "multiple_choice", "task": "dr_brset", "metrics": {"auroc": 0.9}})
    write_results(tmp_path / "out", rows)
    return tmp_path / "out"


def reference_bootstrap(n_boot: int, seed: int) -> dict[str, list[float]]:
    """The bootstrap written out independently: codes resampled with replacement, MEANs, rho by scipy."""
    codes = sorted(set(TASKS.values()))
    code_scores = {}
    for mode, per_model in F1.items():
        for model, values in per_model.items():
            by_code: dict[str, list[float]] = {}
            for task, v in zip(TASKS, values):
                if v is not None:
                    by_code.setdefault(TASKS[task], []).append(v)
            code_scores[(mode, model)] = {c: sum(v) / len(v) for c, v in by_code.items()}
    rng = np.random.default_rng(seed)
    out: dict[str, list[float]] = {"llm": [], "ve": []}
    for _ in range(n_boot):
        draw = [codes[i] for i in rng.integers(0, len(codes), len(codes))]

        def mean_of(mode, model):
            levels = {}
            for c in draw:
                if c in code_scores[(mode, model)]:
                    levels.setdefault(c[:2], []).append(code_scores[(mode, model)][c])
            return np.mean([np.mean(v) for v in levels.values()]) if levels else None

        common = ["m1", "m2", "m3", "m4", "m5"]
        holistic = [mean_of("holistic", m) for m in common]
        for mode in out:
            other = [mean_of(mode, m) for m in common]
            if None in other or len(set(np.round(other, 12))) == 1:
                continue
            out[mode].append(spearmanr(np.round(holistic, 12), np.round(other, 12)).statistic)
    return out


def test_report_matches_the_hand_computation(results, tmp_path, capsys):
    out = tmp_path / "report.json"
    assert main(["funbench-report", str(results), "--json", str(out), "--n-boot", "200", "--seed", "7"]) == 0
    report = json.loads(out.read_text())
    rows = {(mode, s["model"]): s for mode, lines in report["summaries"].items() for s in lines}
    for (mode, model), levels in LEVELS.items():
        assert rows[(mode, model)]["levels"] == pytest.approx(levels, abs=1e-12)
    assert rows[("holistic", "m1")]["codes"]["L3a"] == pytest.approx(0.5)  # (0.6 + 0.4) / 2: mean over units
    assert rows[("holistic", "m1")]["tasks"]["funbench_l3a_exudate_synth"] == 0.4  # each line stays available
    for mode, means in MEAN.items():
        assert [s["model"] for s in report["summaries"][mode]] == list(means)  # best first; no limited run
        assert {m: rows[(mode, m)]["mean"] for m in means} == pytest.approx(means, abs=1e-12)
        assert {m: rows[(mode, m)]["rank"] for m in means} == RANKS[mode]
    assert rows[("ve", "dinov2-l")]["method"] == "linear_probe" and rows[("holistic", "m1")]["n_tasks"] == 6
    reference = reference_bootstrap(200, 7)
    for c in report["correlations"]:
        assert c["rho"] == pytest.approx(RHO[c["mode"]], abs=1e-12)
        assert c["n_models"] == 5 and c["models"] == ["m1", "m2", "m3", "m4", "m5"] and c["reason"] is None
        assert c["n_valid"] == len(reference[c["mode"]]) > 150
        assert c["ci"] == pytest.approx(list(np.percentile(reference[c["mode"]], [2.5, 97.5])), abs=1e-12)
    llm = next(c for c in report["correlations"] if c["mode"] == "llm")
    assert llm["ci"][0] < llm["rho"] <= llm["ci"][1] <= 1.0 and llm["ci"][0] < 0.5  # resampling moves the LLM ranks
    assert report["resampled"] == "task codes" and report["n_boot"] == 200 and report["seed"] == 7
    # random guess over every task: L1 (0.25 + 0.375) / 2, L2 0.5, L3 0.468, L4 0.319; LLM mode: no L1
    plug_in, run = report["random_guess"]["plug_in"], report["random_guess"]["expected_run"]
    assert plug_in["all"]["mean"] == pytest.approx((0.3125 + 0.5 + 0.468 + 0.319) / 4)
    assert plug_in["llm"]["mean"] == pytest.approx((0.5 + 0.468 + 0.319) / 3)
    # the expected run: L3a the mean of its two lesions (0.45 + 0.41) / 2
    assert run["all"]["codes"]["L3a"] == pytest.approx(0.43)
    assert run["all"]["mean"] == pytest.approx(((0.25 + 0.37) / 2 + 0.49 + 0.43 + 0.30) / 4)
    assert report["sources"] == "funbench" and report["other_datasets"] is None and "documented" not in report[
        "random_guess"]
    text = capsys.readouterr().out
    assert re.search(r"^m1 +0\.700 +2 +0\.767 +1 +0\.467 +6$", text, re.M)
    assert re.search(r"^random guess \(plug-in\) +0\.400 +0\.429 +0\.429", text, re.M)
    assert re.search(r"^random guess \(expected run\) +0\.38[23] +0\.407 +0\.407", text, re.M)
    assert "vs E-mode II (LLM): rho = 0.900" in text and "vs E-mode I (VE): rho = -0.300" in text


def test_limited_runs_count_only_when_asked(results, tmp_path):
    out = tmp_path / "report.json"
    assert main(["funbench-report", str(results), "--json", str(out), "--n-boot", "0", "--include-limited"]) == 0
    report = json.loads(out.read_text())
    limited = [s for s in report["summaries"]["holistic"] if s["model"] == "m5 [limit 2]"]
    assert len(limited) == 1 and limited[0]["mean"] == 1.0 and limited[0]["rank"] == 1
    assert all(c["ci"] is None and c["n_valid"] == 0 for c in report["correlations"])  # no resample asked


def test_ties_share_ranks_and_undefined_correlations_say_why(tmp_path, capsys):
    task = "funbench_l2b_laterality_synth"
    rows = {m: [result(m, "holistic", task, v), result(m, "llm", task, 0.5)]
            for m, v in (("a", 0.7), ("b", 0.6), ("c", 0.6), ("d", 0.2))}
    rows["a"].append(result("a", "ve", task, 0.9))
    rows["b"].append(result("b", "ve", task, 0.8))
    write_results(tmp_path / "out", rows)
    out = tmp_path / "r.json"
    assert main(["funbench-report", str(tmp_path / "out"), "--json", str(out), "--n-boot", "50"]) == 0
    report = json.loads(out.read_text())
    assert {s["model"]: s["rank"] for s in report["summaries"]["holistic"]} == {"a": 1, "b": 2.5, "c": 2.5, "d": 4}
    assert {s["model"]: s["rank"] for s in report["summaries"]["llm"]} == {m: 2.5 for m in "abcd"}
    llm, ve = report["correlations"]
    assert llm["rho"] is None and llm["reason"] == "the ranks of one mode are all equal" and llm["n_models"] == 4
    assert ve["rho"] is None and ve["reason"] == "fewer than 3 models in both modes" and ve["n_models"] == 2
    text = capsys.readouterr().out
    assert "vs E-mode I (VE): undefined (fewer than 3 models in both modes; n = 2 model(s))" in text


def test_paper_rows_are_reproduced(tmp_path):
    """The paper's random-guess codes give its MEAN 0.393; its E-mode I CLIP-ViT row (no L1) 0.578; its
    E-mode II and III MEANs of the nine open MLLMs give Table 4's rho 0.917."""
    codes = {"l1a": 0.250, "l1b": 0.375, "l2a": 0.500, "l2b": 0.500, "l3a": 0.468, "l3b": 0.458, "l3c": 0.250,
             "l3d": 0.269, "l4a": 0.500, "l4b": 0.398, "l4c": 0.319, "l4d": 0.372}
    clip = {"l2b": 0.820, "l3a": 0.373, "l4a": 0.814, "l4b": 0.175, "l4c": 0.556, "l4d": 0.621}
    holistic = {"janus": 0.355, "llava15": 0.418, "qilin": 0.426, "llava16": 0.435, "llavamed": 0.440,
                "qwen25": 0.480, "internvl": 0.506, "qwen2": 0.520, "huatuo": 0.523}
    llm = {"janus": 0.409, "qilin": 0.473, "llava15": 0.487, "llavamed": 0.529, "llava16": 0.604, "qwen25": 0.654,
           "qwen2": 0.673, "huatuo": 0.692, "internvl": 0.703}

    def line(model, method, code, f1):
        return {"model": model, "method": method, "task": f"funbench_{code}_x_paper", "dataset": "jsiec",
                "output_type": "multiclass", "metrics": {"funbench_f1": f1}}

    rows = {"guess": [line("guess", "multiple_choice", c, v) for c, v in codes.items()],
            "clip": [line("clip", "ve_probe", c, v) for c, v in clip.items()]}
    for model in holistic:  # one task each, so that MEAN is the paper's MEAN
        rows[model] = [line(model, "multiple_choice", "l2b", holistic[model]),
                       line(model, "knowledge_prompt", "l2b", llm[model])]
    write_results(tmp_path / "out", rows)
    assert main(["funbench-report", str(tmp_path / "out"), "--json", str(tmp_path / "r.json"), "--n-boot", "0"]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    guess = next(s for s in report["summaries"]["holistic"] if s["model"] == "guess")
    assert guess["levels"] == pytest.approx({"L1": 0.3125, "L2": 0.5, "L3": 0.36125, "L4": 0.39725})
    assert round(guess["mean"], 3) == 0.393
    assert round(report["summaries"]["ve"][0]["mean"], 3) == 0.578
    assert round(report["correlations"][0]["rho"], 3) == 0.917 and report["correlations"][0]["n_models"] == 9


def test_no_funbench_lines_is_a_clear_error(tmp_path, capsys):
    write_results(tmp_path / "out", {"m": [{"model": "m", "method": "linear_probe", "task": "dr_brset",
                                            "metrics": {"auroc": 0.8}}]})
    assert main(["funbench-report", str(tmp_path / "out")]) == 2
    assert "no FunBench results lines" in capsys.readouterr().err


def test_the_leaderboard_section_shows_the_same_numbers(results, tmp_path):
    from focus_eval.leaderboard import build_site

    build_site([results], tmp_path / "site")
    page = (tmp_path / "site" / "funbench.html").read_text()
    section = page.split('id="attribution"')[1]
    table = re.search(r'<table class="sortable data" id="funbench-attribution">(.*?)</table>', section, re.S).group(1)
    body = re.findall(r"<tr.*?</tr>", table.split("<tbody>")[1], re.S)
    assert "Random guess" in body[0] and "api" in body[1] and "m1" in body[2] and "dinov2-l" in body[-1]
    assert re.findall(r'data-value="([^"]*)"', body[2])[1:] == ["0.7", "2.0", "0.7666666666666666", "1.0",
                                                                 "0.4666666666666666", "6.0"]
    assert "Spearman &rho; = 0.900" in section and "Spearman &rho; = -0.300" in section
    data = list(csv.DictReader(io.StringIO((tmp_path / "site" / "data" / "funbench_attribution.csv").read_text())))
    rho = {r["mode"]: float(r["rho"]) for r in data if r["row"] == "spearman"}
    assert rho == pytest.approx(RHO) and {r["model"] for r in data if r["row"] == "model"} == {*F1["ve"], "api"}


MLLMS = ("tiny-qwen-vl", "tiny-medgemma", "tiny-llava-next")


def scored_lines(model_dir, method: str, seed: int) -> None:
    """Results lines of ``method`` made by the runner's scoring from the model's multiple-choice samples, for a
    mode the runner does not offer yet: a random half of the answers set to the truth. L4a is skipped in the LLM
    mode, as FunBench does."""
    from focus_eval.results.schema import read_jsonl
    from focus_eval.results.store import read_meta, upsert_line
    from focus_eval.scoring import evaluate_samples

    rng = np.random.default_rng(seed)
    for meta_path in sorted((model_dir / "samples").glob("*.multiple_choice.meta.json")):
        meta = read_meta(meta_path).to_dict()
        if method == "knowledge_prompt" and meta["task"].startswith("funbench_l4a"):
            continue
        samples = read_jsonl(meta_path.parent / f"{meta['task']}.multiple_choice.jsonl")
        for s in samples:
            s["pred"] = s["label"] if rng.random() < 0.5 else s["pred"]
        upsert_line(model_dir, evaluate_samples(samples, {**meta, "method": method}))


def hand_means(out) -> dict[tuple[str, str], float]:
    """(mode, model) -> MEAN from the results files: code = mean over its tasks, level = mean over its codes."""
    from focus_eval.results.schema import read_jsonl

    modes = {"multiple_choice": "holistic", "knowledge_prompt": "llm", "ve_probe": "ve", "linear_probe": "ve"}
    codes: dict[tuple[str, str], dict[str, list[float]]] = {}
    for path in out.glob("*/results.jsonl"):
        for r in read_jsonl(path):
            if r.get("kind") != "group" and r["method"] in modes and r["metrics"]["funbench_f1"] is not None:
                code = r["task"].split("_")[1].upper()[:2] + r["task"].split("_")[1][2]
                codes.setdefault((modes[r["method"]], r["model"]), {}).setdefault(code, []).append(
                    r["metrics"]["funbench_f1"])
    out_means = {}
    for key, per_code in codes.items():
        levels: dict[str, list[float]] = {}
        for code, values in per_code.items():
            levels.setdefault(code[:2], []).append(sum(values) / len(values))
        out_means[key] = sum(sum(v) / len(v) for v in levels.values()) / len(levels)
    return out_means


def answer_by_first_letter(monkeypatch) -> None:
    """A tiny random model rarely writes a readable answer, and a line with none is unscored: here each multiple-
    choice answer (with or without the image) is written as the option letter its first token puts first."""
    from focus_eval.adapters.mllm import MLLMScorer

    def rows(found):
        for item in found:
            yield from rows(item) if isinstance(item, list) else [item]

    for name in ("score_options_and_generate_multi", "score_options_and_generate_text"):
        def answered(self, *args, _original=getattr(MLLMScorer, name), **kwargs):
            found = _original(self, *args, **kwargs)
            for row in rows(found):
                row["text"] = max(row["letters"], key=row["letters"].get)
            return found

        monkeypatch.setattr(MLLMScorer, name, answered)


@pytest.mark.slow
def test_report_and_page_on_real_runner_outputs(tmp_path, capsys, monkeypatch):
    from focus_eval.leaderboard import build_site
    from focus_eval.runner.methods import METHODS
    from focus_eval.synth.datasets import write_synthetic

    write_synthetic(tmp_path / "data", n=40, seed=2)
    answer_by_first_letter(monkeypatch)
    out = tmp_path / "out"
    common = ["--tasks", "funbench_synth_desktop", "--data-root", str(tmp_path / "data"), "--output-path", str(out),
              "--cache-dir", str(tmp_path / "cache"), "--n-boot", "20", "--no-progress", "--num-workers", "0",
              "--batch-size", "4"]
    modular = [m for m in ("ve_probe", "knowledge_prompt") if m in METHODS.names()]
    for seed, model in enumerate(MLLMS):
        assert main(["--model", model, "--methods", ",".join(["multiple_choice", *modular]), *common]) == 0
        for method in {"ve_probe", "knowledge_prompt"} - set(modular):
            scored_lines(out / model, method, seed)
    assert main(["--model", "tiny-clip", "--methods", "linear_probe", *common]) == 0  # the vision baseline row
    capsys.readouterr()
    # tiny random models rarely write a readable answer: --coverage-floor 0 ranks them, to check the mechanics
    assert main(["funbench-report", str(out), "--json", str(tmp_path / "r.json"), "--n-boot", "50",
                 "--coverage-floor", "0"]) == 0
    text = capsys.readouterr().out
    # synthetic data: not among FunBench's sources, so the report is the other datasets' one
    whole = json.loads((tmp_path / "r.json").read_text())
    assert whole["codes"] == [] and whole["other_datasets"]["sources"] == "other"
    report = whole["other_datasets"]
    assert {m: {s["model"] for s in rows} for m, rows in report["summaries"].items()} == {
        "holistic": set(MLLMS), "llm": set(MLLMS), "ve": {*MLLMS, "tiny-clip"}}
    means = {(mode, s["model"]): s["mean"] for mode, rows in report["summaries"].items() for s in rows}
    assert means == pytest.approx(hand_means(out), abs=1e-12)
    assert "L1" not in report["summaries"]["llm"][0]["levels"]
    for c in report["correlations"]:
        assert c["n_models"] == 3 and c["models"] == sorted(MLLMS)
        assert (c["rho"] is None) == (c["reason"] == "the ranks of one mode are all equal")
        assert f"vs {'E-mode II (LLM)' if c['mode'] == 'llm' else 'E-mode I (VE)'}: " in text
    assert all(re.search(rf"^{m} +\d\.\d{{3}} +[\d.]+ +\d\.\d{{3}} +[\d.]+ +\d\.\d{{3}} +[\d.]+$", text, re.M)
               for m in MLLMS)
    build_site([out], tmp_path / "site", coverage_floor=0.0)
    page = (tmp_path / "site" / "funbench.html").read_text().split('id="attribution-other"')[1]
    table = re.search(r'id="funbench-attribution-other">(.*?)</table>', page, re.S).group(1)
    assert len(re.findall(r"<tr", table.split("<tbody>")[1])) == 1 + 4  # random guess, 3 MLLMs, tiny-clip
    assert page.count("Holistic vs E-mode") == 2


def test_a_code_averages_its_lesions_each_over_its_datasets():
    """FunBench's L3 unit is the lesion: haemorrhage on two datasets (0.2, 0.4) and new vessels on one (0.9) give
    L3a = (0.3 + 0.9) / 2 = 0.6, not the mean of the three tasks (0.5)."""
    from focus_eval.analysis.attribution import LineScore, attribute, subtask_of

    assert subtask_of("funbench_l3a_hemorrhage_idrid_seg", "idrid_seg") == "funbench_l3a_hemorrhage"
    assert subtask_of("funbench_l3a_hemorrhage_x_paper", None) == "funbench_l3a_hemorrhage_x_paper"
    scores = [LineScore("m", "multiple_choice", "funbench_l3a_hemorrhage_ddr", 0.2, dataset="ddr"),
              LineScore("m", "multiple_choice", "funbench_l3a_hemorrhage_idrid_seg", 0.4, dataset="idrid_seg"),
              LineScore("m", "multiple_choice", "funbench_l3a_new_vessels_retinal_lesions", 0.9,
                        dataset="retinal_lesions")]

    [summary] = attribute(scores, n_boot=0).summaries["holistic"]
    assert summary.codes["L3a"] == pytest.approx(0.6) and summary.subtasks == pytest.approx(
        {"funbench_l3a_hemorrhage": 0.3, "funbench_l3a_new_vessels": 0.9})
    assert summary.n_tasks == 3 and summary.tasks["funbench_l3a_hemorrhage_ddr"] == 0.2


def test_lines_on_other_datasets_are_reported_apart(tmp_path):
    rows = {"m": [{**result("m", "holistic", "funbench_l2b_laterality_synth", 0.7), "dataset": "oia_odir"},
                  {**result("m", "holistic", "funbench_l2b_laterality_synth", 0.2), "dataset": "brset",
                   "task": "funbench_l2b_laterality_brset"}]}
    write_results(tmp_path / "out", rows)
    assert main(["report", "funbench", str(tmp_path / "out"), "--json", str(tmp_path / "r.json"), "--n-boot", "0"]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert [s["mean"] for s in report["summaries"]["holistic"]] == [0.7]  # the paper's sources only
    other = report["other_datasets"]
    assert other["sources"] == "other" and [s["mean"] for s in other["summaries"]["holistic"]] == [0.2]

"""Samples -> results line (counting rules, intervals, prompt diagnostics), the output store, `focus-eval score`,
group aggregation, and the record validators; no NaN ever reaches written JSON."""

import json
import math

import numpy as np
import pytest
from sklearn import metrics as skm

from focus_eval.cli import main
from focus_eval.errors import FocusError
from focus_eval.metrics.aggregate import aggregate_group
from focus_eval import scoring
from focus_eval.scoring import evaluate_samples
from focus_eval.runner.methods import get_method
from focus_eval.results import store
from focus_eval.results.layout import OutputLayout
from focus_eval.results.schema import SampleLine, validate_result_dict, validate_sample_dict


def meta_for(task="dr_idrid", method="prompt", **over):
    meta = {"model": "tiny-medgemma", "family": "mllm", "domain": "medical", "untrained": True, "method": method,
            "task": task, "dataset": "idrid", "target": "dr", "proxy": False, "adapter": None, "task_version": 1.0,
            "task_hash": "a" * 64, "preset_hash": "b" * 16, "age_threshold": 50.0, "n_boot": 200, "seed": 3,
            "created": "2026-01-01T00:00:00Z", "threshold_rule": get_method(method).hard_label}
    meta.update(over)
    return meta


def prompt_samples(n=60, seed=0, patient_pairs=True):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        label = int(rng.random() < 0.4)
        p_yes = float(np.clip(0.35 * label + 0.6 * rng.random(), 0, 1))
        p_no = float(np.clip(1 - p_yes - 0.3 * rng.random(), 0, 1 - p_yes))
        text = "yes" if p_yes > 0.45 else "no"
        row = SampleLine(image_id=f"img{i:03d}", patient_id=f"pt{i // 2}" if patient_pairs else f"img{i:03d}",
                         split="test", label=label, score=p_yes, pred=int(text == "yes"),
                         age=float(30 + i), sex="male" if i % 2 else "female",
                         quality="inadequate" if i % 5 == 0 else "adequate",
                         p_yes=p_yes, p_no=p_no, score_norm=p_yes / (p_yes + p_no), text=text, parsed=True)
        if i in (3, 17, 40):  # unreadable image: no output at all
            row.score = row.pred = row.p_yes = row.p_no = row.score_norm = row.text = None
            row.parsed = None
            row.error = "image unreadable"
        if i in (5, 22, 31, 44):  # the model answered neither yes nor no
            row.pred, row.text, row.parsed = None, "**Answer**", False
        rows.append(row)
    return rows


def probe_samples(n=80, seed=1):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        label = int(rng.random() < 0.3)
        score = float(np.clip(0.4 * label + 0.6 * rng.random(), 0, 1))
        rows.append(SampleLine(image_id=f"r{i}", patient_id=f"r{i}", split="test", label=label, score=score,
                               pred=int(score >= 0.5), age=None, sex=None, quality=None))
    return rows


def test_counting_rules_and_metric_rows():
    samples = prompt_samples()
    result = evaluate_samples(samples, meta_for())
    assert (result.n, result.n_errors, result.n_unparsed, result.n_valid) == (60, 3, 4, 57)
    assert result.extra["n_threshold"] == 53
    assert result.n_pos == sum(s.label for s in samples)
    score_rows = [s for s in samples if s.error is None]
    pred_rows = [s for s in score_rows if s.parsed]
    y_s, p_s = [s.label for s in score_rows], [s.score for s in score_rows]
    y_p, d_p = [s.label for s in pred_rows], [s.pred for s in pred_rows]
    assert result.metrics["auroc"] == pytest.approx(skm.roc_auc_score(y_s, p_s))
    assert result.metrics["auprc"] == pytest.approx(skm.average_precision_score(y_s, p_s))
    assert result.metrics["brier"] == pytest.approx(skm.brier_score_loss(y_s, p_s))
    # accuracy counts the unparsed rows as wrong: correct parsed answers over every row without an error
    correct = sum(s.pred == s.label for s in pred_rows)
    assert result.metrics["accuracy"] == pytest.approx(correct / len(score_rows))
    assert result.metrics["f1"] == pytest.approx(skm.f1_score(y_p, d_p))
    assert (result.n_answered, result.coverage) == (53, pytest.approx(53 / 60))
    assert result.ci_method == "patient_bootstrap" and result.n_boot == 200
    for name, (low, high) in result.ci.items():
        assert low <= high, name
    assert result.fairness["age"]["threshold"] == 50.0
    assert result.fairness["sex"]["n_min"] == 28  # 57 usable rows, 28 or 29 per sex
    assert result.robustness["quality"]["n_min"] == 11  # every 5th row, less error row 40
    assert result.underpowered is False
    validate_result_dict(json.loads(json.dumps(result.to_dict())))


def test_one_readable_answer_of_many_is_not_a_perfect_accuracy():
    samples = prompt_samples(n=62)
    for s in samples:
        if s.error is None:
            s.pred, s.text, s.parsed = None, "I cannot tell from this photograph", False
    first = next(s for s in samples if s.error is None)
    first.pred, first.text, first.parsed = first.label, "yes" if first.label else "no", True
    result = evaluate_samples(samples, meta_for())
    assert result.n_answered == 1 and result.coverage == pytest.approx(1 / 62)
    assert result.metrics["accuracy"] == pytest.approx(1 / 59)
    assert result.ci["accuracy"][1] < 0.2
    line = result.to_dict()
    assert line["coverage"] == pytest.approx(1 / 62)
    validate_result_dict(json.loads(json.dumps(line)))


def test_probe_lines_carry_no_coverage():
    line = evaluate_samples(probe_samples(), meta_for(method="linear_probe")).to_dict()
    assert "coverage" not in line and "n_answered" not in line


def test_prompt_diagnostics_agreement_and_mass():
    samples = prompt_samples()
    extra = evaluate_samples(samples, meta_for()).extra
    rows = [s for s in samples if s.error is None and s.parsed]
    agree = np.mean([s.pred == int(s.p_yes >= s.p_no) for s in rows])
    known = [s for s in samples if s.error is None]
    mass = [s.p_yes + s.p_no for s in known]
    assert extra["yes_no_agreement"] == pytest.approx(agree)
    assert extra["yes_no_mass_mean"] == pytest.approx(np.mean(mass))
    assert extra["low_mass_share"] == pytest.approx(np.mean(np.array(mass) < 0.5))
    assert extra["unparsed_rate"] == pytest.approx(4 / 60)
    assert "generated text" in extra["threshold_rule"]


def test_image_bootstrap_underpowered_and_extra_meta():
    samples = probe_samples(n=30)
    for s in samples:
        s.label = 0
    samples[0].label = 1
    meta = meta_for(method="linear_probe", probe_compat=False, contamination=True,
                    extra={"probe_C": 0.1, "split": "not-this"})
    result = evaluate_samples(samples, meta)
    assert result.ci_method == "image_bootstrap"
    assert result.underpowered is True
    assert result.extra["probe_compat"] is False and result.extra["contamination"] is True
    assert result.extra["probe_C"] == 0.1 and result.extra["split"] == "test"  # computed entries win
    assert "yes_no_agreement" not in result.extra


def test_degenerate_inputs_give_nulls_never_nan():
    one_class = probe_samples(n=20)
    for s in one_class:
        s.label = 1
    broken = probe_samples(n=5)
    for s in broken:
        s.score, s.pred, s.error = None, None, "model failed"
    for samples in (one_class, broken):
        result = evaluate_samples(samples, meta_for(method="linear_probe"))
        text = json.dumps(result.to_dict(), allow_nan=False)
        assert "NaN" not in text
        assert result.metrics["auroc"] is None and result.ci["auroc"] == [None, None]
        assert result.fairness["age"]["eo_gap"] is None
    assert evaluate_samples(broken, meta_for(method="linear_probe")).n_valid == 0


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="lacks task_hash"):
        evaluate_samples(probe_samples(), {k: v for k, v in meta_for().items() if k != "task_hash"})
    mixed = probe_samples(n=10)
    mixed[0].split = "val"
    with pytest.raises(ValueError, match="mix splits"):
        evaluate_samples(mixed, meta_for())


def test_resamples_are_rows_of_one_computation_not_one_call_each(monkeypatch):
    # What keeps 1,000 resamples cheap: every metric runs once over a matrix of weight rows, so the number of metric
    # computations does not grow with the number of resamples (speed itself is the benchmark's business)
    from focus_eval.metrics.resamples import Resamples

    calls = []
    original = Resamples.map

    def counted(self, compute):
        calls.append(self.n_boot)
        return original(self, compute)

    monkeypatch.setattr(Resamples, "map", counted)
    samples = prompt_samples(n=800, seed=5)
    counts = {}
    for n_boot in (10, 1000):
        calls.clear()
        result = evaluate_samples(samples, meta_for(n_boot=n_boot))
        assert result.n_boot == n_boot and result.ci["auroc"][0] is not None
        counts[n_boot] = len(calls)
    assert counts[10] > 0 and counts[1000] == counts[10]


def write_unit(model_dir, meta, samples):
    store.write_meta(OutputLayout(model_dir).meta(meta["task"], meta["method"]), meta)
    store.append_samples(model_dir, meta["task"], meta["method"], samples, prompt=meta["method"] == "prompt")


def test_score_reproduces_the_runner_results_exactly(tmp_path, capsys):
    model_dir = tmp_path / "out" / "tiny-medgemma"
    write_unit(model_dir, meta_for("dr_idrid", "prompt"), prompt_samples())
    write_unit(model_dir, meta_for("glaucoma_refuge", "linear_probe", dataset="refuge", target="glaucoma"),
               probe_samples())
    # the runner's path, unit by unit: samples + meta -> results line -> upsert
    scoring.score_samples(model_dir, probe_samples(), meta_for("glaucoma_refuge", "linear_probe", dataset="refuge",
                                                             target="glaucoma"))
    scoring.score_unit(model_dir, "dr_idrid", "prompt")
    written = OutputLayout(model_dir).results.read_text()
    lines = [json.loads(line, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
             for line in written.splitlines()]
    assert [(r["task"], r["method"]) for r in lines] == [("dr_idrid", "prompt"), ("glaucoma_refuge", "linear_probe")]
    for line in lines:
        validate_result_dict(line)
    assert "NaN" not in written and "Infinity" not in written

    OutputLayout(model_dir).results.unlink()
    assert main(["score", str(model_dir)]) == 0
    assert OutputLayout(model_dir).results.read_text() == written
    assert "2 results line(s)" in capsys.readouterr().out
    for row in store.read_samples(OutputLayout(model_dir).samples("dr_idrid", "prompt")):
        validate_sample_dict(row.to_dict(prompt=True), prompt=True)


def test_rescore_replaces_its_line_and_skips_incomplete_units(tmp_path, capsys):
    model_dir = tmp_path / "m"
    write_unit(model_dir, meta_for("dr_idrid", "prompt"), prompt_samples())
    scoring.score_unit(model_dir, "dr_idrid", "prompt")
    store.write_meta(OutputLayout(model_dir).meta("dr_idrid", "prompt"), meta_for("dr_idrid", "prompt", task_version=2.0))
    scoring.score_unit(model_dir, "dr_idrid", "prompt")
    lines = store.read_results(model_dir)
    assert len(lines) == 1 and lines[0]["task_version"] == 2.0

    write_unit(model_dir, meta_for("dr_jsiec", "prompt", dataset="jsiec", n_expected=100), prompt_samples(n=40))
    assert main(["score", str(model_dir)]) == 1
    out = capsys.readouterr().out
    assert "skipped dr_jsiec.prompt: incomplete: 40 of 100 samples" in out
    assert [r["task"] for r in store.read_results(model_dir)] == ["dr_idrid"]
    with pytest.raises(FocusError, match="incomplete"):
        scoring.score_unit(model_dir, "dr_jsiec", "prompt")
    with pytest.raises(FocusError, match="must be named dr_jsiec.prompt.meta.json"):
        store.write_meta(model_dir / "samples" / "x.meta.json", meta_for("dr_jsiec", "prompt"))


def test_score_rejects_orphan_and_bad_sample_files(tmp_path, capsys):
    model_dir = tmp_path / "m"
    write_unit(model_dir, meta_for("dr_idrid", "prompt"), prompt_samples(n=10))
    (model_dir / "samples" / "dr_rfmid.prompt.jsonl").write_text("")
    assert main(["score", str(model_dir)]) == 2
    assert "without a meta file: dr_rfmid.prompt.jsonl" in capsys.readouterr().err
    (model_dir / "samples" / "dr_rfmid.prompt.jsonl").unlink()
    path = OutputLayout(model_dir).samples("dr_idrid", "prompt")
    path.write_text(path.read_text().replace('"label": 0', '"label": 7', 1).replace('"label": 1', '"label": 7', 1))
    assert main(["score", str(model_dir)]) == 2
    assert "dr_idrid.prompt.jsonl, line" in capsys.readouterr().err
    assert main(["score", str(tmp_path / "nothing")]) == 2


def test_validators_catch_contract_breaks():
    good = SampleLine("i", "p", "test", 1, 0.7, 1).to_dict(prompt=False)
    validate_sample_dict(good)
    for broken, message in [({**good, "score": math.nan}, "score"), ({**good, "sex": "M"}, "sex"),
                            ({**good, "colour": 1}, "unknown key"), ({**good, "label": True}, "label"),
                            ({k: v for k, v in good.items() if k != "error"}, "missing key")]:
        with pytest.raises(ValueError, match=message):
            validate_sample_dict(broken)
    result = evaluate_samples(probe_samples(), meta_for(method="linear_probe")).to_dict()
    validate_result_dict(result)
    for path, value, message in [(("metrics", "auroc"), math.nan, "metrics.auroc"),
                                 (("ci", "f1"), [0.1], "ci.f1"),
                                 (("fairness", "sex", "dp_gap"), "big", "fairness.sex.dp_gap"),
                                 (("ci_method",), "bayes", "ci_method"),
                                 (("n",), -1, "n: expected a count")]:
        broken = json.loads(json.dumps(result))
        target = broken
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        with pytest.raises(ValueError, match=message):
            validate_result_dict(broken)
    missing = {k: v for k, v in result.items() if k != "robustness"}
    with pytest.raises(ValueError, match="missing key 'robustness'"):
        validate_result_dict(missing)


def test_group_macro_mean_excludes_proxy_and_underpowered_unless_asked():
    def line(task, auroc, proxy=False, underpowered=False, method="prompt", ece=0.1):
        return {"model": "m", "method": method, "adapter": None, "task": task, "proxy": proxy,
                "underpowered": underpowered, "metrics": {"auroc": auroc, "ece": ece}}

    results = [line("a", 0.9), line("b", 0.7), line("c", 0.5, proxy=True), line("d", 0.1, underpowered=True),
               line("e", None), line("a", 0.6, method="zero_shot")]

    class Group:
        name, tasks = "g", ("a", "b", "c", "d", "e", "f")

    out = aggregate_group(results, Group, metrics=("auroc", "ece"))
    prompt = next(r for r in out["rows"] if r["method"] == "prompt")
    assert prompt["metrics"]["auroc"] == pytest.approx(0.8) and prompt["coverage"]["auroc"] == 2
    assert prompt["metrics"]["ece"] == pytest.approx(0.1) and prompt["coverage"]["ece"] == 3
    assert prompt["excluded"] == {"c": "proxy", "d": "underpowered"} and prompt["missing"] == ["f"]
    every = aggregate_group(results, ["a", "b", "c", "d"], include_proxy=True, include_underpowered=True,
                            metrics=("auroc",))
    prompt = next(r for r in every["rows"] if r["method"] == "prompt")
    assert prompt["metrics"]["auroc"] == pytest.approx((0.9 + 0.7 + 0.5 + 0.1) / 4)
    with pytest.raises(ValueError, match="two results"):
        aggregate_group(results + [line("a", 0.2)], Group)

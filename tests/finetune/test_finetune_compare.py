"""focus-eval compare: paired deltas, bootstrap-percentile p, BH q and in-domain/OOD summaries, checked against
hand-computed values and an independent numpy/scikit-learn bootstrap."""

import json

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, roc_auc_score

from focus_eval.cli import main
from focus_eval.errors import FocusError
from focus_eval.finetune.compare import compare
from focus_eval.results.schema import write_jsonl
from focus_eval.results.layout import OutputLayout
from focus_eval.results.store import write_meta

B = 200


def sample(image_id, patient_id, label, score, pred):
    return {"image_id": image_id, "patient_id": patient_id, "split": "test", "label": int(label),
            "score": float(score), "pred": None if pred is None else int(pred), "age": None, "sex": None,
            "quality": None, "error": None, "p_yes": float(score), "p_no": float(1 - score),
            "score_norm": float(score), "text": "yes" if pred else "no", "parsed": pred is not None}


def write_unit(model_dir, task, rows, adapter=None, train_dataset=None, model="tiny-medgemma", task_hash="h"):
    dataset = task.split("_", 1)[1]
    meta = {"model": model, "family": "mllm", "domain": "medical", "untrained": True, "method": "prompt",
            "task": task, "dataset": dataset, "target": "dr", "proxy": False, "adapter": adapter,
            "task_version": 1.0, "task_hash": task_hash, "preset_hash": "p", "age_threshold": None, "n_boot": 10,
            "seed": 0}
    if adapter:
        meta.update(adapter_train_dataset=train_dataset, adapter_train_target="dr")
    write_meta(OutputLayout(model_dir).meta(task, "prompt"), meta)
    write_jsonl(OutputLayout(model_dir).samples(task, "prompt"), rows)


def layout(n_patients=12):
    """Two images per patient, one positive and one negative: every patient resample holds both classes."""
    ids, patients, labels = [], [], []
    for p in range(n_patients):
        for eye, label in (("OD", 1), ("OS", 0)):
            ids.append(f"p{p:02d}_{eye}")
            patients.append(f"p{p:02d}")
            labels.append(label)
    return ids, patients, np.array(labels)


def rows(scores, preds, n_patients=12):
    ids, patients, labels = layout(n_patients)
    return [sample(i, p, y, s, d) for i, p, y, s, d in zip(ids, patients, labels, scores, preds)]


def perfect(y):
    return rows(0.05 + 0.9 * y, y)


def reversed_(y):
    return rows(1.0 - y, 1 - y)


@pytest.fixture
def grid(tmp_path):
    """Base perfectly wrong on both test sets; 'sft-desk' (trained on synth_desktop) perfect on desktop and
    equal to the base on mobile; 'sft-mob' (trained on synth_mobile) the reverse."""
    _, _, y = layout()
    base = tmp_path / "tiny-medgemma"
    desk, mob = tmp_path / "tiny-medgemma@sft-desk", tmp_path / "tiny-medgemma@sft-mob"
    for task in ("dr_synth_desktop", "dr_synth_mobile"):
        write_unit(base, task, reversed_(y))
    write_unit(desk, "dr_synth_desktop", perfect(y), "sft-desk", "synth_desktop")
    write_unit(desk, "dr_synth_mobile", reversed_(y), "sft-desk", "synth_desktop")
    write_unit(mob, "dr_synth_desktop", reversed_(y), "sft-mob", "synth_mobile")
    write_unit(mob, "dr_synth_mobile", perfect(y), "sft-mob", "synth_mobile")
    return base, desk, mob


def by_key(lines):
    deltas = {(l["adapter"], l["test_task"], l["metric"]): l for l in lines if l["kind"] == "delta"}
    summaries = {(l["domain"], l["metric"]): l for l in lines if l["kind"] == "summary"}
    return deltas, summaries


def test_hand_computed_deltas_p_and_q(grid, capsys):
    base, desk, mob = grid
    assert main(["compare", "--base", str(base), "--ft", str(desk), str(mob), "--n-boot", str(B)]) == 0
    lines = [json.loads(line) for line in (base / "compare.jsonl").read_text().splitlines()]
    deltas, summaries = by_key(lines)
    a = 2 / (B + 1)  # delta > 0 (or < 0) in every replicate
    improved = deltas[("sft-desk", "dr_synth_desktop", "auroc")]
    assert improved["in_domain"] is True and improved["train_dataset"] == "synth_desktop"
    assert (improved["base"], improved["ft"], improved["delta"]) == (0.0, 1.0, 1.0)
    assert improved["ci"] == [1.0, 1.0] and improved["p"] == pytest.approx(a) and improved["n"] == 24
    unchanged = deltas[("sft-desk", "dr_synth_mobile", "auroc")]
    assert unchanged["in_domain"] is False and unchanged["delta"] == 0.0 and unchanged["p"] == 1.0
    # BH over the four AUROC comparisons: p = [a, 1, 1, a] -> q = [2a, 1, 1, 2a]
    assert improved["q"] == pytest.approx(2 * a) and unchanged["q"] == 1.0
    acc = deltas[("sft-mob", "dr_synth_mobile", "accuracy")]
    assert (acc["base"], acc["ft"], acc["delta"], acc["p"]) == (0.0, 1.0, 1.0, pytest.approx(a))
    ece = deltas[("sft-desk", "dr_synth_desktop", "ece")]
    # base: positives at 0, negatives at 1 -> ECE 1; fine-tuned: 0.95 / 0.05 -> ECE 0.05
    assert ece["base"] == pytest.approx(1.0) and ece["ft"] == pytest.approx(0.05)
    assert ece["delta"] == pytest.approx(-0.95) and ece["p"] == pytest.approx(a)
    for line in deltas.values():
        assert set(line) >= {"kind", "adapter", "base_model", "model", "train_dataset", "target", "test_task",
                             "test_dataset", "in_domain", "metric", "base", "ft", "delta", "ci", "p", "q", "n",
                             "n_boot", "p_method"}
        assert line["base_model"] == "tiny-medgemma" and line["model"] == f"tiny-medgemma@{line['adapter']}"
        assert line["n_boot"] == B and "not a test" in line["p_method"]
    assert {m for (_, _, m) in deltas} == {"auroc", "auprc", "accuracy", "f1", "ece"}

    ind, ood = summaries[("in_domain", "auroc")], summaries[("ood", "auroc")]
    assert ind["mean_delta"] == 1.0 and ind["ci"] == [1.0, 1.0] and ind["win_rate"] == 1.0
    assert ind["n_comparisons"] == 2 and ind["p"] == pytest.approx(a)
    assert ood["mean_delta"] == 0.0 and ood["p"] == 1.0 and ood["win_rate"] == 0.0
    assert ind["q"] == pytest.approx(2 * a) and ood["q"] == 1.0  # BH over the two domain summaries
    ece_summary = summaries[("in_domain", "ece")]
    assert ece_summary["mean_delta"] == pytest.approx(-0.95) and ece_summary["win_rate"] == 1.0  # lower is better
    assert "sft-desk" in capsys.readouterr().out


def independent_bootstrap(patients, y, base_values, ft_values, metric, n_boot, seed):
    """Patient bootstrap written out with np.repeat and scikit-learn: (delta, ci, p)."""
    keys = np.unique(np.asarray(patients, dtype=str))
    position = {k: i for i, k in enumerate(keys)}
    members = [np.flatnonzero(np.asarray(patients) == k) for k in keys]
    draws = np.random.default_rng(seed).integers(0, len(keys), size=(n_boot, len(keys)))
    assert len(position) == len(keys)
    deltas = []
    for draw in draws:
        idx = np.concatenate([members[k] for k in draw])
        deltas.append(metric(y[idx], ft_values[idx]) - metric(y[idx], base_values[idx]))
    deltas = np.array(deltas)
    point = metric(y, ft_values) - metric(y, base_values)
    low = (1 + np.sum(deltas <= 0)) / (n_boot + 1)
    high = (1 + np.sum(deltas >= 0)) / (n_boot + 1)
    return point, list(np.percentile(deltas, [2.5, 97.5])), min(1.0, 2 * min(low, high))


def test_deltas_match_an_independent_patient_bootstrap(tmp_path):
    rng = np.random.default_rng(7)
    n_patients = 30
    patients = [f"q{p:02d}" for p in range(n_patients) for _ in range(1 + p % 3)]
    y = np.array([1 if (i % 2 == 0) else 0 for i in range(len(patients))])
    # 30 patients of both classes: a resample with one class (undefined AUROC) does not occur at this seed
    base_score = np.clip(0.5 + 0.25 * (y - 0.5) + rng.normal(0, 0.25, y.size), 0, 1)
    ft_score = np.clip(0.5 + 0.6 * (y - 0.5) + rng.normal(0, 0.25, y.size), 0, 1)
    base_pred, ft_pred = (base_score >= 0.5).astype(int), (ft_score >= 0.5).astype(int)
    ids = [f"img{i:03d}" for i in range(y.size)]
    base, ft = tmp_path / "m", tmp_path / "m@sft-x"
    write_unit(base, "dr_synth_desktop", [sample(*r) for r in zip(ids, patients, y, base_score, base_pred)])
    write_unit(ft, "dr_synth_desktop", [sample(*r) for r in zip(ids, patients, y, ft_score, ft_pred)],
               adapter="sft-x", train_dataset="synth_mobile")
    report = compare(base, [ft], metrics=("auroc", "accuracy"), n_boot=B, seed=3)
    deltas, summaries = by_key(report.lines)
    for metric, fn, b, f in (("auroc", roc_auc_score, base_score, ft_score),
                             ("accuracy", accuracy_score, base_pred, ft_pred)):
        line = deltas[("sft-x", "dr_synth_desktop", metric)]
        point, ci, p = independent_bootstrap(patients, y, b, f, fn, B, seed=3)
        assert line["delta"] == pytest.approx(point, abs=1e-12)
        assert line["ci"] == pytest.approx(ci, abs=1e-12)
        assert line["p"] == pytest.approx(p, abs=1e-12)
        assert line["q"] == line["p"]  # one comparison: BH leaves p as it is
        assert line["in_domain"] is False and line["ci_method"] == "patient_bootstrap"
        # a single comparison: the summary is that comparison's delta; its draw comes from the dataset's seed
        summary = summaries[("ood", metric)]
        assert summary["mean_delta"] == pytest.approx(point) and summary["n_comparisons"] == 1


def test_summary_resamples_patients_jointly_across_comparisons_on_one_test_set(tmp_path):
    """Adapter X fixes one image of each of six patients, adapter Y breaks the other image of the same
    patients. Under one patient draw shared by both, their accuracy deltas cancel in every replicate."""
    ids, patients, y = layout()
    base_pred = np.array([1 - v if i % 2 == 0 and i < 12 else v for i, v in enumerate(y)])  # OD of p00-p05 wrong
    x_pred = y.copy()  # fixes them
    y_pred = np.array([1 - v if i < 12 else v for i, v in enumerate(y)])  # keeps those errors, breaks OS
    scores = 0.05 + 0.9 * y
    base, x, yy = tmp_path / "m", tmp_path / "m@sft-x", tmp_path / "m@sft-y"
    write_unit(base, "dr_synth_desktop", [sample(*r) for r in zip(ids, patients, y, scores, base_pred)])
    write_unit(x, "dr_synth_desktop", [sample(*r) for r in zip(ids, patients, y, scores, x_pred)], "sft-x",
               "synth_mobile")
    write_unit(yy, "dr_synth_desktop", [sample(*r) for r in zip(ids, patients, y, scores, y_pred)], "sft-y",
               "synth_mobile")
    report = compare(base, [x, yy], metrics=("accuracy",), n_boot=B, seed=0)
    deltas, summaries = by_key(report.lines)
    assert deltas[("sft-x", "dr_synth_desktop", "accuracy")]["delta"] == pytest.approx(0.25)
    assert deltas[("sft-y", "dr_synth_desktop", "accuracy")]["delta"] == pytest.approx(-0.25)
    assert deltas[("sft-x", "dr_synth_desktop", "accuracy")]["ci"][0] > 0
    summary = summaries[("ood", "accuracy")]
    assert summary["mean_delta"] == pytest.approx(0.0, abs=1e-12)
    assert summary["ci"] == pytest.approx([0.0, 0.0], abs=1e-12)  # independent draws would spread it
    assert summary["p"] == 1.0 and summary["win_rate"] == 0.5 and summary["n_boot_used"] == B


def test_unpaired_and_mismatched_rows_are_left_out_and_counted(tmp_path):
    _, _, y = layout()
    base_rows, ft_rows = reversed_(y), perfect(y)
    ft_rows.append(sample("extra_OD", "extra", 1, 0.9, 1))  # only in the fine-tuned folder
    ft_rows[0] = dict(ft_rows[0], label=1 - ft_rows[0]["label"], pred=1 - ft_rows[0]["label"])
    write_unit(tmp_path / "m", "dr_synth_desktop", base_rows)
    write_unit(tmp_path / "m@a", "dr_synth_desktop", ft_rows, "a", "synth_desktop")
    report = compare(tmp_path / "m", [tmp_path / "m@a"], metrics=("accuracy",), n_boot=20)
    line = report.lines[0]
    assert (line["n"], line["n_unpaired"], line["n_label_mismatch"]) == (23, 1, 1)
    assert any("1 unpaired" in note for note in report.notes)


def test_refuses_folders_that_cannot_be_compared(tmp_path):
    _, _, y = layout()
    write_unit(tmp_path / "m", "dr_synth_desktop", reversed_(y))
    write_unit(tmp_path / "m@a", "dr_synth_desktop", perfect(y), "a", "synth_desktop", task_hash="other")
    with pytest.raises(FocusError, match="another version of task"):
        compare(tmp_path / "m", [tmp_path / "m@a"], n_boot=10)
    write_unit(tmp_path / "m@b", "dr_synth_desktop", perfect(y))  # no adapter
    with pytest.raises(FocusError, match="not an adapter evaluation"):
        compare(tmp_path / "m", [tmp_path / "m@b"], n_boot=10)
    write_unit(tmp_path / "m@c", "dr_synth_desktop", perfect(y), "c", None)
    with pytest.raises(FocusError, match="adapter_train_dataset"):
        compare(tmp_path / "m", [tmp_path / "m@c"], n_boot=10)

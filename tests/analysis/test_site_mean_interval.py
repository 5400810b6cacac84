"""The leaderboard's mean of task scores has the group lines' interval: each task's AUROC replicates drawn from
its sample file as scoring draws them, averaged replicate by replicate (``metrics.bootstrap.mean_of_tasks``)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from focus_eval.leaderboard import build_site
from focus_eval.metrics.arrays import SampleArrays, metric_batch
from focus_eval.metrics.bootstrap import bootstrap_weights, mean_of_tasks


def samples(rng, n=60):
    rows = []
    for i in range(n):
        label = int(i % 3 == 0)
        score = float(np.clip(rng.normal(0.35 + 0.3 * label, 0.2), 0, 1))
        rows.append({"image_id": f"i{i}", "patient_id": f"p{i // 2}", "split": "test", "label": label,
                     "score": score, "pred": int(score >= 0.5), "age": None, "sex": None, "quality": None,
                     "error": None})
    return rows


def test_the_main_table_mean_uses_the_group_interval_rule(tmp_path):
    rng = np.random.default_rng(3)
    folder = tmp_path / "out" / "m"
    (folder / "samples").mkdir(parents=True)
    lines, replicates = [], []
    for task in ("dr_a", "dr_b"):
        rows = samples(rng)
        (folder / "samples" / f"{task}.linear_probe.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        arrays = SampleArrays.from_samples(rows)
        replicates.append(metric_batch("auroc", arrays, bootstrap_weights(arrays.patient_id, 50, 7)))
        lines.append({"model": "m", "method": "linear_probe", "task": task, "dataset": "a", "target": "dr",
                      "family": "vm", "n_boot": 50, "metrics": {"auroc": float(replicates[-1][0])},
                      "extra": {"seed": 7}})
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    build_site([tmp_path / "out"], tmp_path / "site")
    [row] = csv.DictReader((tmp_path / "site" / "data" / "datasets.csv").open())
    value, ci = mean_of_tasks(replicates)
    assert float(row["auroc"]) == pytest.approx(value)
    assert (float(row["ci_low"]), float(row["ci_high"])) == pytest.approx(tuple(ci))
    build_site([tmp_path / "out"], tmp_path / "private", no_samples=True)
    [row] = csv.DictReader((tmp_path / "private" / "data" / "datasets.csv").open())
    assert row["ci_low"] == row["ci_high"] == ""  # without the samples, no replicates and no interval

"""Results folders for the paired statistics (ranks, pairwise, operating points, recalibration): every model
scores the same images of a task with the same labels, two images per patient, and sample files may carry
validation rows (``split: "val"``) beside the test rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np

# (name, separation of the classes, method); a larger separation gives a higher AUROC
MODELS = (("strong", 2.0, "linear_probe"), ("middle", 1.0, "linear_probe"), ("weak", 0.3, "zero_shot"))
# (task, dataset, target, images, positives)
TASKS = (("referable_dr_a", "a", "referable_dr", 160, 60), ("referable_dr_b", "b", "referable_dr", 120, 40),
         ("glaucoma_a", "a", "glaucoma", 140, 50))


def labels(n: int, n_pos: int, rng: np.random.Generator) -> np.ndarray:
    y = np.zeros(n, dtype=int)
    y[:n_pos] = 1
    rng.shuffle(y)
    return y


def rows(split: str, y: np.ndarray, scores: np.ndarray, prefix: str = "") -> list[dict]:
    return [{"image_id": f"{prefix}{split}{i:04d}", "patient_id": f"{prefix}{split}p{i // 2:04d}", "split": split,
             "label": int(label), "score": float(score), "pred": int(score >= 0.5), "age": None, "sex": None,
             "quality": None, "error": None} for i, (label, score) in enumerate(zip(y, scores))]


def scores_for(y: np.ndarray, separation: float, rng: np.random.Generator, shift: float = 0.0) -> np.ndarray:
    return 1 / (1 + np.exp(-(separation * (2 * y - 1) + rng.normal(0, 1, y.size) + shift)))


def write_model(root: Path, model: str, method: str, tasks: dict[str, tuple[str, str]],
                samples: dict[str, list[dict]]) -> Path:
    """``root/<model>/results.jsonl`` (AUROC from the test rows) and ``samples/<task>.<method>.jsonl``."""
    from focus_eval.metrics.core import auroc

    folder = root / model
    (folder / "samples").mkdir(parents=True, exist_ok=True)
    lines = []
    for task, task_rows in samples.items():
        dataset, target = tasks[task]
        test = [r for r in task_rows if r["split"] == "test"]
        value = auroc([r["label"] for r in test], [r["score"] for r in test])
        lines.append({"model": model, "method": method, "task": task, "dataset": dataset, "target": target,
                      "family": "vm", "n": len(test), "n_pos": sum(r["label"] for r in test), "n_boot": 0,
                      "metrics": {"auroc": value}})
        (folder / "samples" / f"{task}.{method}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in task_rows))
    (folder / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def write_paired(root: Path, models: Sequence = MODELS, tasks: Sequence = TASKS, validation: bool = True,
                 seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    truth = {t[0]: (labels(t[3], t[4], rng), labels(t[3] // 2, t[4] // 2, rng)) for t in tasks}
    info = {t[0]: (t[1], t[2]) for t in tasks}
    for name, separation, method in models:
        samples = {}
        for task, (y_test, y_val) in truth.items():
            found = rows("test", y_test, scores_for(y_test, separation, rng))
            if validation:
                found += rows("val", y_val, scores_for(y_val, separation, rng))
            samples[task] = found
        write_model(root, name, method, info, samples)
    return root

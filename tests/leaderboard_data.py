"""Synthetic results folders for the leaderboard tests: results lines with every SPEC key, samples, comparisons."""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HOSTILE = "<script>alert(1)</script>"


@dataclass(frozen=True)
class ModelSpec:
    name: str
    folder: str
    family: str
    domain: str
    untrained: bool
    methods: tuple[str, ...]
    strength: float  # separation of positive and negative scores; larger = higher AUROC
    contamination: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskSpec:
    name: str
    dataset: str
    target: str
    proxy: bool = False
    n: int = 120
    n_pos: int = 40
    demographics: bool = True
    quality: bool = True


MODELS = (
    ModelSpec("efficientnet-lite0", "efficientnet-lite0", "vm", "general", False, ("linear_probe",), 1.6),
    ModelSpec("tiny-clip", "tiny-clip", "vlm", "general", True, ("zero_shot", "linear_probe"), 0.3),
    ModelSpec("tiny-medgemma", "tiny-medgemma", "mllm", "medical", True, ("prompt",), 0.1),
    ModelSpec(HOSTILE, "hostile", "vm", "ophthalmic", False, ("linear_probe",), 1.1),
    ModelSpec("flair", "flair", "vlm", "ophthalmic", False, ("zero_shot",), 1.3, contamination=("idrid",)),
)

TASKS = (
    TaskSpec("dr_synth_desktop", "synth_desktop", "dr"),
    TaskSpec("dr_synth_mobile", "synth_mobile", "dr"),
    TaskSpec("referable_dr_synth_desktop", "synth_desktop", "referable_dr"),
    TaskSpec("glaucoma_synth_desktop", "synth_desktop", "glaucoma"),
    TaskSpec("glaucoma_synth_mobile", "synth_mobile", "glaucoma", n_pos=6),  # underpowered
    TaskSpec("dr_idrid", "idrid", "dr", demographics=False, quality=False),
    TaskSpec("referable_dr_rfmid", "rfmid", "referable_dr", proxy=True, n_pos=2, demographics=False, quality=False),
)

# (model, task, method) lines whose AUROC and AUPRC are written as null; (model, task) pairs without samples.
NULL_METRICS = {("tiny-medgemma", "dr_idrid", "prompt")}
NO_SAMPLES = {("flair", "dr_synth_mobile")}


def sample_rows(rng: np.random.Generator, task: TaskSpec, strength: float, method: str) -> list[dict]:
    labels = np.zeros(task.n, dtype=int)
    labels[: task.n_pos] = 1
    rng.shuffle(labels)
    scores = 1 / (1 + np.exp(-(strength * (2 * labels - 1) + rng.normal(0, 1, task.n))))
    rows = []
    for i, (label, score) in enumerate(zip(labels, scores)):
        row = {"image_id": f"img{i:04d}", "patient_id": f"p{i // 2:04d}", "split": "test", "label": int(label),
               "score": round(float(score), 6), "pred": int(score >= 0.5), "age": float(30 + i % 50),
               "sex": "female" if i % 2 else "male", "quality": "adequate" if i % 4 else "inadequate",
               "error": None}
        if method == "prompt":
            row.update(p_yes=row["score"], p_no=round(1 - row["score"], 6), score_norm=row["score"],
                       text="yes" if row["pred"] else "no", parsed=True)
        rows.append(row)
    rows.append({**rows[0], "image_id": "img-error", "score": None, "pred": None, "error": "unreadable image"})
    rows.append({**rows[0], "image_id": "img-train", "split": "train"})
    return rows


def metrics_of(rows: list[dict]) -> dict[str, float | None]:
    scored = [r for r in rows if r["score"] is not None and r["split"] == "test"]
    y = np.array([r["label"] for r in scored])
    p = np.array([r["score"] for r in scored])
    pred = (p >= 0.5).astype(int)
    tp, fp, fn = int(((pred == 1) & (y == 1)).sum()), int(((pred == 1) & (y == 0)).sum()), int(
        ((pred == 0) & (y == 1)).sum())
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None
    return {"auroc": _auroc(y, p), "auprc": _average_precision(y, p), "accuracy": float((pred == y).mean()),
            "f1": f1, "precision": precision, "recall": recall, "ece": _ece(y, p),
            "brier": float(((p - y) ** 2).mean())}


def _auroc(y: np.ndarray, p: np.ndarray) -> float:
    pos, neg = p[y == 1], p[y == 0]
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(wins / (len(pos) * len(neg)))


def _average_precision(y: np.ndarray, p: np.ndarray) -> float:
    order = np.argsort(-p, kind="stable")
    hits = y[order]
    precision_at = np.cumsum(hits) / np.arange(1, len(hits) + 1)
    return float((precision_at * hits).sum() / hits.sum())


def _ece(y: np.ndarray, p: np.ndarray) -> float:
    bins = np.minimum((p * 10).astype(int), 9)
    return float(sum((bins == b).mean() * abs(p[bins == b].mean() - y[bins == b].mean())
                     for b in range(10) if (bins == b).any()))


def result_line(model: ModelSpec, task: TaskSpec, method: str, metrics: dict[str, float | None],
                rng: np.random.Generator) -> dict:
    metrics = dict(metrics)
    if (model.name, task.name, method) in NULL_METRICS:
        metrics.update(auroc=None, auprc=None)
    ci = {k: ([None, None] if v is None else [round(max(0.0, v - 0.04), 4), round(min(1.0, v + 0.04), 4)])
          for k, v in metrics.items()}
    # As the runner writes it: the hard-label rule, and whether the preset lists the dataset as seen in pretraining.
    extra = {"split": "test", "threshold_rule": THRESHOLD_RULES[method],
             "contamination": task.dataset in model.contamination}
    return {
        "model": model.name, "family": model.family, "domain": model.domain, "untrained": model.untrained,
        "method": method, "task": task.name, "dataset": task.dataset, "target": task.target,
        "proxy": task.proxy, "adapter": None, "n": task.n, "n_pos": task.n_pos, "n_valid": task.n,
        "n_unparsed": 0, "n_errors": 1, "metrics": metrics, "ci": ci,
        "ci_method": "patient_bootstrap", "n_boot": 200,
        "fairness": _fairness(task, rng), "robustness": _robustness(task, rng),
        "task_version": 1, "task_hash": f"t{zlib.crc32(task.name.encode()):08x}",
        "preset_hash": f"p{zlib.crc32(model.name.encode()):08x}", "created": "2026-05-07T12:00:00Z",
        "underpowered": task.n_pos < 10, "extra": extra,
    }


def _gaps(rng: np.random.Generator, names: tuple[str, ...]) -> dict[str, float]:
    return {name: round(float(rng.uniform(0.0, 0.25)), 4) for name in names}


FAIRNESS = ("dp_gap", "accuracy_gap", "tpr_gap", "fpr_gap", "eo_gap", "auroc_gap")
QUALITY = ("accuracy_gap", "auroc_gap", "auprc_gap", "f1_gap", "ece_gap")
THRESHOLD_RULES = {"prompt": "pred = first standalone yes/no in the generated text",
                   "zero_shot": "pred = argmax over the negative and positive prompts",
                   "linear_probe": "pred = the probe's class"}


def _block(rng: np.random.Generator, names: tuple[str, ...], n_min: int, computed: bool) -> dict:
    """Gaps with their intervals beside them (``<gap>_ci``); all null when a group is missing or too small."""
    block: dict = {"n_min": n_min}
    for name, value in _gaps(rng, names).items():
        block[name] = value if computed else None
        block[f"{name}_ci"] = [round(max(0.0, value - 0.05), 4), round(value + 0.05, 4)] if computed else [None, None]
    return block


def _fairness(task: TaskSpec, rng: np.random.Generator) -> dict:
    if not task.demographics:
        return {"age": {"threshold": None, **_block(rng, FAIRNESS, 0, False)}, "sex": _block(rng, FAIRNESS, 0, False)}
    small = task.n_pos < 10  # one sex group below 10 rows: its gaps are missing, n_min says why
    return {"age": {"threshold": 54.5, **_block(rng, FAIRNESS, task.n // 2, True)},
            "sex": _block(rng, FAIRNESS, 8 if small else task.n // 2, not small)}


def _robustness(task: TaskSpec, rng: np.random.Generator) -> dict:
    return {"quality": _block(rng, QUALITY, task.n // 4 if task.quality else 0, task.quality)}


def write_results(root: Path, models=MODELS, tasks=TASKS, seed: int = 0, shared_samples: bool = False) -> Path:
    """One folder per model under ``root`` with results.jsonl and samples/, as ``--output-path`` lays them out.

    ``shared_samples`` gives every model the same sample rows per (task, method): quicker to write for timing runs.
    """
    rng = np.random.default_rng(seed)
    shared: dict[tuple, tuple[dict, str]] = {}
    for model in models:
        folder = root / model.folder
        (folder / "samples").mkdir(parents=True, exist_ok=True)
        lines = []
        for task in tasks:
            for method in model.methods:
                key = (task.name, method) if shared_samples else (model.name, task.name, method)
                if key not in shared:
                    rows = sample_rows(rng, task, model.strength, method)
                    shared[key] = (metrics_of(rows), "".join(json.dumps(r) + "\n" for r in rows))
                metrics, text = shared[key]
                lines.append(result_line(model, task, method, metrics, rng))
                if (model.name, task.name) not in NO_SAMPLES:
                    (folder / "samples" / f"{task.name}.{method}.jsonl").write_text(text, encoding="utf-8")
        _write_jsonl(folder / "results.jsonl", lines)
    return root


def write_compare(path: Path) -> Path:
    """Comparison lines of two adapters (one in-domain, one OOD test each) plus in-domain/OOD summaries."""
    lines = []
    for adapter, train, test_dataset, delta in (("medgemma-sft-brset", "brset", "brset", 0.08),
                                                 ("medgemma-sft-brset", "brset", "mbrset", -0.01),
                                                 ("qwen-sft-mbrset", "mbrset", "mbrset", 0.05),
                                                 ("qwen-sft-mbrset", "mbrset", "brset", 0.002)):
        for metric, sign in (("auroc", 1), ("ece", -1)):
            d = sign * delta
            lines.append({"kind": "delta", "adapter": adapter, "base_model": "tiny-medgemma", "model": "tiny-medgemma",
                          "train_dataset": train, "target": "glaucoma", "test_task": f"glaucoma_{test_dataset}",
                          "test_dataset": test_dataset, "in_domain": train == test_dataset, "metric": metric,
                          "base": 0.7, "ft": 0.7 + d, "delta": d, "ci": [d - 0.03, d + 0.03], "p": 0.01,
                          "q": 0.02 if abs(d) > 0.03 else 0.6, "n": 300, "n_boot": 1000})
    for metric in ("auroc", "ece"):
        for domain, mean in (("in_domain", 0.065), ("ood", -0.004)):
            lines.append({"kind": "summary", "metric": metric, "domain": domain,
                          "mean_delta": mean if metric == "auroc" else -mean,
                          "ci": [mean - 0.02, mean + 0.02] if metric == "auroc" else [-mean - 0.02, -mean + 0.02],
                          "p": 0.01, "q": 0.02, "n_comparisons": 2})
    _write_jsonl(path, lines)
    return path


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def grid(n_models: int, n_tasks: int, methods: tuple[str, ...]) -> tuple[tuple[ModelSpec, ...], tuple[TaskSpec, ...]]:
    """A larger grid for timing: every model runs every method on every task."""
    families = ("vm", "vlm", "mllm")
    models = tuple(ModelSpec(f"model-{i:02d}", f"model-{i:02d}", families[i % 3], "general", False, methods,
                             0.5 + i / n_models) for i in range(n_models))
    targets = ("dr", "referable_dr", "glaucoma")
    tasks = tuple(TaskSpec(f"{targets[j % 3]}_data{j:02d}", f"data{j // 3:02d}", targets[j % 3], n=300, n_pos=90)
                  for j in range(n_tasks))
    return models, tasks

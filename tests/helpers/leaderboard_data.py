"""Synthetic results folders for the leaderboard tests: results lines with every SPEC key, samples, comparisons."""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from html.parser import HTMLParser
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

# Made-up results for the README's screenshots: the standard models without the hostile name, and three more.
SHOWCASE = tuple(m for m in MODELS if m.name != HOSTILE) + (
    ModelSpec("ophtho-vit", "ophtho-vit", "vm", "ophthalmic", False, ("linear_probe",), 1.4),
    ModelSpec("general-clip", "general-clip", "vlm", "general", False, ("zero_shot", "linear_probe"), 0.9),
    ModelSpec("med-mllm", "med-mllm", "mllm", "medical", False, ("prompt",), 0.7),
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


# ---------------------------------------------------------------- a results set with known values
# Every number the paper's views show can be worked out by hand from these tables (see test_leaderboard_views.py).

KNOWN_TASKS = (("dr_alpha", "alpha", "dr"), ("glaucoma_alpha", "alpha", "glaucoma"), ("dr_beta", "beta", "dr"))
# model -> (family, domain, method, untrained, AUROC per task, ECE per task), in KNOWN_TASKS order
KNOWN_MODELS = {
    "gen-vit": ("vm", "general", "linear_probe", False, (0.80, 0.70, 0.90), (0.10, 0.12, 0.08)),
    "eye-vit": ("vm", "ophthalmic", "linear_probe", False, (0.85, 0.75, 0.95), (0.06, 0.07, 0.05)),
    "eye-clip": ("vlm", "ophthalmic", "zero_shot", False, (0.84, 0.70, 0.86), (0.20, 0.22, 0.18)),
    "med-clip": ("vlm", "medical", "zero_shot", False, (0.60, 0.65, 0.70), (0.25, 0.30, 0.35)),
    "rand-vit": ("vm", "general", "linear_probe", True, (0.50, 0.52, 0.48), (0.40, 0.41, 0.42)),
}
KNOWN_HALF_WIDTH = 0.05  # every AUROC interval is the value +- this
SEED1_AUROC = (0.81, 0.71, 0.91)  # gen-vit again with --seed 1, from another output folder
LIMITED_AUROC = 0.99  # eye-vit with --limit 5: better than everything, but a limited run
MANIFEST = {"version": "0.1.0", "commit": "abc1234def5678901234", "source": "example-org/gen-vit",
            "revision": "0123abcd", "licence": "CC BY 4.0", "started": "2026-05-07T11:00:00+00:00",
            "finished": "2026-05-07T13:00:00+00:00"}


def known_samples(perfect_male: bool = True) -> list[dict]:
    """40 test rows: 20 male with scores that rank perfectly (positives 0.9, negatives 0.1) and 20 female all
    scored 0.6 (AUROC 0.5, every one predicted positive); ages 40 and 70 (threshold 55), quality alternating."""
    rows = []
    for i in range(40):
        label = (i // 2) % 2
        male = i < 20
        score = (0.9 if label else 0.1) if male and perfect_male else 0.6
        rows.append({"image_id": f"k{i:02d}", "patient_id": f"kp{i:02d}", "split": "test", "label": label,
                     "score": score, "pred": int(score >= 0.5), "age": 40.0 if i % 8 < 4 else 70.0,
                     "sex": "male" if male else "female", "quality": "adequate" if i % 2 == 0 else "inadequate",
                     "error": None})
    return rows


def known_line(model: str, task: int, auroc: float | None = None, **keys) -> dict:
    family, domain, method, untrained, aurocs, eces = KNOWN_MODELS[model]
    name, dataset, target = KNOWN_TASKS[task]
    value = aurocs[task] if auroc is None else auroc
    metrics = {"auroc": value, "auprc": value - 0.1, "accuracy": 0.7, "f1": 0.6, "precision": 0.6, "recall": 0.6,
               "ece": eces[task], "brier": 0.2}
    line = {"model": model, "family": family, "domain": domain, "untrained": untrained, "method": method,
            "task": name, "dataset": dataset, "target": target, "proxy": False, "adapter": None, "n": 40,
            "n_pos": 20, "n_valid": 40, "n_unparsed": 0, "n_errors": 0, "metrics": metrics,
            "ci": {"auroc": [max(0.0, value - KNOWN_HALF_WIDTH), min(1.0, value + KNOWN_HALF_WIDTH)]},
            "ci_method": "patient_bootstrap",
            "n_boot": 200, "fairness": {"age": {"threshold": 55.0, "n_min": 20, "auroc_gap": 0.1, "eo_gap": 0.2,
                                                "accuracy_gap": 0.05},
                                        "sex": {"n_min": 20, "auroc_gap": 0.5, "eo_gap": 0.5, "accuracy_gap": 0.5}},
            "robustness": {"quality": {"n_min": 20, "auroc_gap": 0.02, "ece_gap": 0.03}},
            "task_version": 1, "task_hash": "t", "preset_hash": f"p-{model}", "created": "2026-05-07T12:00:00Z",
            "underpowered": False, "limited": False,
            "extra": {"seed": 0, "provenance": {"preset": "built-in", "hub_id": f"example-org/{model}",
                                                "revision": "0123abcd", "local": False}}}
    line.update(keys)
    return line


def write_known(root: Path) -> Path:
    """The known results set: five models on three tasks, a --seed 1 rerun, a --limit run, a run manifest,
    two sample files and a comparison file."""
    for model in KNOWN_MODELS:
        _write_jsonl(root / model / "results.jsonl", [known_line(model, t) for t in range(3)])
    _write_jsonl(root / "seed-1" / "gen-vit" / "results.jsonl",
                 [known_line("gen-vit", t, SEED1_AUROC[t], extra={"seed": 1}) for t in range(3)])
    _write_jsonl(root / "eye-vit" / "limit-5" / "results.jsonl",
                 [known_line("eye-vit", t, LIMITED_AUROC, limited=True, extra={"seed": 0, "limit": 5})
                  for t in range(3)])
    for model in ("gen-vit", "eye-vit"):
        _write_jsonl(root / model / "samples" / "dr_alpha.linear_probe.jsonl", known_samples(model == "gen-vit"))
    m = MANIFEST
    manifest = {"argv": ["focus-eval"], "started": m["started"], "finished": m["finished"],
                "versions": {"focus-eval": m["version"]}, "git_commit": m["commit"], "preset_hash": "p-gen-vit",
                "preset": {"name": "gen-vit", "family": "vm", "domain": "general", "source": m["source"],
                           "revision": m["revision"], "licence": m["licence"], "paper_name": "General ViT",
                           "description": "A general-domain vision transformer."},
                "units": {"finished": [f"{t}.linear_probe" for t, _, _ in KNOWN_TASKS], "skipped_as_done": []}}
    (root / "gen-vit" / "run-20260507T110000Z.json").write_text(json.dumps(manifest), encoding="utf-8")
    write_known_compare(root / "compare.jsonl")
    return root


# adapter, metric, delta, interval, q, paired images, paired positives -> what the page must say
KNOWN_DELTAS = (
    ("a-zero", "ece", 0.0, [0.0, 0.0], 0.0, 2, 1, "not significant (underpowered)"),
    ("a-flat", "auroc", 0.0, [-0.01, 0.01], 1.0, 300, 60, "not significant"),
    ("a-tiny", "ece", 1.7e-6, [1.7e-6, 1.7e-6], 0.004, 2, 1, "not significant (underpowered)"),
    ("a-good", "auroc", 0.05, [0.02, 0.08], 0.01, 300, 60, "\u25b2 better, significant"),
    ("a-good", "ece", -0.03, [-0.05, -0.01], 0.02, 300, 60, "\u25b2 better, significant"),
    ("a-wide", "auroc", 0.04, [-0.01, 0.09], 0.03, 300, 60, "not significant"),
)


def write_known_compare(path: Path) -> Path:
    lines = [{"kind": "delta", "adapter": adapter, "base_model": "gen-vit", "model": "gen-vit",
              "train_dataset": "alpha", "target": "dr", "test_task": "dr_alpha", "test_dataset": "alpha",
              "in_domain": True, "metric": metric, "base": 0.5, "ft": 0.5 + delta, "delta": delta, "ci": ci,
              "p": q / 2, "q": q, "n": n, "n_pos": n_pos, "n_boot": 1000}
             for adapter, metric, delta, ci, q, n, n_pos, _ in KNOWN_DELTAS]
    lines += [{"kind": "summary", "metric": "auroc", "domain": "in_domain", "mean_delta": 0.025, "ci": [0.01, 0.04],
               "p": 0.005, "q": 0.01, "n_comparisons": 4},
              {"kind": "summary", "metric": "auroc", "domain": "ood", "mean_delta": 0.0, "ci": [0.0, 0.0],
               "p": 0.0, "q": 0.0, "n_comparisons": 2}]
    _write_jsonl(path, lines)
    return path


# ---------------------------------------------------------------- reading built pages, writing lines


class _Tables(HTMLParser):
    """Rows of every table body: {table id: [(row attributes, [(cell data-value, cell text), ...]), ...]}; a row's
    heading cell (``<th scope="row">``) counts as a cell."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list] = {}
        self._table = None
        self._row = None
        self._cell = None
        self._in_body = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._table = self.tables.setdefault(attrs.get("id", f"table{len(self.tables)}"), [])
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body and self._table is not None:
            self._row = (attrs, [])
            self._table.append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = [attrs.get("data-value"), ""]

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row[1].append((self._cell[0], " ".join(self._cell[1].split())))
            self._cell = None
        elif tag == "tr":
            self._row = None
        elif tag == "tbody":
            self._in_body = False
        elif tag == "table":
            self._table = None

    def handle_data(self, text):
        if self._cell is not None:
            self._cell[1] += " " + text


def tables(path: Path) -> dict[str, list]:
    parser = _Tables()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser.tables


def write_lines(path: Path, lines: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
                    encoding="utf-8")
    return path


def line(model="m", task="dr_a", dataset="a", target="dr", family="vm", method="linear_probe", **keys) -> dict:
    """A results line with every SPEC key; ``keys`` override any of them."""
    row = {"model": model, "family": family, "domain": "general", "untrained": False, "method": method,
           "task": task, "dataset": dataset, "target": target, "proxy": False, "adapter": None, "n": 100,
           "n_pos": 40, "n_valid": 100, "n_unparsed": 0, "n_errors": 0,
           "metrics": {"auroc": 0.8, "auprc": 0.7, "accuracy": 0.75, "f1": 0.6, "precision": 0.6, "recall": 0.6,
                       "ece": 0.1, "brier": 0.2},
           "ci": {}, "ci_method": "patient_bootstrap", "n_boot": 100, "fairness": {}, "robustness": {},
           "task_version": 1, "task_hash": "t", "preset_hash": "p", "created": "2026-01-01T00:00:00Z"}
    metrics = keys.pop("metrics", {})
    row.update(keys)
    row["metrics"] = {**row["metrics"], **metrics}
    return row


# Models for the FOCUS views (general vs medical at one scale, a trained dual encoder with both methods): written
# beside MODELS by the tests of those views only.
FOCUS_MODELS = (
    ModelSpec("gemma3-27b", "gemma3-27b", "mllm", "general", False, ("prompt",), 0.8),
    ModelSpec("medgemma-27b", "medgemma-27b", "mllm", "medical", False, ("prompt",), 1.2),
    ModelSpec("medgemma-4b", "medgemma-4b", "mllm", "medical", False, ("prompt",), 1.0),  # no gemma3-4b: no 4B row
    ModelSpec("clip-vit-b32", "clip-vit-b32", "vlm", "general", False, ("zero_shot", "linear_probe"), 0.9),
)

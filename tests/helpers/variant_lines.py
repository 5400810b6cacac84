"""A results folder holding every kind of results line that runs write beside the plain ones: a label budget
(training fraction and draw), another label rule, a prompt paraphrase, a corruption with its severity, another seed
and a zero-shot scale (run conventions), a ``--limit`` run, another version of a task, and a configuration that
answered nothing; and, beside the folder, a submission bundle from another group with two of the plain
configurations (``submitter``). Each line has its sample file (test and validation rows), so that every analysis
can read it.

``write_variants(root, kinds)`` writes the lines of the chosen kinds only; ``KINDS`` names them all. The plain
lines (``plain``) are four configurations on two tasks: m1 and m2 linear probes, m3 a prompt method, m4 a zero-shot
dual encoder. ``variant_paths(root)`` is what to read: the folder, and the bundle where one was written."""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from focus_eval.results.bundle import write_bundle
from helpers.leaderboard_data import line, metrics_of

TASKS = {"dr_a": ("a", "dr"), "glaucoma_a": ("a", "glaucoma")}
PLAIN = "plain"
SUBMITTED = "submitter"
SUBMITTER = "Clinic B"
KINDS = (PLAIN, "conventions", "corruption", "label_budget", "label_rule", "prompt_variant", "limit", "other_version",
         "no_answers", SUBMITTED)


@dataclass(frozen=True)
class Spec:
    """One results line to write: who, on what, with which extra fields, its kind, and how well it separates."""

    kind: str
    model: str
    method: str
    task: str
    strength: float
    folder: str = ""
    extra: dict = field(default_factory=dict)
    keys: dict = field(default_factory=dict)
    answers: bool = True


MODELS = {"m1": ("vm", "general", "linear_probe", 1.6), "m2": ("vm", "ophthalmic", "linear_probe", 1.1),
          "m3": ("mllm", "medical", "prompt", 0.7), "m4": ("vlm", "general", "zero_shot", 0.9)}
PROBE_PATIENTS = 40


def _probe_extra(method: str, patients: int = PROBE_PATIENTS) -> dict:
    return {"n_train_patients": patients} if method == "linear_probe" else {}


def specs() -> list[Spec]:
    out = []
    for model, (_family, _domain, method, strength) in MODELS.items():
        for task in TASKS:
            out.append(Spec(PLAIN, model, method, task, strength, extra=_probe_extra(method)))
    out += [Spec("conventions", "m1", "linear_probe", t, 1.3, folder="m1-seed1",
                 extra={"seed": 1, **_probe_extra("linear_probe")}) for t in TASKS]
    out += [Spec("conventions", "m4", "zero_shot", t, 0.5, folder="m4-zs100",
                 extra={"zs_scale": 100.0, "zs_convention": "compat"}) for t in TASKS]
    for model, strength in (("m1", 0.9), ("m2", 0.4), ("m3", 0.2)):
        out.append(Spec("corruption", model, MODELS[model][2], "dr_a@blur3", strength,
                        extra={"base_task": "dr_a", "corruption": "blur:3", **_probe_extra(MODELS[model][2])}))
    for model in ("m1", "m2"):
        for seed, strength in ((1, 2.4), (2, 2.2)):
            out.append(Spec("label_budget", model, "linear_probe", f"dr_a@train0.5-s{seed}", strength,
                            extra={"base_task": "dr_a", "train_fraction": 0.5, "train_seed": seed,
                                   **_probe_extra("linear_probe", PROBE_PATIENTS // 2)}))
        out.append(Spec("label_rule", model, "linear_probe", "dr_a@severe", 2.6,
                        extra={"base_task": "dr_a", "label_rule": "severe", **_probe_extra("linear_probe")},
                        keys={"task_hash": "t-severe"}))
    out += [Spec("prompt_variant", "m3", "prompt", f"{t}@plain", 1.0, extra={"base_task": t, "prompt_variant": "plain"},
                 keys={"task_hash": f"t-{t}-plain"}) for t in TASKS]
    out.append(Spec("limit", "m1", "linear_probe", "dr_a", 3.0, folder="m1/limit-5",
                    extra={"limit": 5, **_probe_extra("linear_probe")}, keys={"limited": True}))
    out.append(Spec("other_version", "m6", "linear_probe", "dr_a", 3.0, extra=_probe_extra("linear_probe"),
                    keys={"task_version": 0, "task_hash": "t-old", "created": "2025-01-01T00:00:00Z"}))
    out += [Spec("no_answers", "m5", "prompt", t, 0.0, answers=False) for t in TASKS]
    out += [Spec(SUBMITTED, m, "linear_probe", t, strength, folder=m, extra=_probe_extra("linear_probe"))
            for m, strength in (("m1", 1.5), ("m2", 0.2)) for t in TASKS]
    return out


def sample_rows(spec: Spec, n_test: int = 40, n_val: int = 24) -> list[dict]:
    """Test rows then validation rows; scores separate the classes by ``strength`` (none without answers)."""
    rng = np.random.default_rng(zlib.crc32(f"{spec.model}/{spec.task}/{spec.kind}/{spec.folder}".encode()))
    rows = []
    for split, n in (("test", n_test), ("val", n_val)):
        labels = np.arange(n) % 2
        scores = 1 / (1 + np.exp(-(spec.strength * (2 * labels - 1) + rng.normal(0, 1, n))))
        for i, (label, score) in enumerate(zip(labels, scores)):
            row = {"image_id": f"{split}{i:03d}", "patient_id": f"p{split}{i // 2:03d}", "split": split,
                   "label": int(label), "score": round(float(score), 6), "pred": int(score >= 0.5), "error": None}
            if spec.method == "prompt":
                row.update(p_yes=row["score"], p_no=round(1 - row["score"], 6), score_norm=row["score"],
                           text="yes" if row["pred"] else "no", parsed=True)
            if not spec.answers:
                row.update(score=None, pred=None, error="no answer", p_yes=None, p_no=None, score_norm=None,
                           text="", parsed=False)
            rows.append(row)
    return rows


def results_line(spec: Spec, rows: list[dict]) -> dict:
    family, domain, *_ = MODELS.get(spec.model, ("vm", "general", spec.method, 1.0))
    dataset, target = TASKS[spec.extra.get("base_task", spec.task)]
    test = [r for r in rows if r["split"] == "test"]
    keys = dict(spec.keys)
    if spec.answers:
        metrics = metrics_of(rows)
        counts = {"n_valid": len(test), "n_errors": 0}
    else:  # what scoring writes for a unit without a single answer: unread answers count as misses
        metrics = {"auroc": None, "auprc": None, "accuracy": 0.0, "f1": 0.0, "precision": None, "recall": 0.0,
                   "ece": None, "brier": None}
        counts = {"n_valid": 0, "n_errors": len(test)}
    if spec.method == "prompt":
        answered = len(test) if spec.answers else 0
        counts.update(n_answered=answered, coverage=answered / len(test), n_unparsed=len(test) - answered)
    ci = {k: ([0.0, 0.0] if v == 0.0 and not spec.answers else
              [max(0.0, v - 0.05), min(1.0, v + 0.05)] if v is not None else [None, None]) for k, v in metrics.items()}
    return line(model=spec.model, task=spec.task, dataset=dataset, target=target, family=family, method=spec.method,
                domain=domain, n=len(test), n_pos=sum(r["label"] for r in test), metrics=metrics, ci=ci,
                task_hash=keys.pop("task_hash", f"t-{spec.extra.get('base_task', spec.task)}"),
                extra={"seed": 0, **spec.extra}, **counts, **keys)


def write_variants(root: Path, kinds=KINDS) -> Path:
    """The lines of ``kinds`` under ``root`` (one folder per model, as an ``--output-path`` holds them); those of
    another submitter as a bundle at ``bundle_path(root)``."""
    files: dict[Path, list[dict]] = {}
    staging = root.with_name(f"{root.name}-staging")
    for spec in specs():
        if spec.kind not in kinds:
            continue
        folder = (staging if spec.kind == SUBMITTED else root) / (spec.folder or spec.model)
        rows = sample_rows(spec)
        (folder / "samples").mkdir(parents=True, exist_ok=True)
        (folder / "samples" / f"{spec.task}.{spec.method}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        files.setdefault(folder / "results.jsonl", []).append(results_line(spec, rows))
        if spec.kind == SUBMITTED:  # what a bundle must hold beside the samples (never verified here)
            (folder / "samples" / f"{spec.task}.{spec.method}.meta.json").write_text("{}\n", encoding="utf-8")
            (folder / "run-20260101T000000Z.json").write_text("{}\n", encoding="utf-8")
    for path, lines in files.items():
        path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    if staging.is_dir():
        write_bundle(sorted(staging.glob("*/results.jsonl")), bundle_path(root), SUBMITTER)
    return root


def bundle_path(root: Path) -> Path:
    return root.with_name(f"{root.name}-clinic-b")


def variant_paths(root: Path) -> list[Path]:
    """The folder ``write_variants`` wrote, and its bundle where it wrote one."""
    return [root, *([bundle_path(root)] if bundle_path(root).is_dir() else [])]


def written(kinds=KINDS) -> list[Spec]:
    return [s for s in specs() if s.kind in kinds]

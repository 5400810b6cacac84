"""Run a model on tasks: expand tasks, load each dataset once, embed or prompt once per image, score every
(task, method), write sample lines, results lines and the run manifest. Resumable and data-parallel."""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from focus_eval.errors import FocusError
from focus_eval.results.schema import SampleLine, write_jsonl
from focus_eval.runner.units import Unit, is_finished, meta_path, samples_path


@dataclass
class RunOptions:
    """Everything ``focus-eval --model M --tasks T`` was asked to do."""

    model: str
    tasks: str
    model_args: dict[str, Any] = field(default_factory=dict)
    include_path: list[str] = field(default_factory=list)
    include_proxy: bool = False
    data_root: Path | None = None
    output_path: Path = Path("results")
    batch_size: int | str = "auto"
    device: str | None = None
    seed: int = 0
    limit: int | None = None
    resume: bool = True
    num_workers: int | None = None
    probe_compat: bool = False
    zs_scale: float | None = None
    adapter: str | None = None
    trust_remote_code: bool = False
    cache_dir: Path | None = None
    split_files: dict[str, str] = field(default_factory=dict)
    methods: list[str] | None = None
    n_boot: int = 1000
    use_prepared: bool = True
    progress: bool = True
    argv: list[str] = field(default_factory=list)


@dataclass
class RunReport:
    model_dir: Path
    finished: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    results: list[dict] = field(default_factory=list)


def make_state(device: str | None):
    """The accelerate process state; on a CPU every process must be told so, or each would do all the work."""
    import torch
    from accelerate import PartialState

    cpu = device == "cpu" or (device is None and not torch.cuda.is_available())
    return PartialState(cpu=cpu)


def model_dir_name(preset, adapter_id: str | None) -> str:
    return preset.name if not adapter_id else f"{preset.name}@{adapter_id}"


def progress_factory(enabled: bool, state):
    if not enabled or not state.is_local_main_process:
        return None
    from tqdm.auto import tqdm

    return lambda **kw: tqdm(file=sys.stderr, leave=False, **kw)


def file_sha256(path: str) -> str:
    import hashlib

    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise FocusError(f"cannot read split file {path}: {exc}") from exc


def split_summary(load) -> dict:
    """How the dataset was split, recorded with every result (a patient overlap from an external split file
    included)."""
    keys = ("split_source", "seed", "cohort", "split_file", "patient_overlap", "split_file_unlisted",
            "split_file_missing", "carved_val_images")
    out = {}
    for k in keys:
        value = load.metadata.get(k)
        if value in (None, [], {}):
            continue
        # long id lists are summarised: their count and the first few
        out[k] = {"count": len(value), "first": list(value)[:5]} if isinstance(value, (list, tuple)) else value
    return out


def age_threshold(test_records) -> float | None:
    """Median age of the task's test split: one threshold per task, the same for every model."""
    from focus_eval.metrics.fairness import age_threshold as median_age

    return median_age([r.age for r in test_records])


def task_records(load, task, split: str, limit: int | None = None):
    """The task's records of one split (its ``splits`` mapping decides which dataset split that is), in a
    stable order (image id)."""
    rows = sorted(task.records(load, split), key=lambda r: r.image_id)
    return rows[:limit] if limit else rows


def sample_line(record, label: int, score, pred, error: str | None = None, **prompt_fields) -> SampleLine:
    return SampleLine(image_id=record.image_id, patient_id=record.patient_id, split=record.split, label=label,
                      score=None if score is None else float(score), pred=None if pred is None else int(pred),
                      age=record.age, sex=record.sex, quality=record.quality, error=error, **prompt_fields)


class Runner:
    """One model, many tasks: the single place that owns devices, batching, caching and processes."""

    def __init__(self, options: RunOptions):
        from focus_eval.presets import load_preset
        from focus_eval.task import TaskIndex

        if options.data_root is not None:
            options.data_root = Path(options.data_root).resolve()
        self.options = options
        self.state = make_state(options.device)
        model_args = dict(options.model_args)
        self.preset = load_preset(options.model, model_args)
        index = TaskIndex(include_paths=[Path(p) for p in options.include_path])
        names = index.expand(options.tasks, include_proxy=options.include_proxy)
        self.tasks = [index.get(n) for n in names]
        methods = options.methods or list(self.preset.methods)
        unknown = [m for m in methods if m not in self.preset.methods]
        if unknown:
            raise FocusError(f"model {self.preset.name!r} ({self.preset.family}) has no method {unknown}; "
                             f"its methods are {self.preset.methods}")
        self.units = [Unit(t, m) for t in self.tasks for m in methods]
        self.adapter = None
        self.adapter_id = None
        if options.adapter:
            self.adapter_id = Path(options.adapter).name
        self.model_dir = Path(options.output_path) / model_dir_name(self.preset, self.adapter_id)
        self.progress = progress_factory(options.progress, self.state)
        from focus_eval.runner.batching import MemoryAdaptiveBatches

        self.batches = MemoryAdaptiveBatches(enabled=str(options.batch_size) == "auto")
        self.report = RunReport(self.model_dir)
        self.started = datetime.now(timezone.utc)
        self.timings: dict[str, float] = {}

    # ----------------------------------------------------------------------------------------------
    def fingerprint(self, unit: Unit) -> dict:
        """What a finished unit must match to be skipped on resume."""
        o = self.options
        split_file = o.split_files.get(unit.task.dataset)
        return {"task_hash": unit.task.hash, "preset_hash": self.preset.hash, "method": unit.method,
                "limit": o.limit, "seed": o.seed, "probe_compat": o.probe_compat, "zs_scale": o.zs_scale,
                "adapter": self.adapter_id, "n_boot": o.n_boot,
                "split_file_sha256": file_sha256(split_file) if split_file else None, **self.adapter_training()}

    def meta(self, unit: Unit, threshold: float | None, extra: dict) -> dict:
        t, p = unit.task, self.preset
        return {"model": p.name, "family": p.family, "domain": p.domain, "untrained": bool(p.untrained),
                "method": unit.method, "task": t.name, "dataset": t.dataset, "target": t.target,
                "proxy": bool(t.proxy), "task_version": t.metadata.get("version"), "age_threshold": threshold,
                "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "contamination": t.dataset in (p.contamination or []), "extra": extra,
                **self.fingerprint(unit)}

    def adapter_training(self) -> dict:
        """adapter_train_dataset, adapter_train_target and adapter_trained_at from the adapter folder's training
        record (part of the fingerprint: an adapter trained again in the same folder is evaluated again)."""
        if not self.options.adapter:
            return {}
        from focus_eval.finetune.artifacts import adapter_training_fields

        return adapter_training_fields(self.options.adapter)

    def load_adapter(self):
        if self.adapter is None:
            from focus_eval.adapters import load_adapter

            kwargs: dict[str, Any] = {"trust_remote_code": self.options.trust_remote_code}
            if self.options.adapter:
                kwargs["adapter_dir"] = self.options.adapter
            if not self.options.progress:
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()  # its weight-loading bars too
            t0 = time.perf_counter()
            self.adapter = load_adapter(self.preset, device=str(self.state.device), **kwargs)
            self.timings["model_load_s"] = time.perf_counter() - t0
        return self.adapter

    def load_dataset(self, name: str, cohort: str | None):
        from focus_eval.data.registry import load_dataset

        if self.options.data_root is None:
            raise FocusError("no --data-root given (or FOCUS_DATA set); it holds one folder per dataset")
        return load_dataset(name, self.options.data_root, cohort=cohort,
                            split_file=self.options.split_files.get(name))

    # ----------------------------------------------------------------------------------------------
    def run(self) -> RunReport:
        pending = []
        for unit in self.units:
            if self.options.resume and is_finished(self.model_dir, unit, self.fingerprint(unit)):
                self.report.skipped.append(unit.stem)
            else:
                pending.append(unit)
        groups: dict[tuple, list[Unit]] = defaultdict(list)
        for unit in pending:
            groups[(unit.task.dataset, unit.task.cohort)].append(unit)
        for (dataset, cohort), units in groups.items():
            t0 = time.perf_counter()
            try:
                load = self.load_dataset(dataset, cohort)
            except FocusError as exc:
                for u in units:
                    self.report.failed[u.stem] = str(exc)
                continue
            if self.state.is_main_process:
                for warning in load.warnings:
                    print(f"focus-eval: {dataset}: {warning}", file=sys.stderr)
                if load.skipped:
                    print(f"focus-eval: {dataset}: {len(load.skipped)} label row(s) skipped "
                          f"('focus-eval datasets check {dataset}' lists them)", file=sys.stderr)
            encoder_units = [u for u in units if u.method in ("linear_probe", "zero_shot")]
            prompt_units = [u for u in units if u.method == "prompt"]
            if encoder_units:
                self.run_encoder_units(load, encoder_units)
            if prompt_units:
                from focus_eval.runner.methods.prompt import run_prompt_units

                run_prompt_units(self, load, prompt_units)
            self.timings[f"{dataset}:{cohort or 'default'}_s"] = time.perf_counter() - t0
        self.state.wait_for_everyone()
        if self.state.is_main_process:
            self.write_manifest()
            self.report.results = self.collect_results()
        return self.report

    # ----------------------------------------------------------------------------------------------
    def run_encoder_units(self, load, units: list[Unit]) -> None:
        adapter = self.load_adapter()
        needed: dict[str, Any] = {}
        for u in units:
            splits = ("train", "val", "test") if u.method == "linear_probe" else ("test",)
            for split in splits:
                limit = self.options.limit if split == "test" else None
                for r in task_records(load, u.task, split, limit):
                    needed[r.image_id] = r
        records = sorted(needed.values(), key=lambda r: r.image_id)
        if not records:
            for u in units:
                self.report.failed[u.stem] = f"dataset {load.name!r} has no labelled images for {u.task.target}"
            return
        from focus_eval.resources import cache_dir
        from focus_eval.runner.embed import embed_records
        from focus_eval.runner.embed_cache import EmbeddingCache

        root = Path(self.options.cache_dir) if self.options.cache_dir else cache_dir("embeddings")
        cache = EmbeddingCache(root, adapter.cache_key, load.name)
        prepared = Path(self.options.data_root) if self.options.use_prepared and self.options.data_root else None
        vectors, errors = embed_records(
            adapter, records, cache, state=self.state, batch_size=self.batch_size(),
            num_workers=self.num_workers(), prepared_root=prepared, progress=self.progress,
            dtype=self.compute_dtype(), batches=self.batches)
        if not self.state.is_main_process:
            return
        text_cache: dict[tuple, np.ndarray] = {}
        for unit in units:
            try:
                samples, extra = self.score_encoder_unit(load, unit, vectors, errors, text_cache)
            except FocusError as exc:
                self.report.failed[unit.stem] = str(exc)
                continue
            threshold = age_threshold(task_records(load, unit.task, "test"))
            extra["split_policy"] = split_summary(load)
            self.finish_unit(unit, samples, self.meta(unit, threshold, extra))

    def score_encoder_unit(self, load, unit: Unit, vectors, errors, text_cache):
        task = unit.task
        test = task_records(load, task, "test", self.options.limit)
        ok = [r for r in test if r.image_id in vectors]
        extra: dict[str, Any] = {}
        scores: dict[str, tuple[float, int]] = {}
        if ok:
            x_test = np.stack([vectors[r.image_id] for r in ok])
            if unit.method == "linear_probe":
                from focus_eval.runner.methods.linear_probe import fit_predict

                def xy(split):
                    rows = [r for r in task_records(load, task, split) if r.image_id in vectors]
                    if not rows:
                        return None, None
                    return np.stack([vectors[r.image_id] for r in rows]), np.array([r.label(task.target) for r in rows])

                tx, ty = xy("train")
                if tx is None:
                    raise FocusError(f"task {task.name}: no train images could be embedded")
                vx, vy = xy("val")
                result = fit_predict(tx, ty, vx, vy, x_test, compat=self.options.probe_compat, seed=self.options.seed)
                extra.update(result.info, n_train=int(len(ty)), n_val=0 if vy is None else int(len(vy)))
                probs, preds = result.scores, result.preds
            else:
                probs = self.zero_shot(task, x_test, text_cache, extra)
                preds = (probs >= 0.5).astype(int)
            scores = {r.image_id: (p, y) for r, p, y in zip(ok, probs, preds)}
        samples = []
        for r in test:
            label = r.label(task.target)
            if r.image_id in scores:
                s, p = scores[r.image_id]
                samples.append(sample_line(r, label, s, p))
            else:
                samples.append(sample_line(r, label, None, None, error=errors.get(r.image_id, "not embedded")))
        return samples, extra

    def zero_shot(self, task, x_test, text_cache, extra) -> np.ndarray:
        from focus_eval.runner.methods.zero_shot import zero_shot_scores

        adapter = self.adapter
        prompts = task.zero_shot or {}
        if not prompts.get("negative") or not prompts.get("positive"):
            raise FocusError(f"task {task.name} defines no zero_shot prompts")
        embedded = []
        for side in ("negative", "positive"):
            key = tuple(prompts[side])
            if key not in text_cache:
                import torch

                with torch.inference_mode():
                    text_cache[key] = adapter.embed_texts(list(key)).float().cpu().numpy()
            embedded.append(text_cache[key])
        if self.options.zs_scale is not None:
            scale, bias = float(self.options.zs_scale), None
        else:
            scale, bias = float(adapter.logit_scale), adapter.logit_bias
        extra.update(zs_scale=scale, zs_bias=bias, zs_convention="compat" if self.options.zs_scale else "model")
        return zero_shot_scores(x_test, embedded[0], embedded[1], scale=scale, bias=bias)

    # ----------------------------------------------------------------------------------------------
    def finish_unit(self, unit: Unit, samples: list[SampleLine], meta: dict) -> None:
        """Write the unit's samples and meta atomically, then its results line."""
        from focus_eval.results.store import upsert_result, write_meta

        prompt = unit.method == "prompt"
        samples = sorted(samples, key=lambda s: s.image_id)
        write_jsonl(samples_path(self.model_dir, unit), [s.to_dict(prompt) for s in samples])
        write_meta(meta_path(self.model_dir, unit), meta)
        upsert_result(self.model_dir, samples, meta)
        self.report.finished.append(unit.stem)
        if samples and all(s.error for s in samples):
            # the results line records it; the run still ends non-zero so that nobody mistakes it for a result
            self.report.failed[unit.stem] = f"every test image failed (first: {samples[0].error})"

    def batch_size(self) -> int:
        bs = self.options.batch_size
        if isinstance(bs, int) or (isinstance(bs, str) and bs.isdigit()):
            if int(bs) < 1:
                raise FocusError(f"--batch-size must be a positive number or 'auto', got {bs!r}")
            return int(bs)
        if bs != "auto":
            raise FocusError(f"--batch-size must be a positive number or 'auto', got {bs!r}")
        hint = (self.preset.settings or {}).get("batch_size", {})
        kind = self.state.device.type
        default = {"cuda": 256, "cpu": 32}.get(kind, 32) if self.preset.family != "mllm" else {"cuda": 32}.get(kind, 4)
        return int(hint.get(kind, default)) if isinstance(hint, dict) else int(hint or default)

    def num_workers(self) -> int:
        if self.options.num_workers is not None:
            return self.options.num_workers
        import os

        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return max(0, min(16, cores // max(1, self.state.num_processes) - 1))

    def compute_dtype(self):
        import torch

        if self.state.device.type != "cuda":
            return None
        return {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(self.preset.dtype)

    # ----------------------------------------------------------------------------------------------
    def write_manifest(self) -> Path:
        from focus_eval.runner.manifest import build_manifest

        manifest = build_manifest(self)
        stamp = self.started.strftime("%Y%m%dT%H%M%SZ")
        path = self.model_dir / f"run-{stamp}.json"
        self.model_dir.mkdir(parents=True, exist_ok=True)
        from focus_eval.results.schema import dumps

        path.write_text(dumps(manifest) + "\n", encoding="utf-8")
        return path

    def collect_results(self) -> list[dict]:
        from focus_eval.results.schema import read_jsonl

        path = self.model_dir / "results.jsonl"
        names = {u.task.name for u in self.units}
        return [r for r in read_jsonl(path) if r.get("task") in names] if path.is_file() else []


def evaluate(options: RunOptions) -> RunReport:
    return Runner(options).run()

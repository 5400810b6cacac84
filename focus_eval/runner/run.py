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

from focus_eval.errors import FocusError
from focus_eval.options import DECLARED, RunOptions  # noqa: F401  (RunOptions: imported from here too)
from focus_eval.redact import redact
from focus_eval.results.layout import OutputLayout
from focus_eval.results.schema import SampleLine, UnitMeta
from focus_eval.runner.methods.base import EMBEDDING, Embeddings, RunContext
from focus_eval.runner.records import age_threshold, split_summary, task_records
from focus_eval.runner.units import Unit


@dataclass
class RunReport:
    model_dir: Path
    finished: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    # (task, method) pairs the task file says the method skips: "task.method" -> the task's reason
    skipped_by_task: dict[str, str] = field(default_factory=dict)
    results: list[dict] = field(default_factory=list)
    groups: list[dict] = field(default_factory=list)
    # --log-to targets that failed during the run -> when and why (named in the summary)
    trackers_failed: dict[str, str] = field(default_factory=dict)


def make_state(device: str | None):
    """The accelerate process state; on a CPU every process must be told so, or each would do all the work."""
    import torch
    from accelerate import PartialState

    cpu = device == "cpu" or (device is None and not torch.cuda.is_available())
    return PartialState(cpu=cpu)


def progress_factory(enabled: bool, state):
    """The stages' bars (``focus_eval.progress``): on the first process of each machine only."""
    from focus_eval.progress import factory

    return factory(enabled and state.is_local_main_process)


def split_file_digest(path: str) -> str:
    from focus_eval.digests import file_sha256

    try:
        return file_sha256(path)
    except OSError as exc:
        raise FocusError(f"cannot read split file {path}: {exc}") from exc


def with_variants(tasks: list, options: RunOptions) -> list:
    """The tasks with the fragility copies the options ask for: prompt variants, label rules, corruptions and
    label budgets (each copy a task ``<task>@<...>`` of its own; task/variants.py)."""
    if options.prompt_variants:
        from focus_eval.task.variants import expand

        tasks = expand(tasks, options.prompt_variants)
    if options.label_rules:
        from focus_eval.task.variants import expand_label_rules

        tasks = expand_label_rules(tasks, options.label_rules)
    if options.corruptions:
        from focus_eval.data.corruptions import parse
        from focus_eval.task.variants import expand_corruptions

        tasks = expand_corruptions(tasks, parse(options.corruptions))
    if options.train_fraction:
        from focus_eval.runner.label_budget import parse_fractions
        from focus_eval.task.variants import expand_budgets

        seeds = [options.seed + k for k in range(max(1, options.train_seeds))]
        tasks = expand_budgets(tasks, parse_fractions(options.train_fraction), seeds)
    return tasks


def not_applying(task, method) -> str | None:
    """Why ``method`` does not score ``task`` when ``task`` is a copy made by a run option that does not apply
    to the method (``Option.applies``: a prompt variant for a method that asks no prompt, a corruption for one
    that reads no image, a label budget for one that fits no probe), whose numbers would be the task's own and
    read as "perfectly robust"; None when every option behind the copy applies."""
    for d in DECLARED.values():
        s = d.spec
        if s.variant and s.variant in task.variant and s.applies and not s.applies(type(method)):
            return (f"{s.flags[0]} does not apply to {method.name}, only to {s.applies_to}: its copies of a task "
                    "would score as the task itself")
    return None


def option_notes(options: RunOptions, methods) -> list[str]:
    """A note for each option given that applies to none of the run's methods (``Option.applies``; options
    that make task copies are noted per copy instead, by ``not_applying``): it is ignored."""
    notes = []
    for name, d in DECLARED.items():
        s = d.spec
        if s.applies is None or s.variant or getattr(options, name) == d.default():
            continue
        if not any(s.applies(type(m)) for m in methods):
            notes.append(f"{s.flags[0]} is ignored: it applies only to {s.applies_to}, and this run's methods are "
                         f"{', '.join(m.name for m in methods)}")
    return notes


def grouped_reasons(reasons: dict[str, str]) -> list[str]:
    """``stem: reason`` lines, one per reason (``N units (stem, ...)`` where it holds for several)."""
    by_reason: dict[str, list[str]] = {}
    for stem, reason in reasons.items():
        by_reason.setdefault(reason, []).append(stem)
    return [f"{stems[0]}: {reason}" if len(stems) == 1 else f"{len(stems)} units ({stems[0]}, ...): {reason}"
            for reason, stems in by_reason.items()]


def available(preset, name: str) -> bool:
    """Whether ``--methods`` may name ``name`` for ``preset``: a method it lists, one that extends a listed one
    (multiple_choice for prompt), or one every preset of its families runs on request."""
    from focus_eval.runner.methods import METHODS

    if name in preset.methods:
        return True
    if name not in METHODS:
        return False
    cls = METHODS.get(name)
    return preset.family in cls.families and (cls.on_request or cls.extends in preset.methods)


def select_methods(preset, names: list[str]) -> dict:
    """The method objects ``names`` asks of ``preset``; a name it cannot run is an error saying what it can."""
    from focus_eval.runner.methods import METHODS

    unknown = [m for m in names if not available(preset, m)]
    if unknown:
        extra = [n for n, _ in METHODS.loaded() if n not in preset.methods and available(preset, n)]
        hint = f", and on request {extra}" if extra else ""
        raise FocusError(f"model {preset.name!r} ({preset.family}) has no method {unknown}; "
                         f"its methods are {preset.methods}{hint}")
    methods = {m: METHODS.get(METHODS.check(m))() for m in names}
    wrong = [m for m, method in methods.items() if preset.family not in method.families]
    if wrong:
        raise FocusError(f"model {preset.name!r} is a {preset.family} model; method(s) {wrong} serve "
                         f"{', '.join(sorted({f for m in wrong for f in methods[m].families}))} models")
    return methods


def plan_units(tasks, preset, methods: dict, names: list[str]) -> tuple[list[Unit], dict[str, str], dict[str, str]]:
    """A unit per (task, method) where the method scores the task's output type; where it does not, the
    registered method that ``extends`` it and does (multiple_choice for prompt) takes the task (added to
    ``methods``). Returns the units, per task no method of the preset can score the reason, and per (task,
    method) the task file says the method skips (``skip_methods``) the task's reason."""
    from focus_eval.runner.methods import METHODS

    units, unserved, skipped = [], {}, {}
    for task in tasks:
        for name in names:
            chosen = name if task.output_type in methods[name].output_types else None
            for other, cls in () if chosen else METHODS.loaded():  # a broken method plugin is left out
                if getattr(cls, "extends", None) == name and task.output_type in cls.output_types \
                        and preset.family in cls.families:
                    chosen = other
                    methods.setdefault(other, cls())
                    break
            ignored = not_applying(task, methods[chosen]) if chosen else None
            if ignored:  # a copy made by an option that does not change this method's numbers
                skipped[f"{task.name}.{chosen}"] = ignored
            elif chosen in task.skip_methods:
                skipped[f"{task.name}.{chosen}"] = task.skip_methods[chosen]
            elif chosen:
                units.append(Unit(task, chosen))
            else:
                unserved[f"{task.name}.{name}"] = f"method {name} does not score {task.output_type} tasks"
    return units, unserved, skipped


class Runner:
    """One model, many tasks: owns the units, resume, the grouping by dataset, devices, processes, the embedding
    stage and the manifest; the methods (``focus_eval.runner.methods``) score."""

    def __init__(self, options: RunOptions):
        from focus_eval.presets import load_preset
        from focus_eval.runner.batching import MemoryAdaptiveBatches
        from focus_eval.runner.methods import METHODS
        from focus_eval.task import TaskIndex

        if options.data_root is not None:
            options.data_root = Path(options.data_root).resolve()
        self.options = options
        self.state = make_state(options.device)
        self.preset = load_preset(options.model, dict(options.model_args))
        self.index = index = TaskIndex(include_paths=[Path(p) for p in options.include_path])
        self.tasks = [index.get(n) for n in index.expand(options.tasks, include_proxy=options.include_proxy)]
        self.tasks = with_variants(self.tasks, options)
        methods = options.methods or list(self.preset.methods)
        self.methods = select_methods(self.preset, methods)
        self.units, unserved, skipped = plan_units(self.tasks, self.preset, self.methods, methods)
        self.adapter = None
        self.adapter_id = Path(options.adapter).name if options.adapter else None
        self.layout = OutputLayout.for_model(options.output_path, self.preset.name, self.adapter_id, options.limit)
        self.model_dir = self.layout.root
        self.progress = progress_factory(options.progress, self.state)
        self.batches = MemoryAdaptiveBatches(enabled=str(options.batch_size) == "auto")
        self.report = RunReport(self.model_dir)
        self.report.failed.update(unserved)
        # not scored, by the task's own rule: in the run summary and manifest, and printed once here
        self.report.skipped_by_task.update(skipped)
        for line in grouped_reasons({stem: f"not scored: {reason}" for stem, reason in skipped.items()}):
            self.warn(line)
        for note in option_notes(options, self.methods.values()):
            self.warn(note)
        self.started = datetime.now(timezone.utc)
        self.timings: dict[str, float] = {}
        self.dataset_load = None
        self.data_provenance: dict[tuple, dict] = {}

    # ----------------------------------------------------------------------------------------------
    def fingerprint(self, unit: Unit) -> dict:
        """What the unit's numbers are computed from; a finished unit is reused only when it matches."""
        o = self.options
        split_file = o.split_files.get(unit.task.dataset)
        return {"task_hash": unit.task.hash, "preset_hash": self.preset.hash, "method": unit.method,
                "limit": o.limit, "seed": o.seed, "probe_compat": o.probe_compat,
                "probe_select": o.probe_select, "zs_scale": o.zs_scale,
                "adapter": self.adapter_id, "n_boot": o.n_boot,
                "split_file_sha256": split_file_digest(split_file) if split_file else None,
                "use_prepared": o.use_prepared,
                "val_rows": "val" in self.methods[unit.method].scored_splits(unit.task, o),
                **self.adapter_training(),
                **self.methods[unit.method].inputs(unit.task), **unit.task.variant,
                **self.data_provenance.get((unit.task.dataset, unit.task.cohort), {})}

    def record_data(self, load, cohort) -> None:
        """The data side of the fingerprint of every unit on this dataset load."""
        from focus_eval.runner.provenance import data_fingerprint, decode_version, images_sha256, split_digest

        data = {"data_fingerprint": data_fingerprint(load), "split_digest": split_digest(load),
                "decode_version": decode_version()}
        if self.options.verify_images:
            data["images_sha256"] = images_sha256(load)
        self.data_provenance[(load.name, cohort)] = data

    def meta(self, unit: Unit, threshold: float | None, extra: dict) -> UnitMeta:
        t, p = unit.task, self.preset
        return UnitMeta.from_dict({
            "model": p.name, "family": p.family, "domain": p.domain, "untrained": bool(p.untrained),
            "method": unit.method, "task": t.name, "dataset": t.dataset, "target": t.target,
            "proxy": bool(t.proxy), "task_version": t.metadata.get("version"), "age_threshold": threshold,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "contamination": t.dataset in (p.contamination or []), "extra": extra,
            "threshold_rule": self.methods[unit.method].hard_label, **self.fingerprint(unit)})

    def adapter_training(self) -> dict:
        """adapter_train_dataset, adapter_train_target and adapter_trained_at from the adapter folder's training
        record (part of the fingerprint: an adapter trained again in the same folder is evaluated again)."""
        if not self.options.adapter:
            return {}
        from focus_eval.adapters.lora import adapter_training_fields
        from focus_eval.digests import folder_digest

        return {**adapter_training_fields(self.options.adapter),
                "adapter_digest": folder_digest(self.options.adapter, frozenset({".safetensors", ".bin", ".json"}))}

    def load_adapter(self):
        if self.adapter is None:
            from focus_eval.adapters import load_adapter

            kwargs: dict[str, Any] = {"trust_remote_code": self.options.trust_remote_code}
            if self.options.adapter:
                kwargs["adapter_dir"] = self.options.adapter
            from focus_eval.progress import on_terminal

            if not self.options.progress or not on_terminal():
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()  # its weight-loading bars too (off a terminal: a stage line)
            t0 = time.perf_counter()
            with self.stage(f"model {self.preset.name} loaded on {self.state.device}"):
                self.adapter = load_adapter(self.preset, device=str(self.state.device), **kwargs)
            self.timings["model_load_s"] = time.perf_counter() - t0
        return self.adapter

    def load_dataset(self, name: str, cohort: str | None):
        from focus_eval.data.registry import load_dataset

        if self.options.data_root is None:
            raise FocusError("no --data-root given (or FOCUS_DATA set); it holds one folder per dataset")
        with self.stage(f"load {name}{f' ({cohort})' if cohort else ''}") as stage:
            load = load_dataset(name, self.options.data_root, cohort=cohort,
                                split_file=self.options.split_files.get(name))
            stage.detail = f" {len(load.records)} images"
        return load

    def stage(self, desc: str):
        """A stage without a count: one line with its time when progress is on (first process only)."""
        from focus_eval.progress import Stage

        return Stage(desc, enabled=self.options.progress and self.state.is_local_main_process)

    def context(self) -> RunContext:
        return RunContext(options=self.options, preset=self.preset, state=self.state, layout=self.layout,
                          batch_size=self.batch_size(), num_workers=self.num_workers(), batches=self.batches,
                          progress=self.progress, adapter=self.load_adapter, finish=self.finish_unit,
                          fail=self.fail_unit, warn=self.warn)

    # ----------------------------------------------------------------------------------------------
    def run(self) -> RunReport:
        plan = self.plan()
        context = self.context() if plan else None
        for load, cohort, units in plan:
            t0 = time.perf_counter()
            self.report_load(load)
            self.score_dataset(context, load, units)
            self.timings[f"{load.name}:{cohort or 'default'}_s"] = time.perf_counter() - t0
        self.state.wait_for_everyone()
        if self.state.is_main_process:
            self.write_group_lines()
            self.close_trackers(self.write_manifest())
            self.report.results = self.collect_results()
        return self.report

    def write_group_lines(self) -> None:
        """For every group named in --tasks, its macro-mean line per method (kind "group" in results.jsonl)."""
        from focus_eval.group_scores import group_line
        from focus_eval.results.store import upsert_line

        spec = self.options.tasks if isinstance(self.options.tasks, str) else ",".join(self.options.tasks)
        for name in dict.fromkeys(t.strip() for t in spec.split(",")):
            group = self.index.groups.get(name)
            if group is None:
                continue
            for method in self.methods:
                try:
                    line = group_line(self.layout, name, list(group.tasks), method, self.options.include_proxy)
                except (ValueError, FocusError) as exc:
                    self.warn(f"group {name} ({method}): no group line: {exc}")
                    continue
                if line is None:
                    # say so: a group named in --tasks must not vanish from the results without a word
                    self.warn(f"group {name} ({method}): no group line: no member task has a results line that "
                              f"counts (missing, skipped by the task, proxy, or underpowered)")
                    continue
                upsert_line(self.layout, line)
                self.report.groups.append(line)

    def plan(self) -> list[tuple]:
        """Load each dataset once, judge every unit against its fingerprint, stop (before writing anything) when
        the folder holds results from other inputs unless --overwrite, rebuild results lines that only need it.
        Returns (load, cohort, units to compute) per dataset."""
        from focus_eval.runner.resume import unit_state

        groups: dict[tuple, list[Unit]] = defaultdict(list)
        for unit in self.units:
            groups[(unit.task.dataset, unit.task.cohort)].append(unit)
        lines = self.readable_results()
        loads, states = {}, []
        for (dataset, cohort), units in groups.items():
            try:
                loads[(dataset, cohort)] = self.load_dataset(dataset, cohort)
            except FocusError as exc:
                for u in units:
                    self.fail_unit(u, str(exc))
                continue
            self.record_data(loads[(dataset, cohort)], cohort)
            states += [unit_state(self.layout, u, self.fingerprint(u), lines) for u in units]
        todo = self.settle(states)
        return [(loads[key], key[1], [u for u in units if u.stem in todo])
                for key, units in groups.items() if key in loads and any(u.stem in todo for u in units)]

    def settle(self, states) -> set[str]:
        """Act on the unit states: stop on stale ones (or clear them with --overwrite), rebuild results lines,
        skip done units. Returns the stems of the units to compute."""
        from focus_eval.results.store import remove_unit
        from focus_eval.runner.resume import stale_message
        from focus_eval.scoring import score_unit

        resume = self.options.resume
        stale = [s for s in states if s.state == "stale"]
        if stale and resume and not self.options.overwrite:
            raise FocusError(stale_message(self.layout, stale))
        todo = set()
        wanting = [s for s in states if s.state == "run" and s.reason] if resume else []
        if wanting:
            self.warn(f"{len(wanting)} finished unit(s) computed again: {wanting[0].reason} (first: "
                      f"{wanting[0].unit.stem}); --no-val-scores keeps finished units as they are")
        for s in states:
            name, method = s.unit.task.name, s.unit.method
            if resume and s.state in ("done", "rescore"):
                if s.state == "rescore" and self.state.is_main_process:
                    score_unit(self.layout, name, method)
                self.report.skipped.append(s.unit.stem)
                continue
            if self.state.is_main_process and (s.state == "stale" or not resume):
                remove_unit(self.layout, name, method)
            todo.add(s.unit.stem)
        self.state.wait_for_everyone()
        return todo

    def readable_results(self) -> list[dict]:
        from focus_eval.results.store import read_results

        return read_results(self.layout, skip_bad=True)

    def report_load(self, load) -> None:
        if not self.state.is_main_process:
            return
        for warning in load.warnings:
            print(f"focus-eval: {load.name}: {warning}", file=sys.stderr)
        if load.skipped:
            print(f"focus-eval: {load.name}: {len(load.skipped)} label row(s) skipped "
                  f"('focus-eval datasets check {load.name}' lists them)", file=sys.stderr)

    def score_dataset(self, context: RunContext, load, units: list[Unit]) -> None:
        """Every pending unit of one dataset, clean images first, then each corruption's units on their own."""
        by_corruption: dict[str | None, list[Unit]] = defaultdict(list)
        for u in units:
            by_corruption[u.task.variant.get("corruption")].append(u)
        for corruption, group in sorted(by_corruption.items(), key=lambda kv: kv[0] or ""):
            self.score_images(context, load, group, corruption)

    def score_images(self, context: RunContext, load, units: list[Unit], corruption: str | None) -> None:
        """Units of one dataset on the same images: embedding methods share one embedding pass, then each
        method scores its own units."""
        by_method: dict[str, list[Unit]] = defaultdict(list)
        for u in units:
            by_method[u.method].append(u)
        embedded = [u for u in units if self.methods[u.method].kind == EMBEDDING]
        embeddings = self.embed_units(load, embedded, corruption) if embedded else None
        self.dataset_load = load  # the meta of every unit finished below records this load's split policy
        context = context.with_dataset(load, embeddings)
        # methods over embeddings first (they need only the main process from here on), as the units are listed
        order = sorted(by_method, key=lambda m: self.methods[m].kind != EMBEDDING)
        for name in order:
            method = self.methods[name]
            if method.kind == EMBEDDING and (embeddings is None or not self.state.is_main_process):
                continue
            self.mark_started(by_method[name])
            method.score(context, by_method[name])

    def mark_started(self, units: list[Unit]) -> None:
        """Record each unit's fingerprint before it is scored: a half-finished unit resumes only with the same."""
        from focus_eval.files import atomic_write_text
        from focus_eval.results.schema import dumps

        if self.state.is_main_process:  # no barrier: only a later run reads it
            for u in units:
                atomic_write_text(self.layout.started(u.task.name, u.method), dumps(self.fingerprint(u)) + "\n")

    def embed_units(self, load, units: list[Unit], corruption: str | None = None) -> Embeddings | None:
        """Embed, once, every image any of ``units`` needs (the splits its method declares)."""
        adapter = self.load_adapter()
        # a multimodal LLM's vision tower serves as its encoder (ve_probe)
        adapter = adapter.image_encoder() if hasattr(adapter, "image_encoder") else adapter
        if not hasattr(adapter, "embed_images"):
            for u in units:
                self.fail_unit(u, f"model {self.preset.name!r} (adapter {self.preset.adapter}) exposes no image "
                                  f"encoder for {u.method}")
            return None
        needed: dict[str, Any] = {}
        tested: set[str] = set()
        for u in units:
            method = self.methods[u.method]
            for split in method.image_splits(u.task, self.options):
                # --limit cuts the rows a sample file holds; a probe is fitted on all its train and val images
                limit = self.options.limit if split == "test" or split not in method.splits else None
                for r in task_records(load, u.task, split, limit):
                    needed[r.image_id] = r
                    if split == "test":
                        tested.add(r.image_id)
        records = sorted(needed.values(), key=lambda r: r.image_id)
        if not records:
            for u in units:
                self.fail_unit(u, f"dataset {load.name!r} has no labelled images for {u.task.target}")
            return None
        from focus_eval.resources import cache_dir
        from focus_eval.runner.embed import embed_records
        from focus_eval.runner.embed_cache import EmbeddingCache

        root = Path(self.options.cache_dir) if self.options.cache_dir else cache_dir("embeddings")
        cache = EmbeddingCache(root, adapter.cache_key, load.name)
        prepared = Path(self.options.data_root) if self.options.use_prepared and self.options.data_root else None
        vectors, errors = {}, {}
        # a corruption is applied to test images only: probes are fitted on clean images, as a model is
        # trained before it meets images taken badly
        for part, corrupt in ((records, None),) if not corruption else (
                ([r for r in records if r.image_id not in tested], None),
                ([r for r in records if r.image_id in tested], corruption)):
            if not part:
                continue
            found, failed = embed_records(
                adapter, part, cache, state=self.state, batch_size=self.batch_size(),
                num_workers=self.num_workers(), prepared_root=prepared, progress=self.progress,
                dtype=self.compute_dtype(), batches=self.batches, corruption=corrupt)
            vectors.update(found)
            errors.update(failed)
        return Embeddings(vectors, errors)

    # ----------------------------------------------------------------------------------------------
    def finish_unit(self, unit: Unit, samples: list[SampleLine], extra: dict) -> None:
        """Write the unit's samples and meta atomically, then its results line."""
        from focus_eval.results.store import write_meta, write_samples
        from focus_eval.scoring import score_samples

        load = self.dataset_load
        threshold = age_threshold(task_records(load, unit.task, "test"))
        from focus_eval.presets import model_provenance

        notes = {**unit.task.output_notes(), **extra, "split_policy": split_summary(load),
                 "provenance": model_provenance(self.preset, self.adapter)}
        meta = self.meta(unit, threshold, notes)
        # test rows first, then validation rows, each in image order; the results line is the test rows'
        samples = sorted(samples, key=lambda s: (s.split != "test", s.image_id))
        tested = [s for s in samples if s.split == "test"]
        if self.options.limit is not None:
            for s in samples:
                s.limited = True
        name, method = unit.task.name, unit.method
        write_samples(self.layout.samples(name, method), samples, self.methods[method].prompt_fields)
        write_meta(self.layout.meta(name, method), meta)
        line = score_samples(self.layout, tested, meta)
        self.layout.started(name, method).unlink(missing_ok=True)
        self.report.finished.append(unit.stem)
        self.log_unit(unit, tested, len(samples) - len(tested))
        self.track_unit(line.to_dict(), self.layout.samples(name, method))
        if tested and all(s.error for s in tested):
            # the results line records it; the run still ends non-zero so that nobody mistakes it for a result
            self.report.failed[unit.stem] = f"every test image failed (first: {tested[0].error})"

    def log_unit(self, unit: Unit, samples: list[SampleLine], n_val: int = 0) -> None:
        """One line per finished unit when progress is on: what it scored and when."""
        if self.options.progress and self.state.is_main_process:
            from focus_eval.progress import log

            errors = sum(1 for s in samples if s.error)
            log(f"scored {unit.task.name} {unit.method} {len(samples)} test images"
                f"{f', {errors} unreadable' if errors else ''}{f' (and {n_val} validation images)' if n_val else ''}")

    def track_unit(self, line: dict, samples) -> None:
        """Send a written unit to the --log-to trackers (runner/trackers.py); a failure warns and is named in
        the summary."""
        if not self.options.log_to or not self.state.is_main_process:
            return
        if getattr(self, "_trackers", None) is None:
            from focus_eval.runner.trackers import Trackers, command_of

            self._trackers = Trackers(self.options.log_to, command_of(self, self.manifest_path()), self.warn)
        self._trackers.log(line, samples)

    def close_trackers(self, manifest: Path) -> None:
        """The command's end for the trackers: its manifest on the parent runs (runner/trackers.py)."""
        trackers = getattr(self, "_trackers", None)
        if trackers is not None:
            trackers.close(manifest)
            self.report.trackers_failed.update(trackers.failures)

    def warn(self, message: str) -> None:
        if self.state.is_main_process:
            print(f"focus-eval: {redact(message)}", file=sys.stderr)

    def fail_unit(self, unit: Unit, reason: str) -> None:
        self.report.failed[unit.stem] = redact(reason)

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
        from focus_eval.runner.images import default_workers

        return default_workers(self.state.num_processes)

    def compute_dtype(self):
        import torch

        if self.state.device.type != "cuda":
            return None
        return {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(self.preset.dtype)

    # ----------------------------------------------------------------------------------------------
    def write_manifest(self) -> Path:
        from focus_eval.runner.manifest import build_manifest

        manifest = build_manifest(self)
        path = self.manifest_path()
        from focus_eval.files import atomic_write_text
        from focus_eval.results.schema import dumps

        atomic_write_text(path, dumps(manifest) + "\n")
        return path

    def manifest_path(self) -> Path:
        return self.layout.manifest(self.started.strftime("%Y%m%dT%H%M%SZ"))

    def collect_results(self) -> list[dict]:
        names = {u.task.name for u in self.units}
        return [r for r in self.readable_results() if r.get("task") in names]


def evaluate(options: RunOptions) -> RunReport:
    return Runner(options).run()

"""The grid plan: one job per (model, dataset) of the evaluation grid, one per LoRA adapter of the fine-tuning
grid and one per (adapter, dataset) evaluation, each with its estimated GPU memory and time; written to and
read from a YAML plan file."""

from __future__ import annotations

import fnmatch
import math
from dataclasses import asdict, dataclass, field, fields, make_dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from focus_eval.errors import FocusError
from focus_eval.finetune.shared import SHARED as SFT_SHARED
from focus_eval.options import DECLARED, RUN_OPTIONS, config_values, plain
from focus_eval.files import atomic_write_text, load_yaml_file

PLAN_FORMAT = 1
# The FOCUS paper's fine-tuning cells: (training dataset, target).
PAPER_CELLS = (("brset", "dr"), ("brset", "referable_dr"), ("brset", "glaucoma"), ("mbrset", "dr"),
               ("mbrset", "referable_dr"))
# The paper's targets: their groups list its clinical tasks.
PAPER_TARGETS = "dr,referable_dr,glaucoma"
# Offline baselines shipped for the demo, not models of the paper's grid.
DEMO_ONLY = ("efficientnet-lite0",)
# FunBench's MLLM line-up (models/README.md): it runs when named, a default grid stays the paper's.
FUNBENCH_LINE_UP = ("llava-1.5-7b", "llava-1.6-7b", "llava-med-1.5-7b", "qwen2-vl-7b", "qwen2.5-vl-7b",
                    "internvl2.5-8b", "huatuogpt-vision-7b", "janus-pro-7b", "qilin-med-vl-chat")
# (dataset, target) pairs of the paper's grid that have no task here, with the reason: they are counted in the
# paper's configurations and listed in the plan, but no job can run them.
WITHOUT_TASK = {("mbrset", "glaucoma"): "mBRSET has no glaucoma label; the reference listed the pair and it "
                                        "stayed empty (docs/COMPARABILITY.md)"}
FAMILY_ORDER = {"vm": 0, "vlm": 1, "mllm": 2}


# run options each job sets itself (or that mean something else in a plan: model_args is per model here)
SET_BY_JOB = ("model", "tasks", "methods", "adapter", "overwrite", "resume", "progress", "include_proxy",
              "model_args", "check", "json")
# the run options every job of a plan takes from its settings: all the others, so that a new option travels
PLAN_OPTIONS = tuple(n for n in RUN_OPTIONS if n not in SET_BY_JOB)
# the ones 'focus-eval sft' shares with runs go to its training jobs too; not the seed (a plan's seed is the
# evaluations', training keeps its own), the preset overrides (per model here) or progress (always off)
SFT_OPTIONS = tuple(n for n in SFT_SHARED if n not in ("seed", "model_args", "progress"))


def _settings_fields() -> list[tuple]:
    """Settings' fields: the grid's own, and one per run option of ``PLAN_OPTIONS`` with the option's default
    (paths as text: a plan file is YAML)."""
    own = [("output_path", str), ("adapters_path", str)]
    run = [(name, Any, field(default_factory=lambda d=DECLARED[name]: plain(d.default())))
           for name in PLAN_OPTIONS if name != "output_path"]
    return own + run + [("model_args", dict[str, str], field(default_factory=dict)),
                        ("sft_args", list[str], field(default_factory=list))]


Settings = make_dataclass("Settings", _settings_fields())
Settings.__module__ = __name__
Settings.__doc__ = ("What every job of a plan shares: where outputs and adapters live, preset overrides per model "
                    "(``model_args``: model -> k=v,...), extra ``focus-eval sft`` options, and every run option "
                    "(``PLAN_OPTIONS``, declared in ``focus_eval.options``) but those a job sets itself.")


def run_values(settings) -> dict[str, Any]:
    """The run options of a plan's settings, by name."""
    return {name: getattr(settings, name) for name in PLAN_OPTIONS}


@dataclass
class GridJob:
    """One job: ``eval`` runs ``focus-eval --model M --tasks ...`` (with ``--adapter`` for an adapter),
    ``sft`` runs ``focus-eval sft``. ``after`` names the jobs it waits for."""

    id: str
    kind: str
    model: str
    dataset: str
    tasks: list[str]
    methods: list[str] = field(default_factory=list)
    target: str | None = None
    cohort: str | None = None
    adapter: str | None = None
    after: list[str] = field(default_factory=list)
    images: int = 0
    images_source: str = "documented"
    gpu_memory_gb: float = 0.0
    host_memory_gb: float = 16.0
    minutes: float = 0.0

    @property
    def configurations(self) -> int:
        return len(self.tasks) * len(self.methods) if self.kind == "eval" else 0

    @property
    def model_dir_name(self) -> str:
        from focus_eval.results.layout import model_dir_name

        return model_dir_name(self.model, self.adapter)


@dataclass
class Plan:
    settings: Settings
    jobs: list[GridJob]
    throughput: str = ""
    created: str = ""
    without_job: list[dict[str, Any]] = field(default_factory=list)
    path: Path | None = None

    def job(self, job_id: str) -> GridJob:
        for job in self.jobs:
            if job.id == job_id:
                return job
        from focus_eval.registry import suggest

        raise FocusError(f"{self.path or 'plan'}: no job {job_id!r}{suggest(job_id, [j.id for j in self.jobs])}")

    def base_configurations(self) -> int:
        return sum(j.configurations for j in self.jobs if j.kind == "eval" and not j.adapter)

    def paper_configurations(self) -> int:
        """Base configurations including the grid's pairs that have no task (and so no job)."""
        return self.base_configurations() + sum(int(w["configurations"]) for w in self.without_job)

    def adapter_configurations(self) -> int:
        return sum(j.configurations for j in self.jobs if j.kind == "eval" and j.adapter)

    def model_dir(self, model: str, adapter: str | None = None) -> Path:
        """The folder the runner writes for ``model`` (with ``adapter``) under this plan's options."""
        from focus_eval.results.layout import OutputLayout

        return OutputLayout.for_model(self.settings.output_path, model, adapter, self.settings.limit).root

    def output_dir(self, job: GridJob) -> Path:
        return self.model_dir(job.model, job.adapter)

    def adapter_dir(self, job: GridJob) -> Path:
        return Path(self.settings.adapters_path) / job.model / str(job.adapter)


# --- building ------------------------------------------------------------------------------------------------
def select_presets(spec: str | None) -> list:
    """Presets for ``--models``: names or shell patterns, comma-separated; by default the paper's models (every
    preset that is neither untrained nor a demo-only baseline). Vision encoders first, then dual encoders,
    then multimodal LLMs."""
    from focus_eval.presets import list_presets, load_preset, preset_files

    if spec:
        names = list(preset_files())
        wanted = {p.strip(): fnmatch.filter(names, p.strip()) for p in spec.split(",") if p.strip()}
        unmatched = [p for p, found in wanted.items() if not found]
        if unmatched:
            from focus_eval.registry import suggest

            raise FocusError(f"--models: no preset matches {unmatched[0]!r}{suggest(unmatched[0], names)}")
        presets = [load_preset(n) for n in dict.fromkeys(n for found in wanted.values() for n in found)]
    else:
        # a model behind a paid API (openai_chat) runs only when named: a default grid never sends images out
        presets = [p for p in list_presets() if not p.untrained and p.name not in DEMO_ONLY + FUNBENCH_LINE_UP
                   and p.adapter != "openai_chat"]
    return sorted(presets, key=lambda p: (FAMILY_ORDER[p.family], p.name))


def select_tasks(index, spec: str | None, include_proxy: bool) -> list:
    """Tasks for ``--tasks``; by default the paper's grid: every task of the three target groups, proxy tasks
    included."""
    if spec:
        return index.tasks(index.expand(spec, include_proxy=include_proxy))
    return index.tasks(index.expand(PAPER_TARGETS, include_proxy=True))


def parse_cells(text: str | None) -> list[tuple[str, str]]:
    """``brset:dr,mbrset:referable_dr`` -> [(dataset, target)]; None gives the paper's five cells."""
    if not text:
        return list(PAPER_CELLS)
    cells = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        dataset, sep, target = part.partition(":")
        if not sep or not dataset or not target:
            raise FocusError(f"--finetune-cells: {part!r} is not DATASET:TARGET (e.g. brset:dr)")
        cells.append((dataset, target))
    return cells


def by_dataset(tasks: list) -> dict[tuple[str, str | None], list]:
    """Tasks grouped by (dataset, cohort) in first-seen order: one group is read and encoded once."""
    groups: dict[tuple[str, str | None], list] = {}
    for task in tasks:
        groups.setdefault((task.dataset, task.cohort), []).append(task)
    return groups


class _Builder:
    """Turns presets, tasks and fine-tuning cells into jobs with estimates."""

    def __init__(self, settings: Settings, throughput, count_root: Path | None):
        self.settings = settings
        self.throughput = throughput
        self.count_root = count_root
        self._counts: dict[tuple, Any] = {}
        self.jobs: list[GridJob] = []

    def counts(self, dataset: str, cohort: str | None, tasks: list):
        from focus_eval.grid.estimate import image_counts

        key = (dataset, cohort, tuple(t.name for t in tasks))
        if key not in self._counts:
            self._counts[key] = image_counts(dataset, cohort, tasks, self.count_root)
        return self._counts[key]

    def add(self, preset, kind: str, job_id: str, dataset: str, cohort: str | None, tasks: list,
            **extra) -> GridJob:
        from focus_eval.grid.estimate import estimate, images_read

        counts = self.counts(dataset, cohort, tasks)
        images = counts.train if kind == "sft" else images_read(
            {"train": counts.train, "val": counts.val, "test": counts.test}, extra.get("methods", []), tasks,
            self.settings)
        est = estimate(preset, kind, images, len(tasks), self.throughput)
        job = GridJob(id=job_id, kind=kind, model=preset.name, dataset=dataset, cohort=cohort,
                      tasks=[t.name for t in tasks], images=images, images_source=counts.source,
                      gpu_memory_gb=est.gpu_memory_gb, host_memory_gb=est.host_memory_gb,
                      minutes=math.ceil(est.minutes), **extra)
        self.jobs.append(job)
        return job

    def evaluations(self, preset, tasks: list, adapter: str | None = None, after: list[str] | None = None) -> None:
        groups = by_dataset(tasks)
        datasets = [d for d, _ in groups]
        for (dataset, cohort), members in groups.items():
            where = dataset if datasets.count(dataset) == 1 else f"{dataset}:{cohort}"
            name = f"{preset.name}@{adapter}" if adapter else preset.name
            self.add(preset, "eval", f"eval/{name}/{where}", dataset, cohort, members,
                     methods=list(preset.methods), adapter=adapter, after=list(after or []))

    def finetuning(self, preset, index, cells: list[tuple[str, str]], tasks: list) -> None:
        for dataset, target in cells:
            name = f"{target}_{dataset}"
            train_task = index.get(name)
            adapter = f"sft-{name}"
            job = self.add(preset, "sft", f"sft/{preset.name}/{adapter}", dataset, train_task.cohort,
                           [train_task], target=target, adapter=adapter)
            evaluated = [t for t in tasks if t.target == target]
            if not evaluated:
                raise FocusError(f"fine-tuning cell {dataset}:{target}: the plan's tasks hold no {target} task "
                                 "to evaluate the adapter on")
            self.evaluations(preset, evaluated, adapter=adapter, after=[job.id])


def build_plan(settings: Settings, *, models: str | None = None, tasks: str | None = None,
               include_proxy: bool = False, finetune: bool = False, finetune_models: str | None = None,
               cells: str | None = None, throughput=None, count_images: bool = True) -> Plan:
    """The grid of ``models`` x ``tasks`` (and with ``finetune`` the fine-tuning grid of the multimodal LLMs
    among them that declare fine-tuning settings), as jobs in submission order."""
    from focus_eval.grid.estimate import Throughput
    from focus_eval.presets import load_preset
    from focus_eval.task import TaskIndex

    throughput = throughput or Throughput.default()
    index = TaskIndex(include_paths=settings.include_path)
    chosen = select_tasks(index, tasks, include_proxy)
    presets = [load_preset(p.name, model_args_for(settings, p.name)) for p in select_presets(models)]
    root = Path(settings.data_root) if (count_images and settings.data_root) else None
    builder = _Builder(settings, throughput, root)
    tuned = _finetune_presets(presets, finetune_models) if finetune else []
    for preset in tuned:
        builder.finetuning(preset, index, parse_cells(cells), chosen)
    for preset in presets:
        builder.evaluations(preset, chosen)
    # training first (it waits for nothing), then base evaluations, then the adapter evaluations
    order = {"sft": 0}
    jobs = sorted(builder.jobs, key=lambda j: (order.get(j.kind, 1 if not j.adapter else 2)))
    return Plan(settings=settings, jobs=jobs, throughput=throughput.source,
                created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                without_job=[] if tasks else without_job(presets))


def without_job(presets: list) -> list[dict[str, Any]]:
    """The paper's pairs that have no task, with the configurations they count for ``presets``."""
    return [{"task": f"{target}_{dataset}", "reason": reason,
             "configurations": sum(len(p.methods) for p in presets)}
            for (dataset, target), reason in WITHOUT_TASK.items()]


def model_args_for(settings: Settings, name: str) -> dict[str, Any]:
    from focus_eval.presets import parse_model_args

    return parse_model_args(settings.model_args.get(name))


def _finetune_presets(presets: list, spec: str | None) -> list:
    """The multimodal LLMs of the plan to fine-tune: those named by ``spec``, else every one whose preset
    declares fine-tuning settings."""
    if spec:
        wanted = [s.strip() for s in spec.split(",") if s.strip()]
        known = {p.name: p for p in presets}
        missing = [w for w in wanted if w not in known]
        if missing:
            raise FocusError(f"--finetune-models: {', '.join(missing)} not among the plan's --models")
        chosen = [known[w] for w in wanted]
    else:
        chosen = [p for p in presets if p.family == "mllm" and "finetune" in (p.settings or {})]
    bad = [p.name for p in chosen if p.family != "mllm"]
    if bad:
        raise FocusError(f"--finetune-models: {', '.join(bad)} are not multimodal LLMs (only those are fine-tuned)")
    return chosen


# --- the plan file -------------------------------------------------------------------------------------------
def write_plan(plan: Plan, path: str | Path) -> Path:
    path = Path(path)
    data = {"format": PLAN_FORMAT, "created": plan.created, "throughput": plan.throughput,
            "base_configurations": plan.base_configurations(),
            "paper_configurations": plan.paper_configurations(),
            "adapter_configurations": plan.adapter_configurations(), "without_job": plan.without_job,
            "settings": asdict(plan.settings), "jobs": [asdict(j) for j in plan.jobs]}
    header = ("# focus-eval grid plan: 'focus-eval grid status|run|collect THIS_FILE'. Jobs run in this order;\n"
              "# 'after' names the jobs a job waits for. Estimates: GPU memory (GB) and minutes on one GPU.\n")
    atomic_write_text(path, header + yaml.safe_dump(data, sort_keys=False, width=120))
    plan.path = path
    return path


def _known(cls, raw: dict, where: str) -> dict:
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(raw) - names)
    if unknown:
        raise FocusError(f"{where}: unknown key(s) {', '.join(unknown)}")
    return raw


def read_plan(path: str | Path) -> Plan:
    path = Path(path)
    try:
        raw = load_yaml_file(path)
    except (OSError, yaml.YAMLError) as exc:
        raise FocusError(f"{path}: cannot read the plan: {exc}") from None
    if not isinstance(raw, dict) or raw.get("format") != PLAN_FORMAT:
        raise FocusError(f"{path}: not a grid plan of format {PLAN_FORMAT} (make one with 'focus-eval grid plan')")
    for key in ("settings", "jobs"):
        if key not in raw:
            raise FocusError(f"{path}: the plan lacks '{key}'")
    try:
        given = _known(Settings, raw["settings"], f"{path}: settings")
        checked = config_values({k: v for k, v in given.items() if k in PLAN_OPTIONS}, f"{path}: settings")
        settings = Settings(**{**given, **plain(checked)})
        jobs = [GridJob(**_known(GridJob, j, f"{path}: jobs[{i}]")) for i, j in enumerate(raw["jobs"])]
    except TypeError as exc:
        raise FocusError(f"{path}: {exc}") from None
    ids = [j.id for j in jobs]
    for job in jobs:
        if ids.count(job.id) > 1:
            raise FocusError(f"{path}: job {job.id!r} is listed twice")
        for dep in job.after:
            if dep not in ids[:ids.index(job.id)]:
                raise FocusError(f"{path}: job {job.id!r} waits for {dep!r}, which is not an earlier job")
    return Plan(settings=settings, jobs=jobs, throughput=raw.get("throughput", ""), created=raw.get("created", ""),
                without_job=list(raw.get("without_job") or []), path=path)

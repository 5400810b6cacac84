"""Experiment trackers (``--log-to mlflow[:URI]``, ``--log-to wandb``), organised like a benchmark.

Checked up front (``runner/tracker_checks.py``, part of the preflight: ``--check`` and every run, before the first
unit): the package at its floor version, the MLflow store one MLflow accepts and that answers, W&B's key and
server unless it is offline. A problem stops the run with exit 2 and the fix.

Organised like a benchmark: one MLflow experiment (W&B project) per benchmark, ``focus-eval/focus`` and
``focus-eval/funbench`` (``focus-eval-focus``, ``focus-eval-funbench``), or ``MLFLOW_EXPERIMENT_NAME``
(``WANDB_PROJECT``); one parent run (W&B group) per command, named ``<model>-<UTC stamp>``, holding one run
per unit. Every run carries the provenance: focus-eval's version, the git commit, the run manifest (its path,
and its sha256 once it is written at the end of the command: on the parent run or the group's command run, and
on MLflow's unit runs) and the unit's data fingerprint. Parameters and metrics of a unit go in one batch (MLflow
``log_batch``, W&B one ``log``); W&B's config keeps the values' types. Artifacts go beside the results unless
the URI says otherwise: without a URI the MLflow store is ``<output>/mlflow.db``, an experiment focus-eval
creates in a local store keeps its artifacts in ``<output>/mlflow-artifacts``, and W&B writes under
``<output>/wandb`` unless ``WANDB_DIR`` is set.

They change no number and never stop a run once it started: the results on disk are written before any tracker
is called, and a tracker that fails is left out for the rest of the run, named in a warning and in the final
summary (``Trackers.failures``)."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlparse

from focus_eval.runner.tracker_checks import mlflow_uri, sqlite_path

TRACKERS = ("mlflow", "wandb")
LOCAL_SCHEMES = ("sqlite",)
# per log_batch call, within MLflow's limits (1000 metrics, 100 params, 100 tags, 1000 entities in all)
MLFLOW_BATCH = {"metrics": 800, "params": 100, "tags": 100}
# MLflow retries a request that gets no answer for minutes by default; a tracker must not hold a run that long
MLFLOW_BOUNDS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_TIMEOUT": "30"}


# --- what is logged ------------------------------------------------------------------------------------------
def unit_metrics(line: dict[str, Any]) -> dict[str, float]:
    """A results line's numbers by the names the trackers log: ``auroc``, ``auroc_ci_low``, ``auroc_ci_high``,
    ``fairness.age.eo_gap``, ... (as ``focus_eval.load_results`` names its columns), counts as ``n``, ``n_pos``,
    ``n_answered`` and ``coverage``. A line without a single answer logs its counts only: it has no score
    (``results.power.no_answers``)."""
    from focus_eval.results.power import no_answers

    out: dict[str, float] = {}

    def put(name: str, value: Any) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = float(value)

    for key in ("n", "n_pos", "n_valid", "n_unparsed", "n_errors", "n_answered", "coverage"):
        put(key, line.get(key))
    if no_answers(line.get("n_answered"), line.get("n_valid"), line.get("output_type")):
        return out
    for name, value in (line.get("metrics") or {}).items():
        put(name, value)
        pair = (line.get("ci") or {}).get(name)
        if isinstance(pair, list) and len(pair) == 2:
            put(f"{name}_ci_low", pair[0])
            put(f"{name}_ci_high", pair[1])
    for section in ("fairness", "robustness"):
        for group, block in (line.get(section) or {}).items():
            for key, value in (block or {}).items() if isinstance(block, dict) else ():
                if isinstance(value, list) and key.endswith("_ci") and len(value) == 2:
                    put(f"{section}.{group}.{key[:-3]}_ci_low", value[0])
                    put(f"{section}.{group}.{key[:-3]}_ci_high", value[1])
                else:
                    put(f"{section}.{group}.{key}", value)
    return out


UNIT_FIELDS = ("model", "task", "method", "adapter", "dataset", "target", "family", "preset_hash", "task_hash",
               "task_version")


def unit_config(line: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """A unit's parameters with their types (W&B's config): the line's descriptive fields and every run option
    as ``option.<name>`` (the manifest's ``options``)."""
    config = {k: line.get(k) for k in UNIT_FIELDS}
    config.update({f"option.{k}": v for k, v in options.items() if k not in ("log_to", "argv")})
    return {k: v for k, v in config.items() if v not in (None, "", [], {})}


def unit_params(line: dict[str, Any], options: dict[str, Any]) -> dict[str, str]:
    """The same as MLflow's parameters (text, at most 500 characters each)."""
    return {k: str(v)[:500] for k, v in unit_config(line, options).items()}


def benchmark(task: str) -> str:
    from focus_eval.task.index import FUNBENCH_WORD

    return FUNBENCH_WORD if task.startswith(FUNBENCH_WORD) else "focus"


@dataclass(frozen=True)
class Command:
    """The command whose units are logged: what every tracker run carries."""

    id: str  # <model>-<UTC stamp>: the parent run's name, the W&B group
    model: str
    output: Path  # the output root (--output-path): where local stores and artifacts go
    manifest: Path  # the run manifest the command writes when it ends
    options: dict[str, Any]
    version: str
    commit: str | None

    def provenance(self) -> dict[str, str]:
        found = {"focus_eval.version": self.version, "focus_eval.git_commit": self.commit,
                 "focus_eval.command": self.id, "focus_eval.manifest": str(self.manifest)}
        return {k: v for k, v in found.items() if v}


@dataclass(frozen=True)
class WrittenUnit:
    """One written unit, as the trackers take it."""

    line: dict[str, Any]
    samples: Path

    @property
    def name(self) -> str:
        return f"{self.line['task']}.{self.line['method']}"

    @property
    def benchmark(self) -> str:
        return benchmark(self.line["task"])

    def provenance(self, command: Command) -> dict[str, str]:
        extra = self.line.get("extra") or {}
        found = {**command.provenance(), "focus_eval.data_fingerprint": extra.get("data_fingerprint"),
                 "focus_eval.task": self.line["task"], "focus_eval.method": self.line["method"]}
        return {k: str(v) for k, v in found.items() if v}


# --- the trackers ----------------------------------------------------------------------------------------------
def _safe_key(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_./ -]", "_", name)


def _chunks(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)] or [[]]


class MlflowTracker:
    """One parent run per (command, experiment), one child run per unit; everything in batches."""

    def __init__(self, uri: str | None, command: Command):
        for key, value in MLFLOW_BOUNDS.items():
            os.environ.setdefault(key, value)
        import mlflow

        self.command = command
        self.uri = mlflow_uri(uri, command.output)
        if urlparse(self.uri).scheme == "sqlite":  # the database's folder (the output folder, by default)
            sqlite_path(self.uri).expanduser().resolve().parent.mkdir(parents=True, exist_ok=True)
        self.client = mlflow.MlflowClient(tracking_uri=self.uri)
        self.parents: dict[str, str] = {}  # experiment id -> parent run id
        self.children: list[str] = []
        self.experiments: dict[str, str] = {}  # name -> id

    def experiment(self, unit: WrittenUnit) -> str:
        name = os.environ.get("MLFLOW_EXPERIMENT_NAME") or f"focus-eval/{unit.benchmark}"
        if name not in self.experiments:
            found = self.client.get_experiment_by_name(name)
            artifacts = None  # a server keeps its own; a local store keeps them beside the results
            if urlparse(self.uri).scheme in LOCAL_SCHEMES:
                artifacts = (Path(self.command.output).expanduser().resolve() / "mlflow-artifacts").as_uri()
            self.experiments[name] = found.experiment_id if found is not None else \
                self.client.create_experiment(name, artifact_location=artifacts)
        return self.experiments[name]

    def parent(self, experiment: str) -> str:
        if experiment not in self.parents:
            from mlflow.entities import Param

            c = self.command
            run = self.client.create_run(experiment, run_name=c.id, tags={**c.provenance(),
                                                                          "focus_eval.kind": "command",
                                                                          "focus_eval.model": c.model})
            params = [Param(_safe_key(f"option.{k}"), str(v)[:500]) for k, v in c.options.items()
                      if k not in ("log_to", "argv") and v not in (None, "", [], {})]
            self.batch(run.info.run_id, params=params)
            self.parents[experiment] = run.info.run_id
        return self.parents[experiment]

    def batch(self, run_id: str, metrics: list = (), params: list = (), tags: list = ()) -> None:
        """Everything in as few ``log_batch`` calls as MLflow's limits per call allow (one for a unit)."""
        chunks = {kind: _chunks(list(items), MLFLOW_BATCH[kind])
                  for kind, items in (("metrics", metrics), ("params", params), ("tags", tags))}
        for i in range(max(len(c) for c in chunks.values())):
            self.client.log_batch(run_id, **{kind: c[i] if i < len(c) else [] for kind, c in chunks.items()})

    def log(self, unit: WrittenUnit) -> None:
        from mlflow.entities import Metric, Param

        experiment = self.experiment(unit)
        tags = {**unit.provenance(self.command), "mlflow.parentRunId": self.parent(experiment),
                "focus_eval.kind": "unit"}
        run_id = self.client.create_run(experiment, run_name=unit.name, tags=tags).info.run_id
        self.children.append(run_id)
        try:
            stamp = int(time.time() * 1000)
            self.batch(run_id, metrics=[Metric(_safe_key(k), v, stamp, 0) for k, v in unit_metrics(unit.line).items()],
                       params=[Param(_safe_key(k), v) for k, v in unit_params(unit.line, self.command.options).items()])
            if unit.samples.is_file():
                self.client.log_artifact(run_id, str(unit.samples))
        finally:
            self.client.set_terminated(run_id)

    def close(self, manifest: Path | None) -> None:
        from mlflow.entities import RunTag

        digest = _digest(manifest)
        for run_id in self.children if digest else ():
            self.batch(run_id, tags=[RunTag("focus_eval.manifest_sha256", digest)])
        for run_id in self.parents.values():
            try:
                if digest:
                    self.batch(run_id, tags=[RunTag("focus_eval.manifest_sha256", digest),
                                             RunTag("focus_eval.units", str(len(self.children)))])
                    self.client.log_artifact(run_id, str(manifest))
            finally:
                self.client.set_terminated(run_id)


class WandbTracker:
    """One run per unit in the command's group (job type ``unit``) and, when the command ends, the group's
    command run (job type ``command``) holding the manifest."""

    def __init__(self, command: Command):
        import wandb

        self.wandb = wandb
        self.command = command
        self.dir = os.environ.get("WANDB_DIR") or str(Path(command.output).expanduser().resolve())
        self.units: dict[str, int] = {}  # project -> units logged

    def project(self, unit_benchmark: str) -> str:
        return os.environ.get("WANDB_PROJECT") or f"focus-eval-{unit_benchmark}"

    def init(self, project: str, name: str, job_type: str, config: dict[str, Any]):
        Path(self.dir).mkdir(parents=True, exist_ok=True)
        return self.wandb.init(project=project, group=self.command.id, job_type=job_type, name=name,
                               config=config, dir=self.dir, reinit="create_new",
                               tags=[self.command.model[:64], job_type])

    def log(self, unit: WrittenUnit) -> None:
        project = self.project(unit.benchmark)
        config = {**unit_config(unit.line, self.command.options), **unit.provenance(self.command)}
        run = self.init(project, unit.name, "unit", config)
        try:
            run.log(unit_metrics(unit.line))  # one call: every metric of the unit
            if unit.samples.is_file():
                run.save(str(unit.samples), base_path=str(unit.samples.parent), policy="now")
        finally:
            run.finish()
        self.units[project] = self.units.get(project, 0) + 1

    def close(self, manifest: Path | None) -> None:
        digest = _digest(manifest)
        for project, count in self.units.items():
            c = self.command
            config = {**{f"option.{k}": v for k, v in c.options.items() if k not in ("log_to", "argv")},
                      **c.provenance(), "model": c.model}
            run = self.init(project, c.id, "command", config)
            try:
                run.summary.update({"units": count, **({"manifest_sha256": digest} if digest else {})})
                if digest:
                    run.save(str(manifest), base_path=str(manifest.parent), policy="now")
            finally:
                run.finish()


def _digest(manifest: Path | None) -> str | None:
    from focus_eval.digests import file_sha256

    return file_sha256(manifest) if manifest is not None and Path(manifest).is_file() else None


@dataclass
class Trackers:
    """The trackers of one command; ``log`` is called once per finished unit and ``close`` once at the end, on
    the main process. A tracker that fails is dropped with one warning and named in ``failures``."""

    targets: list[str]
    command: Command
    warn: Callable[[str], None]
    failures: dict[str, str] = field(default_factory=dict)
    _open: dict[str, Any] = field(default_factory=dict)

    def _tracker(self, target: str):
        if target not in self._open:
            kind, _, uri = target.partition(":")
            self._open[target] = MlflowTracker(uri or None, self.command) if kind == "mlflow" else \
                WandbTracker(self.command)
        return self._open[target]

    def _each(self, action: Callable[[Any], None], when: str) -> None:
        for target in [t for t in self.targets if t not in self.failures]:
            try:
                action(self._tracker(target))
            except Exception as exc:  # a tracker never loses a result: warn once, stop using it
                reason = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ''}"
                self.failures[target] = f"{when}: {reason}"
                self.warn(f"--log-to {target}: {reason}; the results on disk are complete, this tracker is left "
                          f"out for the rest of the run")

    def log(self, line: dict[str, Any], samples: Path) -> None:
        unit = WrittenUnit(line, Path(samples))
        self._each(lambda tracker: tracker.log(unit), f"failed at unit {unit.name}")

    def close(self, manifest: Path | None) -> None:
        self._each(lambda tracker: tracker.close(manifest), "failed when the command ended")


def command_of(runner, manifest: Path) -> Command:
    """The command a runner is running, as the trackers record it."""
    from focus_eval.options import recorded
    from focus_eval.runner.manifest import git_commit
    from focus_eval.version import __version__

    stamp = runner.started.strftime("%Y%m%dT%H%M%SZ")
    return Command(id=f"{runner.preset.name}-{stamp}", model=runner.preset.name,
                   output=Path(runner.options.output_path), manifest=manifest, options=recorded(runner.options),
                   version=__version__, commit=git_commit())

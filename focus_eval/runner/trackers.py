"""Experiment trackers (``--log-to mlflow[:URI]``, ``--log-to wandb``): after a unit's files are written, its
parameters (model, preset hash, task, method, the run options), its metrics with their intervals and its sample
file go to MLflow or Weights & Biases, one tracker run per unit. They change no number and never stop the run:
a tracker that cannot be imported or fails warns once and is left out for the rest of the run; the results on
disk are written before any tracker is called."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable

TRACKERS = ("mlflow", "wandb")


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


def unit_params(line: dict[str, Any], options: dict[str, Any]) -> dict[str, str]:
    params = {k: line.get(k) for k in ("model", "task", "method", "adapter", "dataset", "target", "family",
                                       "preset_hash", "task_hash", "task_version")}
    params.update({f"option.{k}": v for k, v in options.items() if k not in ("log_to", "argv")})
    return {k: str(v)[:500] for k, v in params.items() if v not in (None, "", [], {})}


def _safe_key(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_./ -]", "_", name)


# MLflow retries a request that gets no answer for minutes by default; a tracker must not hold a run that long.
MLFLOW_BOUNDS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_TIMEOUT": "30"}


def log_mlflow(uri: str | None, line: dict, options: dict, samples: Path) -> None:
    for key, value in MLFLOW_BOUNDS.items():
        os.environ.setdefault(key, value)
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri) if uri else mlflow.MlflowClient()
    name = f"focus-eval/{line['model']}"
    experiment = client.get_experiment_by_name(name)
    experiment_id = experiment.experiment_id if experiment else client.create_experiment(name)
    run = client.create_run(experiment_id, run_name=f"{line['task']}.{line['method']}",
                            tags={"focus_eval.task": line["task"], "focus_eval.method": line["method"]})
    run_id = run.info.run_id
    try:
        for key, value in unit_params(line, options).items():
            client.log_param(run_id, _safe_key(key), value)
        for key, value in unit_metrics(line).items():
            client.log_metric(run_id, _safe_key(key), value)
        if samples.is_file():
            client.log_artifact(run_id, str(samples))
    finally:
        client.set_terminated(run_id)


def log_wandb(line: dict, options: dict, samples: Path) -> None:
    import wandb

    run = wandb.init(project=f"focus-eval-{re.sub(r'[^A-Za-z0-9_.-]', '-', line['model'])}",
                     name=f"{line['task']}.{line['method']}", config=unit_params(line, options), reinit="create_new")
    try:
        run.log(unit_metrics(line))
        run.summary.update(unit_metrics(line))
        if samples.is_file():
            run.save(str(samples), base_path=str(samples.parent), policy="now")
    finally:
        run.finish()


class Trackers:
    """The trackers of one run; ``log`` is called once per finished unit, on the main process."""

    def __init__(self, targets: list[str], options: dict[str, Any], warn: Callable[[str], None]):
        self.targets = list(targets)
        self.options = options
        self.warn = warn

    def log(self, line: dict[str, Any], samples: Path) -> None:
        for target in list(self.targets):
            kind, _, uri = target.partition(":")
            try:
                if kind == "mlflow":
                    log_mlflow(uri or None, line, self.options, samples)
                else:
                    log_wandb(line, self.options, samples)
            except Exception as exc:  # a tracker never loses a result: warn once, stop using it
                self.targets.remove(target)
                self.warn(f"--log-to {target}: {type(exc).__name__}: {exc}; the results on disk are complete, "
                          f"this tracker is left out for the rest of the run")

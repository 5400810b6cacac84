"""The Python API: ``focus_eval.evaluate(model=..., tasks=..., **options)`` runs what ``focus-eval --model M
--tasks T`` runs and returns the results lines. The command line goes through ``run`` below."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from focus_eval.errors import FocusError

def run_options(model: str, tasks: str | list[str], **options: Any):
    """RunOptions from keyword arguments named as its fields (``focus_eval.options`` declares them: unknown
    names are an error with a suggestion, values are checked with the command line's parsers), among them
    ``models_path`` (user preset folders) and ``dataset_path`` (dataset cards, ``NAME=DIR``)."""
    from focus_eval.options import RUN_OPTIONS, RunOptions, check_keywords

    options = check_keywords(options, tuple(n for n in RUN_OPTIONS if n not in ("model", "tasks")) + ("argv",))
    if isinstance(tasks, (list, tuple)):
        tasks = ",".join(tasks)
    model = prepare_run(model, options)
    model_args = options.get("model_args") or {}
    if isinstance(model_args, str):
        from focus_eval.presets import parse_model_args

        model_args = parse_model_args(model_args)
    options["model_args"] = dict(model_args)
    for key in ("data_root", "output_path", "cache_dir"):
        if options.get(key) is not None:
            options[key] = Path(options[key])
    return RunOptions(model=model, tasks=tasks, **options)


def prepare_run(model: str, options: dict[str, Any]) -> str:
    """Complete run options in place, once, before anything is written: the data root made absolute; reads
    ``models_path`` and ``dataset_path`` (registering the dataset cards) and returns ``model`` as the runner's
    preset loader reads it (a user preset's name becomes its file). What is missing or wrong is left to
    ``preflight``, which reports every problem at once."""
    from focus_eval.data.manifests import register_manifests
    from focus_eval.data.registry import DATA_ROOT_ENV
    from focus_eval.presets import resolve_model

    models_path = options["models_path"] = _as_list(options.get("models_path"))
    dataset_path = options["dataset_path"] = _as_list(options.get("dataset_path"))
    data_root = options.get("data_root") or os.environ.get(DATA_ROOT_ENV)
    options["data_root"] = Path(data_root).expanduser().resolve() if data_root else None
    register_manifests(options["data_root"], dataset_path)
    try:
        return resolve_model(model, models_path)
    except FocusError:
        return model  # preflight reports it with the other problems


def _as_list(value: Any) -> list[str]:
    if not value:
        return []
    return [str(value)] if isinstance(value, (str, os.PathLike)) else [str(v) for v in value]


def check_device(device: str | None) -> None:
    """A GPU asked for must be visible: a run never falls back to the CPU silently."""
    from focus_eval.runner.preflight import check_device as check

    check(device)


def preflight(options, counts: bool = False):
    """Everything ``options`` needs, checked before anything is loaded or written (``focus_eval.runner.preflight``):
    a ``Preflight`` with the preset, tasks, units and every problem found; with ``counts``, also its images per
    split (``Preflight.counts``), read from the label files of the datasets that are there."""
    from focus_eval.runner.preflight import preflight as check, split_counts

    found = check(options)
    found.counts = split_counts(found, options) if counts and found.units else {}
    return found


def run(options):
    """Run an evaluation once ``preflight`` finds no problem (else a FocusError listing them all); returns the
    runner's report (results lines, finished, skipped and failed units) and the process state (only the main
    process prints)."""
    from focus_eval.runner.run import Runner

    if options.check:
        raise FocusError("check=True runs nothing: focus_eval.api.preflight(options) returns what a run would do")
    check = preflight(options)
    check.raise_problems()
    warning = slow_run_warning(check, options)
    if warning and os.environ.get("LOCAL_RANK", "0") == "0":
        print(f"focus-eval: warning: {warning}", file=sys.stderr, flush=True)
    runner = Runner(options)
    return runner.run(), runner.state


def slow_run_warning(check, options) -> str | None:
    """On the CPU, what a run that would take long there (``grid.estimate.SLOW_MINUTES``: a multi-billion-parameter
    model, or many images) says before it starts: its estimate, and what a GPU would take; None otherwise."""
    from focus_eval.grid.estimate import SIZES_B, SLOW_MINUTES, Throughput, duration, model_size_b, run_estimate
    from focus_eval.runner.preflight import chosen_device, split_counts

    if not check.units or chosen_device(options.device) != "cpu":
        return None
    check.counts = check.counts or split_counts(check, options)
    cpu = Throughput.cpu()
    found = run_estimate(check, options, cpu)
    if found is None or found["minutes"] < SLOW_MINUTES:
        return None
    gpu = run_estimate(check, options, Throughput.default())
    preset = check.preset
    sized = "" if preset.name in SIZES_B else f", sized as a typical {preset.family} model"
    return (f"{preset.name} ({model_size_b(preset):.3g} billion parameters{sized}) on {cpu.where}: about "
            f"{duration(found['minutes'])} for {found['images']} images and {found['memory_gb']:.0f} GB of memory; "
            f"one GPU takes about {duration(gpu['minutes'])} (--device cuda). Planning figures, "
            f"docs/PERFORMANCE.md; stopped with Ctrl-C, the same command resumes where it stopped")


def evaluate(model: str, tasks: str | list[str], **options: Any) -> list[dict[str, Any]]:
    """Evaluate ``model`` (a preset name, a preset file, or a family adapter such as ``"hf_vision"`` with
    ``model_args={"pretrained": ...}``) on ``tasks`` (names, groups, tags or patterns) and return the results
    lines of those tasks; a unit that could not be scored raises FocusError naming it.

    ``options`` are the run options by name: ``data_root``, ``output_path``, ``model_args`` (dict or
    ``"k=v,..."``), ``models_path``, ``dataset_path``, ``methods``, ``batch_size``, ``device``, ``seed``,
    ``limit``, ``resume``, ``probe_compat``, ``probe_select``, ``zs_scale``, ``adapter``, ``split_files``, ``n_boot``,
    ``progress``, ... (see ``RunOptions``)."""
    report, _ = run(run_options(model, tasks, **options))
    if report.failed:
        listed = "; ".join(f"{stem}: {reason}" for stem, reason in report.failed.items())
        raise FocusError(f"{len(report.failed)} unit(s) failed: {listed}")
    return report.results

"""The Python API: ``focus_eval.evaluate(model=..., tasks=..., **options)`` runs what ``focus-eval --model M
--tasks T`` runs and returns the results lines. The command line goes through ``run`` below."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

from focus_eval.errors import FocusError
from focus_eval.registry import suggest


def run_options(model: str, tasks: str | list[str], **options: Any):
    """RunOptions from keyword arguments named as its fields (unknown names are an error with a suggestion),
    plus ``models_path`` (user preset folders) and ``dataset_path`` (dataset cards, ``NAME=DIR``)."""
    from focus_eval.inputs import prepare_run
    from focus_eval.runner.run import RunOptions

    known = {f.name for f in fields(RunOptions)} - {"model", "tasks"} | {"models_path", "dataset_path"}
    for name in options:
        if name not in known:
            raise FocusError(f"unknown option {name!r}{suggest(name, known)}")
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


def run(options):
    """Run an evaluation; returns the runner's report (results lines, finished, skipped and failed units) and
    the process state (only the main process prints)."""
    from focus_eval.runner.run import Runner

    runner = Runner(options)
    return runner.run(), runner.state


def evaluate(model: str, tasks: str | list[str], **options: Any) -> list[dict[str, Any]]:
    """Evaluate ``model`` (a preset name, a preset file, or a family adapter such as ``"hf_vision"`` with
    ``model_args={"pretrained": ...}``) on ``tasks`` (names, groups, tags or patterns) and return the results
    lines of those tasks; a unit that could not be scored raises FocusError naming it.

    ``options`` are the run options by name: ``data_root``, ``output_path``, ``model_args`` (dict or
    ``"k=v,..."``), ``models_path``, ``dataset_path``, ``methods``, ``batch_size``, ``device``, ``seed``,
    ``limit``, ``resume``, ``probe_compat``, ``zs_scale``, ``adapter``, ``split_files``, ``n_boot``,
    ``progress``, ... (see ``RunOptions``)."""
    report, _ = run(run_options(model, tasks, **options))
    if report.failed:
        listed = "; ".join(f"{stem}: {reason}" for stem, reason in report.failed.items())
        raise FocusError(f"{len(report.failed)} unit(s) failed: {listed}")
    return report.results

"""A results line against the installed benchmark: its task (version, hash, dataset, target, proxy flag) as the
installed task files define it, and the focus-eval version that wrote it (from the run manifest that finished
its unit) against the one verifying it."""

from __future__ import annotations

from typing import Any

from focus_eval.errors import FocusError
from focus_eval.results.verdict import MISMATCH, UNVERIFIABLE, Finding
from focus_eval.task.test_digests import same_version


def installed_task(index, row: dict[str, Any]):
    """The installed task a line names, a fragility copy (``<task>@<variant>``) rebuilt from its base task and
    the variant fields of the line's extra as the runner builds it; (task, None) or (None, why not)."""
    name, extra = row["task"], row.get("extra") or {}
    base = extra.get("base_task") if "@" in name else None
    try:
        task = index.get(base or name)
    except FocusError as exc:
        return None, f"task {name} is not installed here ({exc}); --include-path adds a folder of tasks"
    if base is None:
        return task, None
    try:
        task = _variant(task, extra)
    except (FocusError, KeyError, ValueError, TypeError) as exc:
        return None, f"task {name}: its variant cannot be rebuilt from the line's extra ({exc})"
    if task.name != name:
        return None, f"task {name}: the line's variant fields rebuild {task.name}, not {name}"
    return task, None


def _variant(task, extra: dict[str, Any]):
    """``task`` turned into the copy the variant fields name, in the order the runner applies them."""
    from focus_eval.task import variants

    if extra.get("prompt_variant") is not None:
        task = variants.variant_task(task, extra["prompt_variant"])
    if extra.get("label_rule") is not None:
        task = variants.rule_task(task, extra["label_rule"])
    if extra.get("corruption") is not None:
        from focus_eval.data.corruptions import from_label

        corruption = from_label(extra["corruption"])
        task = variants.corrupted_task(task, corruption.label, corruption.slug)
    if extra.get("train_fraction") is not None:
        task = variants.budget_task(task, float(extra["train_fraction"]), int(extra["train_seed"]))
    return task


def task_findings(task, row: dict[str, Any]) -> list[Finding]:
    """The line's task fields against the installed task's."""
    if not same_version(row.get("task_version"), task.version):
        return [Finding(UNVERIFIABLE, "task", f"written for task version {row.get('task_version')}; the installed "
                        f"task is version {task.version}", "task_version", row.get("task_version"), task.version)]
    found = [Finding(MISMATCH, "task", f"{key}: reported {row.get(key)!r}, installed task {value!r}", key,
                     row.get(key), value)
             for key, value in (("dataset", task.dataset), ("target", task.target), ("proxy", bool(task.proxy)))
             if row.get(key) != value]
    if row.get("task_hash") != task.hash:
        found.append(Finding(MISMATCH, "task", f"task_hash: reported {str(row.get('task_hash'))[:12]}..., installed "
                             f"{task.hash[:12]}... (the task was not the installed one)", "task_hash",
                             row.get("task_hash"), task.hash))
    return found


def version_findings(runs, entry) -> list[Finding]:
    """The focus-eval version recorded by the run that finished the line's unit, against this one."""
    from focus_eval.version import __version__

    run = runs.run_of(entry)
    if run is None:
        return [Finding(UNVERIFIABLE, "version", "no run manifest beside the results lists this unit as run, so "
                        "the focus-eval version that wrote it is unknown")]
    if run.version is None:
        return [Finding(UNVERIFIABLE, "version", f"{run.path.name} records no focus-eval version")]
    if run.version != __version__:
        return [Finding(UNVERIFIABLE, "version", f"written by focus-eval {run.version}; this is {__version__}: "
                        f"verify it with focus-eval {run.version}", "focus_eval_version", run.version,
                        __version__)]
    return []

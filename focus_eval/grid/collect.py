"""``grid collect``: rescore every output folder with a finished unit whose results line is missing or older
than its samples, compare each fine-tuned model with its base model, and build the leaderboard of the plan's
output folders, all through the ordinary commands (score, compare, leaderboard)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from focus_eval.errors import FocusError
from focus_eval.grid.plan import Plan
from focus_eval.grid.status import DONE, JobStatus, plan_status


@dataclass
class Collected:
    scored: list[Path] = field(default_factory=list)
    compared: list[Path] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)
    site: Path | None = None


def _focus_eval(argv: list[str], accept: tuple[int, ...] = (0,)) -> int:
    from focus_eval.grid.jobs import run_command

    code = run_command(argv)
    if code not in accept:
        raise FocusError(f"'focus-eval {' '.join(argv)}' ended with status {code}")
    return code


def needs_scoring(model_dir: Path, status: JobStatus) -> bool:
    """Whether a finished unit of the job has no results line, or one computed from other samples (two runs
    writing results.jsonl at once can lose a line; the sample and meta files are the record)."""
    from focus_eval.results.layout import OutputLayout
    from focus_eval.results.store import read_results, result_key

    layout = OutputLayout(model_dir)
    lines = {result_key(r): r for r in read_results(layout)}
    for stem, unit in status.units.items():
        if unit.state != DONE:
            continue
        task, method = stem.rsplit(".", 1)
        meta = json.loads(layout.meta(task, method).read_text(encoding="utf-8"))
        line = lines.get((task, method, status.job.adapter or ""))
        if line is None or any(line.get(k) != meta.get(k) for k in ("created", "task_hash", "preset_hash")):
            return True
    return False


def score_where_needed(plan: Plan, statuses: list[JobStatus]) -> list[Path]:
    """``focus-eval score`` on every output folder with a finished unit that needs scoring."""
    folders: list[Path] = []
    for status in statuses:
        folder = plan.output_dir(status.job)
        if status.job.kind == "eval" and folder not in folders and needs_scoring(folder, status):
            folders.append(folder)
    for folder in folders:
        _focus_eval(["score", str(folder)], accept=(0, 1))  # 1: unfinished units were left out, as status says
    return folders


def compare_adapters(plan: Plan, statuses: list[JobStatus]) -> list[Path]:
    """``focus-eval compare`` per fine-tuned model: its base folder against every adapter folder with results."""
    by_model: dict[str, list[Path]] = {}
    for status in statuses:
        job = status.job
        if job.kind == "eval" and job.adapter:
            folder = plan.output_dir(job)
            if (folder / "results.jsonl").is_file() and folder not in by_model.setdefault(job.model, []):
                by_model[job.model].append(folder)
    written = []
    for model, folders in by_model.items():
        base = plan.model_dir(model)
        if not folders or not (base / "results.jsonl").is_file():
            print(f"focus-eval grid: no comparison for {model}: base or adapter results missing")
            continue
        target = base / "compare.jsonl"
        _focus_eval(["compare", "--base", str(base), "--ft", *map(str, folders), "-o", str(target),
              "--n-boot", str(plan.settings.n_boot), "--seed", str(plan.settings.seed)])
        written.append(target)
    return written


def collect(plan: Plan, site: str | Path, allow_incomplete: bool = False) -> Collected:
    statuses = plan_status(plan)
    report = Collected(unfinished=[s.job.id for s in statuses if s.state != DONE])
    if report.unfinished and not allow_incomplete:
        shown = ", ".join(report.unfinished[:10]) + (" ..." if len(report.unfinished) > 10 else "")
        raise FocusError(f"{plan.path}: {len(report.unfinished)} job(s) are not done ({shown}); run "
                         "'focus-eval grid run' again, or pass --allow-incomplete to publish what is finished")
    report.scored = score_where_needed(plan, statuses)
    report.compared = compare_adapters(plan, statuses)
    folders = []
    for status in statuses:
        folder = plan.output_dir(status.job)
        if status.job.kind == "eval" and (folder / "results.jsonl").is_file() and folder not in folders:
            folders.append(folder)
    if not folders:
        raise FocusError(f"{plan.path}: no results yet under {plan.settings.output_path}")
    extra = [a for folder in plan.settings.include_path for a in ("--include-path", str(folder))]
    _focus_eval(["leaderboard", *map(str, folders), "-o", str(site), *extra])
    report.site = Path(site)
    return report

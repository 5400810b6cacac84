"""Build the static leaderboard site from results folders: read, check, group, render, write."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from focus_eval.errors import DataError
from focus_eval.leaderboard import charts, groups
from focus_eval.leaderboard.calibration import read_calibration, samples_path
from focus_eval.leaderboard.catalog import load_catalog
from focus_eval.leaderboard.compare import read_compare_files
from focus_eval.leaderboard.entries import Entry, read_entries, read_group_lines
from focus_eval.leaderboard.inputs import SiteInputs, discover
from focus_eval.leaderboard.output import copy_static, prepare_output, write_json, write_pages
from focus_eval.leaderboard.pages import CalibrationView, Site, render_pages
from focus_eval.leaderboard.privacy import metrics_only
from focus_eval.leaderboard.render import environment
from focus_eval.leaderboard.slugs import assign_slugs
from focus_eval.resources import resource_dir

@dataclass
class SiteReport:
    """What one build read and wrote."""

    out_dir: Path
    inputs: SiteInputs
    pages: list[str]
    n_lines: int
    samples_files: list[Path] = field(default_factory=list)
    missing_samples: int = 0

    @property
    def index(self) -> Path:
        return self.out_dir / "index.html"

    def as_uri(self) -> str:
        """The ``file://`` address of the overview page, to open in a browser."""
        return self.index.resolve().as_uri()


def build_site(results_dirs: Sequence[Path | str], out_dir: Path | str, include_proxy: bool = False,
               top: int = 5, include_paths: Sequence[Path | str] = (), no_samples: bool = False) -> SiteReport:
    """Write the site for every results line under ``results_dirs`` into ``out_dir``; returns what was done.

    ``include_paths`` are user task folders (as ``--include-path``), read for the label rules of their tasks.
    ``no_samples`` publishes metrics only: no sample file is read (no reliability curves) and no image or
    patient id reaches the site.
    """
    out_dir = Path(out_dir)
    inputs = discover(results_dirs)
    entries = load_entries(inputs.results_files)
    compare = read_compare_files(inputs.compare_files)
    catalog = load_catalog()
    calibrations = load_calibrations(entries, read_samples=not no_samples)
    model_slugs = assign_slugs(e.model for e in entries)
    task_slugs = assign_slugs(e.line.task for e in entries)
    configs = groups.configurations(entries, catalog, include_proxy)
    site = Site(
        catalog=catalog, entries=entries,
        tasks=groups.tasks(entries, catalog, task_slugs, task_definitions(include_paths)),
        models=groups.models(entries, catalog, model_slugs),
        configs=configs, top=groups.top_configurations(configs, top),
        table=groups.paper_table(entries, catalog, include_proxy), calibrations=calibrations, compare=compare,
        include_proxy=include_proxy, model_slugs=model_slugs, task_slugs=task_slugs,
        group_lines=sorted((g for path in inputs.results_files for g in read_group_lines(path)),
                           key=lambda g: (g.group, g.model, g.method, g.adapter or "")))
    pages = render_pages(environment(catalog), site)
    prepare_output(out_dir)
    write_pages(out_dir, pages)
    _write_data(out_dir, entries, compare.raw, redact=no_samples)
    copy_static(resource_dir("leaderboard") / "static", out_dir)
    read = [v.entry for v in calibrations.values() if v.calibration is not None]
    return SiteReport(out_dir=out_dir, inputs=inputs, pages=sorted(pages), n_lines=len(entries),
                      samples_files=[samples_path(e.sample_dir, e.line.task, e.line.method) for e in read],
                      missing_samples=len(calibrations) - len(read))


def load_entries(files: Iterable[Path]) -> list[Entry]:
    """Every results line; the same (model, method, adapter, task) twice is an error naming both places."""
    entries: list[Entry] = []
    seen: dict[tuple, Entry] = {}
    for path in files:
        for entry in read_entries(path):
            if entry.key in seen:
                first = seen[entry.key]
                raise DataError(f"duplicate results line for model {entry.model!r}, method {entry.line.method!r}, "
                                f"task {entry.line.task!r} (first seen in {first.source}, row {first.row})",
                                file=str(entry.source), row=entry.row)
            seen[entry.key] = entry
            entries.append(entry)
    return entries


def task_definitions(include_paths: Sequence[Path | str] = ()) -> dict[str, groups.TaskDefinition]:
    """Label rule, description and file hash of every task the task index knows (shipped and user folders)."""
    from focus_eval.task import TaskIndex

    index = TaskIndex(include_paths)
    return {task.name: groups.TaskDefinition(label_rule=task.label_rule, description=task.description,
                                             hash=task.hash) for task in index.tasks()}


def load_calibrations(entries: Iterable[Entry], read_samples: bool = True) -> dict[tuple, CalibrationView]:
    views = {}
    for entry in entries:
        if not read_samples:
            views[entry.key] = CalibrationView(entry=entry, chart=None, calibration=None,
                                               note="Published without per-image data (--no-samples), so no curve.")
            continue
        path = samples_path(entry.sample_dir, entry.line.task, entry.line.method)
        if path is None or not path.is_file():
            views[entry.key] = CalibrationView(entry=entry, chart=None, calibration=None,
                                               note="No sample file next to the results, so no curve.")
            continue
        calibration = read_calibration(path)
        if not calibration.n:
            views[entry.key] = CalibrationView(entry=entry, chart=None, calibration=calibration,
                                               note="The sample file has no scored test rows.")
            continue
        views[entry.key] = CalibrationView(entry=entry, chart=charts.reliability(calibration),
                                           calibration=calibration, note=None)
    return views


def _write_data(out_dir: Path, entries: list[Entry], comparisons: list[dict], redact: bool = False) -> None:
    rows = [e.raw for e in entries]
    write_json(out_dir, "data/results.json", metrics_only(rows) if redact else rows)
    if comparisons:
        write_json(out_dir, "data/compare.json", metrics_only(comparisons) if redact else comparisons)

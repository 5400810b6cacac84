"""Build the static leaderboard site from results folders: read, check, group, render, write."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from focus_eval.analysis.deltas import fine_tuning
from focus_eval.errors import FocusError
from focus_eval.leaderboard.conventions import collect_results
from focus_eval.leaderboard.draw.calibration import samples_path
from focus_eval.leaderboard.draw.catalog import load_catalog
from focus_eval.files import atomic_write_bytes
from focus_eval.leaderboard.draw.output import copy_static, prepare_output, site_path, write_json, write_pages
from focus_eval.leaderboard.draw.samples import load_samples
from focus_eval.leaderboard.draw.slugs import assign_slugs
from focus_eval.leaderboard.draw.templates import environment
from focus_eval.leaderboard.pages import groups
from focus_eval.leaderboard.pages.maintable import main_rows, with_left_out
from focus_eval.leaderboard.pages.sample_pages import asked_tasks, make_thumbnails, sample_links
from focus_eval.leaderboard.pages.site import Site
from focus_eval.leaderboard.pages.site_pages import render_site
from focus_eval.leaderboard.pages.statistics import site_stats, with_rank_intervals
from focus_eval.leaderboard.pages.views import broken_pages
from focus_eval.resources import resource_dir
from focus_eval.results.collect import Collection, Entry, SiteInputs, metrics_only, refuse_overwrite
from focus_eval.results.identity import Pairing, pair
from focus_eval.results.power import COVERAGE_FLOOR, check_floor

DEFAULT_TITLE = "FOCUS leaderboard"
_BASE_URL = re.compile(r"^(https?://[^\s\"'<>`]+|/[^\s\"'<>`]*)$")


@dataclass
class SiteReport:
    """What one build read and wrote."""

    out_dir: Path
    inputs: SiteInputs
    pages: list[str]
    n_lines: int
    samples_files: list[Path] = field(default_factory=list)
    missing_samples: int = 0
    data_files: list[str] = field(default_factory=list)
    replaced: int = 0
    n_limited: int = 0
    warnings: list[str] = field(default_factory=list)
    # lines verified, by state (empty when nothing was verified), and the submission bundles read
    verdicts: dict[str, int] = field(default_factory=dict)
    bundles: list = field(default_factory=list)
    # a page plugin that cannot be imported, one line each (its page is left out of the site)
    unlisted_pages: list[str] = field(default_factory=list)

    @property
    def index(self) -> Path:
        return self.out_dir / "index.html"

    def as_uri(self) -> str:
        """The ``file://`` address of the overview page, to open in a browser."""
        return self.index.resolve().as_uri()


def build_site(results_dirs: Sequence[Path | str], out_dir: Path | str, include_proxy: bool = False,
               top: int = 5, include_paths: Sequence[Path | str] = (), no_samples: bool = False, *,
               include_limited: bool = False, prefer: str | Path | None = None, title: str | None = None,
               base_url: str | None = None, coverage_floor: float = COVERAGE_FLOOR, thumbnails: bool = False,
               data_root: Path | str | None = None, verify: bool = False,
               include_unverified: bool = False) -> SiteReport:
    """Write the site for every results line under ``results_dirs`` into ``out_dir``; returns what was done.

    ``include_paths`` are user task folders (as ``--include-path``), read for the label rules of their tasks.
    ``no_samples`` publishes metrics only: no sample file is read (no reliability curves) and no image or
    patient id reaches the site. ``--limit`` runs are marked and kept out of rankings, means and figures unless
    ``include_limited``. ``prefer`` (``newest`` or a folder) settles lines found twice. ``title`` names the site
    and ``base_url`` is where it will be published (canonical page addresses). A prompt method's line whose
    coverage (readable answers / rows) is below ``coverage_floor`` is shown, marked low coverage, and ranked
    nowhere. ``thumbnails`` puts small JPEG copies of the test images on the per-image pages, decoded from the
    datasets under ``data_root``.

    A submission bundle among ``results_dirs`` is checked on arrival and each of its lines verified
    (``verification.verify_collection``: against the datasets under ``data_root`` where they are, else the
    published test-split digests); ``verify`` verifies the lines of plain results folders too. A line that is not
    verified is shown, marked, and ranked nowhere unless ``include_unverified``.
    """
    out_dir = Path(out_dir)
    if thumbnails and (no_samples or data_root is None):
        raise FocusError("--thumbnails needs --data-root (the datasets the results were computed on) and cannot "
                         "be combined with --no-samples")
    collection = with_coverage_floor(collect_results(results_dirs, prefer), coverage_floor)
    refuse_overwrite(collection, folders=[("-o", out_dir)], also=[data_root, *include_paths])
    from focus_eval.task import TaskIndex
    from focus_eval.verification.collection import verify_collection

    index = TaskIndex(include_paths)
    verified = verify_collection(collection, everything=verify, data_root=data_root, index=index,
                                 include_unverified=include_unverified)
    collection = verified.collection
    site = assemble(collection, load_catalog(), include_proxy=include_proxy, top=top,
                    include_paths=include_paths, no_samples=no_samples, include_limited=include_limited,
                    title=check_title(title), base_url=check_base_url(base_url), index=index)
    site.include_unverified = include_unverified
    images = {}
    if thumbnails:
        by_key = {e.key: e for e in site.entries}
        images = make_thumbnails([by_key[k] for k in site.sample_links], Path(data_root))
        site.thumbs = {key: name for key, (name, _) in images.items()}
    pages, data = render_site(environment(site.catalog), site)
    prepare_output(out_dir)
    for name, jpeg in images.values():
        atomic_write_bytes(site_path(out_dir, name), jpeg)
    write_pages(out_dir, pages)
    write_pages(out_dir, data)
    _write_data(out_dir, site.entries, site.compare.raw, no_samples, site.submitted or site.verified)
    copy_static(resource_dir("leaderboard") / "static", out_dir)
    read = [v.entry for v in site.samples.values() if v.calibration is not None]
    return SiteReport(out_dir=out_dir, inputs=collection.inputs, pages=sorted(pages), n_lines=len(site.entries),
                      samples_files=[samples_path(e.sample_dir, e.line.task, e.line.method) for e in read],
                      missing_samples=len(site.samples) - len(read), data_files=sorted(data),
                      replaced=collection.replaced, n_limited=site.n_limited, warnings=site.runs.unreadable,
                      verdicts=verified.counts() if verified.verdicts else {}, bundles=collection.inputs.bundles,
                      unlisted_pages=broken_pages())


def with_coverage_floor(collection: Collection, floor: float) -> Collection:
    """The collection with every entry judged against ``floor`` (``Entry.low_coverage``)."""
    try:
        floor = check_floor(floor)
    except ValueError as error:
        raise FocusError(f"--coverage-floor: {error}") from None
    return replace(collection, entries=[replace(e, coverage_floor=floor) for e in collection.entries])


def assemble(collection: Collection, catalog, *, include_proxy: bool, top: int,
             include_paths: Sequence[Path | str], no_samples: bool, include_limited: bool, title: str,
             base_url: str | None, index=None) -> Site:
    """Group the lines every way the pages show them (``index``: the task index of ``include_paths``, if read
    already)."""
    entries = collection.entries
    # multi-class (FunBench) lines have no AUROC: they are ranked on their own page (pages.funbench); the others
    # come through the one pairing step the rank intervals and pairwise pages take theirs from (a line without
    # answers, of low coverage or of another task version is ranked nowhere; lines of fragility runs are on the
    # fragility page)
    ranking = ranked_pairing(entries, include_limited)
    ranked = ranking.entries
    model_slugs = assign_slugs(e.model for e in entries)
    task_slugs = assign_slugs(e.line.task for e in entries)
    configs = groups.configurations(ranked, catalog, include_proxy)
    if index is None:
        from focus_eval.task import TaskIndex

        index = TaskIndex(include_paths)
    tasks = groups.tasks(entries, catalog, task_slugs, task_definitions(index))
    links = {} if no_samples else sample_links(entries, task_slugs, model_slugs)
    ranked_ids = {id(e) for e in ranked}
    targets = sorted({e.line.target for e in ranked if e.line.target}, key=lambda t: catalog.order("targets", t))
    samples = load_samples(entries, read_samples=not no_samples)
    stats = None if no_samples else site_stats(collection, include_proxy, include_limited)
    return Site(
        catalog=catalog, entries=entries, ranked=ranked, tasks=tasks,
        models=groups.models(entries, catalog, model_slugs), configs=configs,
        top=groups.top_configurations(configs, top), table=groups.paper_table(ranked, catalog, include_proxy),
        samples=samples, compare=fine_tuning(collection.compare),
        include_proxy=include_proxy, include_limited=include_limited, model_slugs=model_slugs,
        task_slugs=task_slugs, targets=targets, runs=collection.runs, title=title, base_url=base_url,
        main=with_rank_intervals(with_left_out(main_rows(configs, [t for t in tasks if any(id(e) in ranked_ids
                                                                                           for e in t.entries)],
                                                         targets, include_proxy, samples), ranking.left_out), stats),
        left_out=ranking.left_out,
        group_lines=collection.group_lines, stats=stats,
        sample_links=links, asked=asked_tasks([e for e in entries if e.key in links], index),
        bundles=collection.inputs.bundles)


def ranked_pairing(entries: Sequence[Entry], include_limited: bool) -> Pairing:
    """The binary lines the main table, heatmap and paper table rank (``results.identity.pair`` over the
    configurations, as the rank intervals take theirs), and the lines left out with their reasons."""
    binary = [e for e in entries if not e.line.output_type]
    return pair(binary, "configuration", include_limited=include_limited, min_group=1)


def check_title(title: str | None) -> str:
    if title is None:
        return DEFAULT_TITLE
    title = " ".join(title.split())
    if not title or len(title) > 120:
        raise FocusError("--title must be 1 to 120 characters")
    return title


def check_base_url(url: str | None) -> str | None:
    """``http(s)://host/path/`` or ``/path/`` with a trailing slash, or None."""
    if url is None:
        return None
    if not _BASE_URL.match(url) or "?" in url or "#" in url:
        raise FocusError(f"--base-url {url!r}: give the address the site will be published at, as "
                         "https://host/path/ or /path/ (no spaces, quotes, query or fragment)")
    return url if url.endswith("/") else url + "/"


def task_definitions(index) -> dict[str, groups.TaskDefinition]:
    """Label rule, description and file hash of every task the task index (``task.TaskIndex``: shipped and user
    folders) knows."""
    return {task.name: groups.TaskDefinition(label_rule=task.label_rule, description=task.description,
                                             hash=task.hash) for task in index.tasks()}


def _write_data(out_dir: Path, entries: list[Entry], comparisons: list[dict], redact: bool = False,
                submitted: bool = False) -> None:
    """``data/results.json``: every results line as read; on a site of submissions each with its ``submitter``
    and ``verification`` as the build found them (whatever the line itself says under those keys)."""
    rows = [{**e.raw, "submitter": e.submitter, "verification": e.verification} if submitted else e.raw
            for e in entries]
    write_json(out_dir, "data/results.json", metrics_only(rows) if redact else rows)
    if comparisons:
        write_json(out_dir, "data/compare.json", metrics_only(comparisons) if redact else comparisons)

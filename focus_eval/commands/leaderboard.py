"""``focus-eval leaderboard RESULTS_DIR... -o SITE_DIR``: build the static leaderboard site, from one's own
results folders and from the submission bundles of other groups (docs/SUBMITTING.md)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results_dirs", nargs="+", metavar="RESULTS_DIR", type=Path,
                        help="an --output-path folder (<model>/results.jsonl inside), a model folder, a "
                             "results.jsonl / compare*.jsonl file, or a submission bundle (focus-eval report "
                             "bundle: checked on arrival, and each of its lines verified); fine-tuning comparison "
                             "files (compare*.jsonl, */compare.jsonl) are picked up from the folders")
    parser.add_argument("-o", "--output", required=True, type=Path, metavar="SITE_DIR",
                        help="folder to write the site into (new, empty, or an earlier leaderboard build)")
    parser.add_argument("--include-proxy", action="store_true",
                        help="include proxy and underpowered tasks in group means (left out by default)")
    parser.add_argument("--include-path", action="append", default=[], type=Path, metavar="DIR",
                        help="user task folder whose label rules the task pages show (repeatable)")
    parser.add_argument("--no-samples", action="store_true",
                        help="publish metrics only: read no per-image sample file (no reliability curves) and "
                             "leave every image and patient id out of the site (for private data)")
    parser.add_argument("--top", type=int, default=5, metavar="N",
                        help="configurations shown on the overview's radar chart (default: 5)")
    parser.add_argument("--include-limited", action="store_true",
                        help="rank the lines of --limit runs with the others (by default they are marked and "
                             "left out of rankings, means and figures)")
    parser.add_argument("--prefer", metavar="newest|FOLDER",
                        help="when a results line is found twice (a model in two folders): keep the newer one "
                             "('newest', by its 'created' time) or the one under FOLDER")
    parser.add_argument("--title", metavar="TEXT", help="the site's name, in every page header and title "
                                                        "(default: FOCUS leaderboard)")
    parser.add_argument("--base-url", metavar="URL",
                        help="the address the site will be published at (https://host/path/ or /path/), for "
                             "canonical page addresses; the pages link to each other relatively, so any static "
                             "host serves them")
    add_coverage_floor(parser)
    parser.add_argument("--thumbnails", action="store_true",
                        help="show a small JPEG copy of each test image on the per-image pages, decoded from "
                             "the datasets under --data-root (never with --no-samples)")
    parser.add_argument("--data-root", type=Path, metavar="DIR",
                        help="the folder holding the datasets the results were computed on (for --thumbnails, and "
                             "to verify submitted lines against the data rather than the published digests)")
    add_verification_arguments(parser)


def add_verification_arguments(parser: argparse.ArgumentParser) -> None:
    """``--verify`` and ``--include-unverified``: how a command that ranks lines treats their verification."""
    parser.add_argument("--verify", action="store_true",
                        help="verify the lines of plain results folders too (those of a submission bundle are "
                             "always verified): each recomputed from its samples and checked against the task, the "
                             "focus-eval version and the data or published digest, as 'focus-eval verify' does")
    parser.add_argument("--include-unverified", action="store_true",
                        help="rank the lines whose verification found a mismatch or could not be made (by default "
                             "they are shown, marked, and ranked nowhere)")


def print_verdicts(counts: dict[str, int], include_unverified: bool) -> None:
    """One line: how many lines were verified, and what became of the others."""
    left = sum(counts.values()) - counts.get("verified", 0)
    what = ("ranked with the others (--include-unverified)" if include_unverified else
            "marked and ranked nowhere (--include-unverified ranks them)") if left else ""
    print(f"verified {sum(counts.values())} line(s): " + ", ".join(f"{n} {state}" for state, n in counts.items())
          + (f"; the {left} not verified are {what}" if left else ""))


def add_coverage_floor(parser: argparse.ArgumentParser) -> None:
    from focus_eval.results.power import COVERAGE_FLOOR

    parser.add_argument("--coverage-floor", type=float, default=COVERAGE_FLOOR, metavar="SHARE",
                        help="a prompt method's line whose share of readable answers (coverage) is below SHARE "
                             f"is shown, marked low coverage, and ranked nowhere (default {COVERAGE_FLOOR}; 0 "
                             "ranks every line)")


def run(args: argparse.Namespace) -> int:
    from focus_eval.errors import FocusError
    from focus_eval.leaderboard import build_site

    if args.top < 1:
        raise FocusError("--top must be at least 1")
    started = time.perf_counter()
    report = build_site(args.results_dirs, args.output, include_proxy=args.include_proxy, top=args.top,
                        include_paths=args.include_path, no_samples=args.no_samples,
                        include_limited=args.include_limited, prefer=args.prefer, title=args.title,
                        base_url=args.base_url, coverage_floor=args.coverage_floor, thumbnails=args.thumbnails,
                        data_root=args.data_root, verify=args.verify, include_unverified=args.include_unverified)
    inputs = report.inputs
    samples = ("no sample files (--no-samples: metrics only)" if args.no_samples else
               f"{len(report.samples_files)} sample file(s) for calibration curves "
               f"({report.missing_samples} results line(s) without one)")
    print(f"read {report.n_lines} results lines from {len(inputs.results_files)} results file(s), {samples}, "
          f"{len(inputs.compare_files)} comparison file(s)")
    for path in [*inputs.results_files, *inputs.compare_files]:
        print(f"  {path}")
    if report.replaced:
        print(f"kept {report.replaced} preferred line(s) over their duplicates (--prefer {args.prefer})")
    for bundle in report.bundles:
        print(f"bundle {bundle.folder} from {bundle.submitter}: checked on arrival, digest {bundle.digest}")
    if report.verdicts:
        print_verdicts(report.verdicts, args.include_unverified)
    if report.n_limited:
        print(f"{report.n_limited} line(s) of --limit runs " +
              ("ranked with the others (--include-limited)" if args.include_limited else
               "marked and left out of rankings (--include-limited ranks them)"))
    for warning in report.warnings:
        print(f"warning: run manifest not read: {warning}")
    for line in report.unlisted_pages:
        print(f"warning: page left out of the site, {line}")
    print(f"wrote {len(report.pages)} pages in {time.perf_counter() - started:.1f} s; "
          f"open {report.as_uri()}")
    return 0

"""``focus-eval report NAME RESULTS... [--json FILE] [--csv FILE]``: the one door to every analysis of collected
results (``focus_eval.analysis``): it reads RESULTS as the leaderboard does, computes the analysis, prints its
table, and writes it as JSON and CSV on request. ``focus-eval report`` alone lists the analyses."""

from __future__ import annotations

import argparse
from pathlib import Path

from focus_eval import validators


from focus_eval.validators import MAX_N_BOOT

EXPORT = "export"
EXPORT_SUMMARY = "the results lines as lm-evaluation-harness result files (--format lm-eval -o DIR)"
BUNDLE = "bundle"
BUNDLE_SUMMARY = "a submission bundle: results, samples and manifests with their digests (-o DIR --submitter NAME)"


def listing() -> str:
    """Every analysis by name with its one-line summary."""
    from focus_eval.analysis import ANALYSES
    from focus_eval.registry import unlisted

    found = ANALYSES.loaded()  # an analysis plugin that cannot be imported is named beneath, not listed
    width = max(map(len, [*(n for n, _ in found), EXPORT, BUNDLE]), default=0)
    return "\n".join(["analyses:", *(f"  {n:<{width}}  {analysis.summary}" for n, analysis in found),
                      f"  {EXPORT:<{width}}  {EXPORT_SUMMARY}", f"  {BUNDLE:<{width}}  {BUNDLE_SUMMARY}",
                      *unlisted("focus_eval.analyses")])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    plain_help = parser.format_help

    def with_listing() -> str:  # the listing imports every analysis: only when help is asked for
        parser.epilog = listing()
        return plain_help()

    parser.format_help = with_listing
    parser.add_argument("name", nargs="?", metavar="NAME", help="the analysis to run (listed below)")
    add_report_arguments(parser)
    parser.add_argument("--csv", type=Path, metavar="FILE", help="also write the table as CSV to FILE")
    parser.add_argument("--endpoints", type=Path, metavar="FILE",
                        help="operating-points: a YAML file of screening endpoints (and threshold rules) to add to "
                             "the shipped ones (focus_eval/analysis/endpoints.yaml shows the form)")
    parser.add_argument("--random-guess", choices=("documented",), metavar="documented",
                        help="funbench: also compute the random guess from the datasets' documented per-class test "
                             "counts, beside the paper's Table 3 row (JSON: random_guess.documented)")
    parser.add_argument("--format", choices=("lm-eval",), default="lm-eval",
                        help="export: the file format to write (default lm-eval)")
    parser.add_argument("-o", "--output", type=Path, metavar="DIR", help="export, bundle: the folder to write into")
    parser.add_argument("--submitter", metavar="NAME",
                        help="bundle: who submits the results (a group or clinic), recorded in the bundle")
    # options may sit between NAME and RESULTS (``report export --format lm-eval RESULTS -o DIR``)
    parser.parse_args = parser.parse_intermixed_args


def add_report_arguments(parser: argparse.ArgumentParser, required: bool = False) -> None:
    """RESULTS and the options every analysis takes (``funbench-report`` takes them too)."""
    parser.add_argument("results", nargs="+" if required else "*", metavar="RESULTS", type=Path,
                        help="an --output-path folder (<model>/results.jsonl inside), a model folder, or a "
                             "results.jsonl or compare*.jsonl file, as the leaderboard takes them")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the numbers as JSON to FILE")
    parser.add_argument("--include-limited", action="store_true",
                        help="count the lines of --limit runs (left out by default, as on the leaderboard)")
    from focus_eval.options import DECLARED, add_option

    # the run options' ranges and errors (options.py), and 0: no resampling
    parser.add_argument("--n-boot", type=n_boot, default=DECLARED["n_boot"].default(), metavar="N",
                        help="bootstrap resamples of analyses that resample: as for a run, 1 to "
                             f"{MAX_N_BOOT}, or 0 for none (default %(default)s)")
    add_option(parser, DECLARED["seed"], aliases=False, help="seed of the bootstrap resampling, as for a run "
                                                             "(default %(default)s)")
    parser.add_argument("--prefer", metavar="newest|FOLDER",
                        help="when a results line is found twice: keep the newer one or the one under FOLDER")
    from focus_eval.commands.leaderboard import add_coverage_floor, add_verification_arguments

    add_coverage_floor(parser)
    parser.add_argument("--data-root", type=Path, metavar="DIR",
                        help="the datasets the results were computed on: lines verified (those of a submission "
                             "bundle always, others with --verify) are checked against them rather than against "
                             "the published test-split digests")
    add_verification_arguments(parser)


def read_collection(args: argparse.Namespace):
    """RESULTS as an analysis or export reads them: the lines of submission bundles (of every folder with
    ``--verify``) verified, the unverified ones set aside unless ``--include-unverified``, as the leaderboard
    does; the counts of verdicts printed when there are any."""
    from focus_eval.commands.leaderboard import print_verdicts
    from focus_eval.leaderboard.conventions import collect_results
    from focus_eval.verification.collection import verify_collection

    verified = verify_collection(collect_results(args.results, args.prefer), everything=args.verify,
                                 data_root=args.data_root, include_unverified=args.include_unverified)
    if verified.verdicts:
        print_verdicts(verified.counts(), args.include_unverified)
    return verified.collection


def n_boot(text: str) -> int:
    """``--n-boot`` of a report: the range of the run option (``options.py``), or 0 (no resampling)."""
    from focus_eval.options import DECLARED

    return 0 if text.strip() == "0" else DECLARED["n_boot"].spec.parse(text)


def run(args: argparse.Namespace) -> int:
    from focus_eval.analysis import ANALYSES
    from focus_eval.errors import FocusError

    if args.name is None:
        print(listing())
        return 0
    if args.name not in (EXPORT, BUNDLE):
        ANALYSES.check(args.name)  # a misspelled name is refused before any analysis is imported
    if not args.results:
        raise FocusError(f"focus-eval report {args.name} needs one or more RESULTS folders or files")
    check_paths(args)
    if args.name == EXPORT:
        return export(args)
    if args.name == BUNDLE:
        return bundle(args)
    return report(ANALYSES.get(args.name), args)


def check_paths(args: argparse.Namespace) -> None:
    """RESULTS and --endpoints exist, checked before anything heavy is imported."""
    from focus_eval.errors import FocusError

    for path in args.results:
        if not path.exists():
            raise FocusError(f"RESULTS {path} does not exist: pass an --output-path folder, a model folder, or a "
                             f"results.jsonl or compare*.jsonl file")
    endpoints = getattr(args, "endpoints", None)
    if endpoints is not None and not endpoints.is_file():
        raise FocusError(f"--endpoints {endpoints}: no such file (focus_eval/analysis/endpoints.yaml shows the form)")


def export(args: argparse.Namespace) -> int:
    """Write RESULTS as lm-evaluation-harness result files under ``-o DIR`` (docs/OUTPUTS.md)."""
    from focus_eval.analysis.lm_eval_export import export as write_lm_eval
    from focus_eval.errors import FocusError

    if args.output is None:
        raise FocusError("focus-eval report export needs -o DIR, the folder to write the files into")
    collection = read_collection(args)
    exported = write_lm_eval(collection, args.output, include_limited=args.include_limited)
    written = exported.written
    if not written:
        raise FocusError("focus-eval report export: no results lines to export (--include-limited counts "
                         "the lines of --limit runs)")
    n_results = sum(p.name.startswith("results_") for p in written)
    for note in exported.notes:
        print(f"note: {note}")
    print(f"wrote {n_results} results files and {len(written) - n_results} sample files under {args.output}")
    return 0


def bundle(args: argparse.Namespace) -> int:
    """Write RESULTS as a submission bundle under ``-o DIR`` (docs/SUBMITTING.md)."""
    from focus_eval.errors import FocusError
    from focus_eval.results.bundle import write_bundle
    from focus_eval.results.collect import discover

    if args.output is None or args.submitter is None:
        raise FocusError("focus-eval report bundle needs -o DIR (a new folder) and --submitter NAME")
    written = write_bundle(discover(args.results).results_files, args.output, args.submitter)
    total = sum(f.bytes for f in written.files)
    print(f"wrote a bundle of {len(written.files)} files ({total} bytes) from {written.submitter} to {args.output}")
    print(f"bundle digest (sha256 of bundle.json, to send beside the bundle): {written.digest}")
    print(f"'focus-eval verify {args.output}' checks it as its receiver will")
    return 0


def report(analysis, args: argparse.Namespace) -> int:
    """Read RESULTS, compute ``analysis``, print its table, write ``--json`` and ``--csv``."""
    from focus_eval.analysis.base import ReportOptions
    from focus_eval.tables import width
    from focus_eval.leaderboard.pages.build import with_coverage_floor
    from focus_eval.results.collect import refuse_overwrite

    collection = read_collection(args)
    refuse_overwrite(collection, [("--json", args.json), ("--csv", getattr(args, "csv", None))],
                     also=[getattr(args, "endpoints", None)])
    collection = with_coverage_floor(collection, args.coverage_floor)
    options = ReportOptions(include_limited=args.include_limited, n_boot=args.n_boot, seed=args.seed,
                            endpoints=getattr(args, "endpoints", None),
                            random_guess=getattr(args, "random_guess", None))
    table = analysis.compute(collection, options)
    print(table.to_text(width()))
    for path, text in ((args.json, table.to_json), (getattr(args, "csv", None), table.to_csv)):
        if path:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text(), encoding="utf-8")
            print(f"wrote {path}")
    return 0

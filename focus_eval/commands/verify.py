"""``focus-eval verify RESULTS... [--data-root ROOT] [--json FILE]``: recompute and check every results line of
results folders and submission bundles (docs/SUBMITTING.md); exit 0 only when every line is verified, 1 when
any is not (or a bundle is refused), 2 for bad input. ``focus-eval verify --write-digests --data-root ROOT``
computes the published test-split digests of the tasks whose data is under ROOT and writes them beside the task
files (docs/BENCHMARK_CARD.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

SHOWN = 8  # reasons printed per line that is not verified


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="*", metavar="RESULTS", type=Path,
                        help="an --output-path folder, a model folder, a results.jsonl file, or a submission "
                             "bundle ('focus-eval report bundle')")
    parser.add_argument("--data-root", metavar="ROOT",
                        help="the datasets, to check every sample line against them (else FOCUS_DATA; without "
                             "either, each line's test rows are checked against the task's published digest)")
    parser.add_argument("--include-path", action="append", default=[], type=Path, metavar="DIR",
                        help="a folder of further task files the results were computed with")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write every verdict as JSON to FILE")
    parser.add_argument("--write-digests", action="store_true",
                        help="maintainers: compute the test-split digest of every task whose dataset is under "
                             "--data-root and write it into the task folder's _test_digests.yaml")
    parser.add_argument("--tasks", metavar="PATTERN",
                        help="--write-digests: the tasks to compute (names, groups, patterns; default every task "
                             "whose dataset is under --data-root)")


def run(args: argparse.Namespace) -> int:
    from focus_eval.errors import FocusError

    if args.write_digests:
        if args.results:
            raise FocusError("focus-eval verify --write-digests takes no RESULTS, only --data-root")
        return write_digests(args)
    if not args.results:
        raise FocusError("focus-eval verify needs one or more RESULTS folders, results.jsonl files or bundles")
    return verify(args)


def verify(args: argparse.Namespace) -> int:
    import os

    from focus_eval.errors import FocusError
    from focus_eval.results.bundle import BundleRefused
    from focus_eval.results.verdict import summary
    from focus_eval.verification import verify as verify_paths

    data_root = args.data_root or os.environ.get("FOCUS_DATA") or None
    try:
        verdicts = verify_paths(args.results, data_root=data_root, include_paths=args.include_path)
    except BundleRefused as exc:
        print(f"{exc.folder}: bundle refused ({len(exc.problems)} problem(s)):", file=sys.stderr)
        for problem in exc.problems:
            print(f"  - {problem}", file=sys.stderr)
        return 1
    if not verdicts:
        raise FocusError(f"{', '.join(map(str, args.results))}: no results lines to verify")
    show(verdicts)
    counts = summary(verdicts)
    bundles = bundle_digests(args.results)
    for path, digest in bundles.items():
        print(f"{path}: bundle digest {digest} (the sha256 of its bundle.json: compare it with the one its "
              "submitter sent)")
    if args.json:
        from focus_eval.files import atomic_write_text
        from focus_eval.version import __version__

        record = {"focus_eval_version": __version__, "data_root": data_root, "summary": counts,
                  "bundles": bundles, "lines": [v.to_dict() for v in verdicts]}
        atomic_write_text(args.json, json.dumps(record, indent=1, ensure_ascii=False, default=str) + "\n")
        print(f"wrote {args.json}")
    return 0 if counts["verified"] == len(verdicts) else 1


def bundle_digests(paths) -> dict[str, str]:
    """The digest of each bundle among ``paths`` (checked by now)."""
    from focus_eval.digests import file_sha256
    from focus_eval.results.bundle import BUNDLE_FILE, is_bundle

    return {str(p): file_sha256(p / BUNDLE_FILE) for p in paths if is_bundle(p)}


def show(verdicts) -> None:
    """A table of every line, then the reasons of each line that is not verified, then the counts."""
    from focus_eval.results.verdict import summary
    from focus_eval.tables import print_table, print_text

    submitters = any(v.submitter for v in verdicts)
    header = (*(("submitter",) if submitters else ()), "model", "task", "method", "state", "reason")
    rows = [[*((v.submitter or "-",) if submitters else ()), v.model or "-", v.task or "-", v.method or "-", v.state,
             _first_reason(v)] for v in verdicts]
    print_table(header, rows)
    for v in verdicts:
        if v.state != "verified":
            print_text(f"{v.source}, line {v.row}: {v.task or '?'} ({v.model or '?'}, {v.method or '?'}): {v.state}")
            for reason in v.reasons[:SHOWN]:
                print_text(f"  - {reason}")
            if len(v.reasons) > SHOWN:
                print_text(f"  ... and {len(v.reasons) - SHOWN} more (--json FILE lists every one)")
    counts = summary(verdicts)
    print_text(f"{len(verdicts)} line(s): " + ", ".join(f"{n} {state}" for state, n in counts.items()))


def _first_reason(verdict) -> str:
    reasons = verdict.reasons
    if not reasons:
        return ""
    return reasons[0] + (f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else "")


def write_digests(args: argparse.Namespace) -> int:
    from focus_eval.data.registry import data_root
    from focus_eval.errors import FocusError
    from focus_eval.tables import print_table, print_text
    from focus_eval.task.index import TaskIndex
    from focus_eval.task.test_digests import write_digests as write

    root = data_root(args.data_root)
    index = TaskIndex(args.include_path)
    tasks = index.tasks(index.expand(args.tasks, include_proxy=True) if args.tasks else None)
    written, left_out = write(index, tasks, root)
    if not written:
        raise FocusError(f"{root}: none of the {len(tasks)} task(s) has its dataset here; nothing written")
    print_table(("task", "test images", "sha256", "file"),
                [[d.task, d.n_test, d.sha256[:16] + "...", str(d.file)] for d in written], align="lrll")
    print_text(f"{len(written)} digest(s) written")
    for why in sorted(set(left_out.values())):
        print_text(f"{sum(r == why for r in left_out.values())} task(s) left as they were: {why}")
    return 0

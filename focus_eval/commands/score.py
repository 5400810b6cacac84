"""``focus-eval score DIR [DIR...]``: rebuild each <output>/<model>/results.jsonl from its sample files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dirs", nargs="+", metavar="DIR",
                        help="model output folder(s), <output>/<model>, each holding samples/")
    parser.add_argument("--skip-bad", action="store_true",
                        help="leave out unreadable sample lines (counted in each results line's extra.n_bad_lines) "
                             "instead of stopping at the first")


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def run(args: argparse.Namespace) -> int:
    from focus_eval.results.layout import OutputLayout
    from focus_eval.scoring import rescore_dir
    from focus_eval.tables import print_table

    skipped_any = False
    for folder in map(Path, args.dirs):
        report = rescore_dir(folder, skip_bad=args.skip_bad)
        for path, line, problem in report.bad_lines:
            print(f"  left out {path}, line {line}: {problem}", file=sys.stderr)
        print(f"{OutputLayout(folder).results}: {len(report.results)} results line(s)")
        if report.results:
            print_table(("task", "method", "n", "n_pos", "auroc", "ece", ""),
                        [[r.task, r.method, r.n, r.n_pos, _fmt(r.metrics["auroc"]), _fmt(r.metrics["ece"]),
                          " ".join(f for f, on in (("proxy", r.proxy), ("underpowered", r.underpowered)) if on)]
                         for r in report.results], align="llrrrrl")
        for unit, reason in report.skipped:
            skipped_any = True
            print(f"  skipped {unit}: {reason}")
    return 1 if skipped_any else 0

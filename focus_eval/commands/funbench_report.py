"""``focus-eval funbench-report RESULTS...``: the older name of ``focus-eval report funbench`` (FunBench module
attribution), kept as an alias: the same options and output, and a pointer to the new name on stderr."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from focus_eval.commands.report import add_report_arguments

    add_report_arguments(parser, required=True)


def run(args: argparse.Namespace) -> int:
    from focus_eval.analysis import ANALYSES
    from focus_eval.commands.report import report

    print("focus-eval funbench-report is now 'focus-eval report funbench' (same options and output)",
          file=sys.stderr)
    return report(ANALYSES.get("funbench"), args)

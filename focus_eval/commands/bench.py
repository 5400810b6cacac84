"""``focus-eval bench``: reference-style loops against focus-eval's own paths (see focus_eval.bench)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from focus_eval.bench import add_arguments as bench_arguments

    bench_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from focus_eval.bench import run as bench_run

    return bench_run(args)

"""``focus-eval synth``: write the synthetic datasets (synth_desktop, synth_mobile) or miniature copies of the
ten real datasets' raw layouts, ready to use as a --data-root."""

from __future__ import annotations

import argparse
from pathlib import Path

from focus_eval import validators

LAYOUTS = ("synthetic", "real")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, required=True, help="folder to write into (one sub-folder per dataset)")
    parser.add_argument("--n", type=int, default=200, help="images per synthetic dataset (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    parser.add_argument("--layout", choices=LAYOUTS, default="synthetic",
                        help="'synthetic': synth_desktop and synth_mobile; 'real': a miniature raw copy of each "
                             "real dataset, laid out as its download (default: %(default)s)")
    parser.add_argument("--workers", type=validators.positive, default=1,
                        help="rendering processes (default: %(default)s)")


def run(args: argparse.Namespace) -> int:
    if args.layout == "real":
        from focus_eval.synth.layouts import write_all_layouts

        folders = write_all_layouts(args.out, seed=args.seed)
    else:
        from focus_eval.synth.datasets import write_synthetic

        folders = write_synthetic(args.out, n=args.n, seed=args.seed, workers=args.workers)
    from focus_eval.tables import print_table

    print_table(("dataset", "folder"), list(folders.items()))
    print(f"use it with --data-root {Path(args.out).resolve()}")
    return 0

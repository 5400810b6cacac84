"""``focus-eval compare --base DIR --ft DIR...``: paired fine-tuned minus base deltas with patient-bootstrap
intervals, p and q values, and in-domain / out-of-domain summaries, written as JSONL."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from focus_eval import validators


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--base", type=Path, required=True, help="the base model's folder, <output>/<model>")
    p.add_argument("--ft", type=Path, nargs="+", required=True,
                   help="adapter evaluation folders, <output>/<model>@<adapter> (one or more)")
    p.add_argument("-o", "--output", type=Path, default=None, help="JSONL file (default: <base>/compare.jsonl)")
    p.add_argument("--metrics", default="auroc,auprc,accuracy,f1,ece", help="comma-separated metric names")
    p.add_argument("--n-boot", type=validators.n_boot, default=1000, help="bootstrap replicates")
    p.add_argument("--seed", type=validators.seed, default=0)
    p.add_argument("--include-all", action="store_true",
                   help="let proxy and underpowered comparisons into the in-domain/OOD summaries")


def run(args: argparse.Namespace) -> int:
    from focus_eval.finetune.compare import compare, print_report
    from focus_eval.results.schema import write_jsonl

    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    report = compare(args.base, args.ft, metrics=metrics, n_boot=args.n_boot, seed=args.seed,
                     include_all=args.include_all)
    output = args.output or Path(args.base) / "compare.jsonl"
    write_jsonl(Path(output), report.lines)
    print_report(report)
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"comparisons: {output}")
    return 0

"""``focus-eval --model M --tasks T``: evaluate one model on a set of tasks."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from focus_eval.errors import FocusError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="preset name ('focus-eval models' lists them)")
    p.add_argument("--tasks", required=True,
                   help="comma-separated task names, groups, tags or patterns, e.g. 'glaucoma_*' or dr,refuge")
    p.add_argument("--model-args", default="", help="preset overrides k=v,... (e.g. weights=PATH, source=DIR)")
    p.add_argument("--data-root", type=Path, default=os.environ.get("FOCUS_DATA"),
                   help="folder with one sub-folder per dataset (default: $FOCUS_DATA)")
    p.add_argument("--output-path", type=Path, default=Path(os.environ.get("FOCUS_OUTPUT", "results")),
                   help="results folder (default: $FOCUS_OUTPUT, else results/)")
    p.add_argument("--include-path", action="append", default=[], help="extra folder of task YAML files")
    p.add_argument("--include-proxy", action="store_true", help="let groups and patterns include proxy tasks")
    p.add_argument("--methods", default=None, help="subset of the preset's methods, comma-separated")
    p.add_argument("--batch-size", default="auto", type=batch_size,
                   help="images per batch, or 'auto' (a large batch, halved when the GPU runs out of memory)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--num-workers", type=int, default=None, help="image decoding worker processes")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=int, default=None, help="evaluate at most N test images per task")
    p.add_argument("--resume", dest="resume", action="store_true", default=True,
                   help="skip finished (task, method) units and continue half-finished ones (default)")
    p.add_argument("--no-resume", dest="resume", action="store_false", help="evaluate everything again")
    p.add_argument("--probe-compat", action="store_true",
                   help="reference linear probe: L2-normalised features, C = 1, no validation search")
    p.add_argument("--zs-scale", type=float, default=None,
                   help="fixed zero-shot logit scale (100 reproduces the reference); default: the model's own")
    p.add_argument("--adapter", default=None, help="folder of a peft LoRA adapter to load on the base model")
    p.add_argument("--trust-remote-code", action="store_true", help="allow presets that declare remote code")
    p.add_argument("--split-file", action="append", default=[], metavar="DATASET=CSV",
                   help="external split file (image_id, split) for one dataset; repeatable")
    p.add_argument("--cache-dir", type=Path, default=None, help="embedding cache (default: ~/.cache/focus-eval)")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples for confidence intervals")
    p.add_argument("--no-prepared", dest="use_prepared", action="store_false",
                   help="read raw image files even where a prepared cache exists")
    p.add_argument("--no-progress", dest="progress", action="store_false")


def batch_size(text: str) -> int | str:
    if text == "auto":
        return text
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise argparse.ArgumentTypeError(f"expected a positive number or 'auto', got {text!r}")


def _split_files(values: list[str]) -> dict[str, str]:
    out = {}
    for v in values:
        if "=" not in v:
            raise FocusError(f"--split-file expects DATASET=CSV, got {v!r}")
        name, path = v.split("=", 1)
        out[name.strip()] = path.strip()
    return out


def run(args: argparse.Namespace) -> int:
    from focus_eval import api

    options = api.run_options(
        args.model, args.tasks, model_args=args.model_args,
        include_path=args.include_path, include_proxy=args.include_proxy,
        data_root=args.data_root or None, output_path=args.output_path,
        batch_size=args.batch_size, device=args.device, seed=args.seed, limit=args.limit, resume=args.resume,
        num_workers=args.num_workers, probe_compat=args.probe_compat, zs_scale=args.zs_scale,
        adapter=args.adapter, trust_remote_code=args.trust_remote_code, cache_dir=args.cache_dir,
        split_files=_split_files(args.split_file),
        methods=[m.strip() for m in args.methods.split(",")] if args.methods else None,
        n_boot=args.n_boot, use_prepared=args.use_prepared, progress=args.progress,
        argv=["focus-eval", *sys.argv[1:]])
    report, state = api.run(options)
    if not state.is_main_process:
        return 0
    print_summary(report)
    return 1 if report.failed else 0


def print_summary(report) -> None:
    rows = report.results
    if rows:
        print(f"{'task':<28} {'method':<13} {'n':>6} {'n_pos':>6} {'auroc':>7} {'auprc':>7} {'acc':>7} {'ece':>7}")
        for r in sorted(rows, key=lambda r: (r["task"], r["method"])):
            m = r["metrics"]

            def f(k):
                return f"{m[k]:.3f}" if m.get(k) is not None else "-"

            flags = " proxy" if r.get("proxy") else ""
            flags += " underpowered" if r.get("underpowered") else ""
            print(f"{r['task']:<28} {r['method']:<13} {r['n']:>6} {r['n_pos']:>6} {f('auroc'):>7} {f('auprc'):>7} "
                  f"{f('accuracy'):>7} {f('ece'):>7}{flags}")
    print(f"results: {report.model_dir / 'results.jsonl'}  (finished {len(report.finished)}, "
          f"already done {len(report.skipped)}, failed {len(report.failed)})")
    for stem, reason in report.failed.items():
        print(f"failed: {stem}: {reason}", file=sys.stderr)

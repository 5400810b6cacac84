"""``focus-eval demo``: the main job end to end, offline on a CPU: synthetic datasets, one real encoder and an
untrained model of each family on the synthetic tasks, results, and the leaderboard."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path

from focus_eval import validators

DEMO_MODELS = ("efficientnet-lite0", "tiny-vit", "tiny-clip", "tiny-medgemma", "tiny-qwen-vl", "tiny-llava-next")
DEMO_TASKS = "*_synth_desktop,*_synth_mobile"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=Path("demo-out"), help="folder for data, results and site")
    p.add_argument("--n", type=int, default=300, help="synthetic images per dataset (about 60 test images each)")
    p.add_argument("--seed", type=validators.seed, default=0)
    p.add_argument("--models", default=",".join(DEMO_MODELS), help="comma-separated presets to evaluate")
    p.add_argument("--n-boot", type=validators.n_boot, default=1000, help="bootstrap resamples per confidence interval")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bars (on a terminal) or per-stage log lines (elsewhere)")


def run(args: argparse.Namespace) -> int:
    from focus_eval.progress import log

    start = time.perf_counter()
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    out = args.out.resolve()
    # the first line comes before torch and the models are imported, which takes a while on a cold machine
    log(f"demo: {len(models)} model(s) on the synthetic tasks, writing to {out}")
    from focus_eval.leaderboard import build_site
    from focus_eval.runner.run import RunOptions, Runner
    from focus_eval.synth.datasets import write_synthetic

    data, results, site = out / "data", out / "results", out / "site"
    if not (data / "synth_desktop").is_dir() or not (data / "synth_mobile").is_dir():
        log(f"demo: writing {args.n} synthetic images per dataset to {data}")
        t0 = time.perf_counter()
        write_synthetic(data, n=args.n, seed=args.seed)
        log(f"demo: synthetic datasets written ({time.perf_counter() - t0:.1f} s)")
    failed = 0
    for model in models:
        t0 = time.perf_counter()
        options = RunOptions(model=model, tasks=DEMO_TASKS, data_root=data, output_path=results, seed=args.seed,
                             n_boot=args.n_boot, cache_dir=out / "cache", progress=not args.no_progress,
                             argv=["focus-eval", "demo", "--model", model])
        report = Runner(options).run()
        failed += len(report.failed)
        aurocs = [r["metrics"]["auroc"] for r in report.results if r["metrics"].get("auroc") is not None]
        best = f"best AUROC {max(aurocs):.3f}" if aurocs else "no AUROC"
        print(f"[demo] {model:<20} {len(report.results):>2} results, {best}  ({time.perf_counter() - t0:.1f} s)",
              flush=True)
        for stem, reason in report.failed.items():
            print(f"[demo]   failed {stem}: {reason}", flush=True)
    t0 = time.perf_counter()
    index = build_site([results], site, thumbnails=True, data_root=data)
    log(f"demo: leaderboard built with thumbnails of the test images ({time.perf_counter() - t0:.1f} s)")
    print(f"[demo] leaderboard: {index.as_uri() if hasattr(index, 'as_uri') else index}")
    print(f"[demo] done in {time.perf_counter() - start:.1f} s")
    print(next_steps(out), flush=True)
    return 1 if failed else 0


def next_commands(out: Path, cwd: Path | None = None) -> list[str]:
    """The three commands to try after the demo, as the README's quick start lists them for ``--out demo-out``:
    a report on the demo's results, a run of the real encoder on the demo's data, and the headline command on
    real data. Paths are shown relative to ``cwd`` (default: the current folder) when they lie under it."""
    shown = _shown(out, cwd or Path.cwd())
    return [f"focus-eval report ranks {shlex.quote(f'{shown}/results')}"
            "    # the demo's models ranked, with rank intervals",
            f"focus-eval --model efficientnet-lite0 --tasks glaucoma_synth_mobile --data-root "
            f"{shlex.quote(f'{shown}/data')} --output-path my-results",
            "focus-eval --model medgemma-27b --tasks 'glaucoma_*' --data-root DIR --device cuda --check"]


def next_steps(out: Path) -> str:
    """What the demo ends with: how to call focus-eval from here (activate the environment it runs in, or call
    its script by path), and the next three commands."""
    lines = ["[demo] next: try these three commands (the last one on real data: the datasets under DIR, README "
             "'Datasets'; drop --check to run it on a GPU)"]
    activate = _activation()
    if activate:
        lines.append(f"    {activate}")
    lines += [f"    {c}" for c in next_commands(out)]
    return "\n".join(lines)


def _activation() -> str | None:
    """The line that puts this environment's ``focus-eval`` on PATH, None when it is there already (an activated
    virtual environment, or no virtual environment at all)."""
    if sys.prefix == sys.base_prefix or os.environ.get("VIRTUAL_ENV") == sys.prefix:
        return None
    venv = _shown(Path(sys.prefix), Path.cwd())
    return (f". {shlex.quote(f'{venv}/bin/activate')}    # or type {shlex.quote(f'{venv}/bin/focus-eval')} "
            f"for focus-eval")


def _shown(path: Path, cwd: Path) -> str:
    path = path.absolute()
    try:
        return str(path.relative_to(cwd.absolute()))
    except ValueError:
        return str(path)

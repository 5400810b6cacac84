"""Run benchmark workloads and report them: a table on the console, optionally a JSON file with the device,
library versions and date; plus the command-line options shared by ``python -m focus_eval.bench`` and
``focus-eval bench``."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from focus_eval.bench.measure import Env, compare, environment, row
from focus_eval.bench.workloads import WORKLOADS, Workload
from focus_eval.progress import log
from focus_eval.tables import print_table

DESCRIPTION = ("Throughput benchmark: reference-style loops against focus-eval's own paths, on the same inputs, "
               "in one process.")


def run_bench(workloads: list[str], tiny: bool = False, device: str | None = None, workers: int | None = None,
              json_path: str | None = None, out=sys.stdout, repeat: int = 1) -> dict[str, Any]:
    """Run the named workloads, print one line each (plus details), and return (and optionally write) the
    figures with the device name and date."""
    import torch

    from focus_eval.errors import FocusError

    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown:
        raise FocusError(f"unknown workloads {unknown}; choose from {list(WORKLOADS)}")
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    threads = torch.get_num_threads()
    if tiny:
        # Tiny matrices gain nothing from threads, and spinning threads stall badly on a busy machine.
        torch.set_num_threads(1)
    try:
        return _run([WORKLOADS[name] for name in workloads], environment(device, tiny, workers, repeat), json_path,
                    out)
    finally:
        torch.set_num_threads(threads)


def measure_workload(workload: Workload, env: Env, folder: Path) -> tuple[dict[str, Any], list[str]]:
    """One workload's result (both loops, the setup's facts, every extra, the description) and the lines
    printed under its table row."""
    sizes = workload.sizes(env.tiny)
    prepared = workload.setup(workload.options, sizes, env, folder)
    reference = workload.reference(prepared, sizes, env)
    ours = workload.ours(prepared, sizes, env)
    result = {**compare(reference, ours), **prepared.info}
    for extra in workload.extras:
        result.update(extra.measure(prepared, sizes, env, reference))
    result["description"] = workload.description
    return result, [line for extra in workload.extras for line in extra.lines(result)]


def _run(workloads: list[Workload], env: Env, json_path: str | None, out) -> dict[str, Any]:
    import torch
    import transformers

    report: dict[str, Any] = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "device": env.label,
        "torch": torch.__version__, "transformers": transformers.__version__, "tiny": env.tiny,
        "workers": env.workers, "repeat": env.clock.repeat, "workloads": {}}
    print(f"focus-eval bench on {env.label}{' (tiny models)' if env.tiny else ''}, {report['date']}", file=out)
    rows = []
    with tempfile.TemporaryDirectory(prefix="focus-bench-") as tmp:
        for workload in workloads:
            result, lines = measure_workload(workload, env, Path(tmp))
            report["workloads"][workload.name] = result
            log(f"bench {workload.name} {result['ours_img_s']:.2f} img/s against {result['reference_img_s']:.2f} "
                f"(ratio {result['ratio']:.2f}x)")
            rows.append(row(result["reference_img_s"], result["ours_img_s"], result["ratio"], workload.description,
                            name=workload.name))
            # an extra's line is a row (measure.row) or a note, shown in the row's 'what' column
            rows += [line if isinstance(line, list) else row(what=str(line)) for line in lines]
            if env.device.type == "cuda":
                torch.cuda.empty_cache()
    print_table(("workload", "reference img/s", "focus-eval img/s", "ratio", "what"), rows, align="lrrrl", file=out)
    if json_path:
        from focus_eval.files import atomic_write_text

        atomic_write_text(json_path, json.dumps(report, indent=2))
        print(f"wrote {json_path}", file=out)
    return report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tiny", action="store_true", help="tiny models: runs on a CPU in seconds")
    parser.add_argument("--json", metavar="FILE", help="write the figures (with device and date) to FILE")
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS),
                        metavar="NAME", help=f"which workloads to run (default: all of {', '.join(WORKLOADS)})")
    parser.add_argument("--device", help="torch device (default: cuda when available, else cpu)")
    parser.add_argument("--workers", type=int, help="DataLoader worker processes for focus-eval's loops "
                                                    "(default: 2 with --tiny, else up to 16)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="run every loop N times and keep the run of median time (for busy machines)")


def run(args: argparse.Namespace) -> int:
    run_bench(args.workloads, tiny=args.tiny, device=args.device, workers=args.workers, json_path=args.json,
              repeat=args.repeat)
    return 0


def main(argv: list[str] | None = None) -> int:
    from focus_eval.errors import FocusError

    parser = argparse.ArgumentParser(prog="python -m focus_eval.bench", description=DESCRIPTION)
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except FocusError as exc:
        print(f"focus-eval: error: {exc}", file=sys.stderr)
        return 2

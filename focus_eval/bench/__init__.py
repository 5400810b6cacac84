"""Throughput benchmark: reference-style loops against focus-eval's own paths, on the same inputs, in one process.

Models are random-weight instances of the real architectures built from configuration values written in the
workload modules (cost does not depend on weight values); nothing is downloaded. ``--tiny`` shrinks every model
so the whole benchmark runs on a CPU in seconds; its ratios show that both loops run, not how fast a GPU is.

    python -m focus_eval.bench [--tiny] [--json FILE] [--workloads vit224 vit2048 medgemma4b medgemma27b]

``workloads`` holds the table of workloads, ``encoder`` and ``mllm`` the workload families, ``measure`` the
clock, image counts and result layout, ``runner`` the driver, the printed report and the command-line options.
"""

from focus_eval.bench.measure import Sizes
from focus_eval.bench.runner import add_arguments, main, run, run_bench
from focus_eval.bench.workloads import WORKLOADS, Extra, Workload

__all__ = ["WORKLOADS", "Extra", "Sizes", "Workload", "add_arguments", "main", "run", "run_bench"]

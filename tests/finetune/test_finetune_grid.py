"""scripts/finetune_grid.sh --dry-run: the paper's fine-tuning grid through `focus-eval grid`: every adapter, its
evaluation on every task of its target, the base models' evaluations, and the collect step, every command
accepted by the real command-line parser."""

import shlex
import subprocess
from collections import defaultdict
from pathlib import Path

from focus_eval.cli import build_parser
from focus_eval.presets import load_preset
from focus_eval.task import TaskIndex

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "finetune_grid.sh"
MODELS = {"gemma3-27b", "medgemma-4b", "medgemma1.5-4b", "medgemma-27b", "qwen3-vl-8b", "llava-next-8b"}
CELLS = {("brset", "dr"), ("brset", "referable_dr"), ("brset", "glaucoma"), ("mbrset", "dr"),
         ("mbrset", "referable_dr")}


def dry_run(*args):
    done = subprocess.run(["bash", str(SCRIPT), "--dry-run", "--data-root", "/data", *args], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [shlex.split(line) for line in done.stdout.splitlines() if line.startswith("focus-eval ")]


def parse(argv):
    """(command, parsed args) of a printed command line, through focus-eval's own parser."""
    assert argv[0] == "focus-eval"
    command = argv[1] if argv[1] in ("sft", "grid") else "run"
    rest = argv[2:] if command != "run" else argv[1:]
    return command, build_parser(command).parse_args(rest)


def test_dry_run_prints_the_whole_grid():
    index = TaskIndex()
    commands = [parse(argv) for argv in dry_run()]
    sft = [args for command, args in commands if command == "sft"]
    assert {(a.model, a.dataset, a.target) for a in sft} == {(m, d, t) for m in MODELS for d, t in CELLS}
    assert len(sft) == 30
    runs = [args for command, args in commands if command == "run"]
    base_tasks = defaultdict(set)
    for a in runs:
        if a.adapter is None:
            base_tasks[a.model] |= set(a.tasks.split(","))
    assert base_tasks == {m: set(index.expand("dr,referable_dr,glaucoma")) for m in MODELS}
    adapter_tasks = defaultdict(set)
    for a in runs:
        if a.adapter:
            adapter_tasks[(a.model, a.adapter)] |= set(a.tasks.split(","))
            assert str(a.data_root) == "/data"
    for a in sft:  # every adapter is evaluated on every task of its target
        assert adapter_tasks[(a.model, str(a.output))] == set(index.expand(a.target))
    (collect,) = [args for command, args in commands if command == "grid"]
    assert collect.action == "collect"
    for model in MODELS:
        preset = load_preset(model)
        assert preset.family == "mllm" and "finetune" in preset.settings


def test_dry_run_order_and_options():
    lines = dry_run("--models", "medgemma-4b", "--adapters", "/ad", "--results", "/res", "--site", "/site")
    commands = [parse(line) for line in lines]
    kinds = [("sft" if c == "sft" else c if c == "grid" else "adapter" if a.adapter else "base")
             for c, a in commands]
    assert kinds == ["sft"] * 5 + ["base"] * 10 + ["adapter"] * 28 + ["grid"]
    assert str(commands[0][1].output) == "/ad/medgemma-4b/sft-dr_brset"
    assert {str(a.output_path) for c, a in commands if c == "run"} == {"/res"}
    assert str(commands[-1][1].output) == "/site"

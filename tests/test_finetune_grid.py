"""scripts/finetune_grid.sh --dry-run: the paper's grid of adapters, their evaluations and comparisons, every
command accepted by the real command-line parser."""

import shlex
import subprocess
from pathlib import Path

from focus_eval.cli import build_parser
from focus_eval.presets import load_preset

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "finetune_grid.sh"
MODELS = {"gemma3-27b", "medgemma-4b", "medgemma1.5-4b", "medgemma-27b", "qwen3-vl-8b", "llava-next-8b"}
CELLS = {("brset", "dr"), ("brset", "referable_dr"), ("brset", "glaucoma"), ("mbrset", "dr"),
         ("mbrset", "referable_dr")}


def dry_run(*args):
    done = subprocess.run(["bash", str(SCRIPT), "--dry-run", "--data-root", "/data", *args], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [shlex.split(line) for line in done.stdout.splitlines() if line.strip()]


def parse(argv):
    """(command, parsed args) of a printed command line, through focus-eval's own parser."""
    if argv[:3] == ["accelerate", "launch", "-m"]:
        assert argv[3] == "focus_eval"
        argv = argv[4:]
    else:
        assert argv[0] == "focus-eval"
        argv = argv[1:]
    command = argv[0] if argv[0] in ("sft", "compare") else "run"
    rest = argv[1:] if command != "run" else argv
    return command, build_parser(command).parse_args(rest)


def test_dry_run_prints_the_whole_grid():
    commands = [parse(argv) for argv in dry_run()]
    sft = [args for command, args in commands if command == "sft"]
    assert {(a.model, a.dataset, a.target) for a in sft} == {(m, d, t) for m in MODELS for d, t in CELLS}
    assert len(sft) == 30
    runs = [args for command, args in commands if command == "run"]
    base = [a for a in runs if a.adapter is None]
    assert sorted(a.model for a in base) == sorted(MODELS)
    assert all(a.tasks == "dr,referable_dr,glaucoma" for a in base)
    adapters = {a.adapter: a for a in runs if a.adapter}
    for a in sft:
        evaluation = adapters[str(a.output)]  # every adapter is evaluated on every task of its target
        assert (evaluation.model, evaluation.tasks, str(evaluation.data_root)) == (a.model, a.target, "/data")
    compares = [args for command, args in commands if command == "compare"]
    assert len(compares) == 6
    for c in compares:
        model = c.base.name
        assert {p.name for p in c.ft} == {f"{model}@sft-{t}_{d}" for d, t in CELLS}
        assert c.output == c.base / "compare.jsonl"
    for model in MODELS:
        preset = load_preset(model)
        assert preset.family == "mllm" and "finetune" in preset.settings


def test_dry_run_order_and_options():
    lines = dry_run("--models", "medgemma-4b", "--adapters", "/ad", "--results", "/res",
                    "--launcher", "torchrun --nproc_per_node 4")
    assert len(lines) == 12
    assert lines[0][:3] == ["torchrun", "--nproc_per_node", "4"]
    order = [("sft" if "sft" in line else "compare" if "compare" in line else "run") for line in lines]
    assert order[0] == "run" and order[-1] == "compare" and order.count("sft") == 5
    sft_line = lines[1]
    assert sft_line[sft_line.index("--output") + 1] == "/ad/medgemma-4b/sft-dr_brset"
    assert lines[-1][lines[-1].index("--base") + 1] == "/res/medgemma-4b"

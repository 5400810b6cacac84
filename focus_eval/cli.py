"""The ``focus-eval`` command line: ``focus-eval --model M --tasks T`` runs an evaluation; subcommands do the rest.

Every subcommand lives in its own module under ``focus_eval.commands`` with ``add_arguments(parser)`` and
``run(args) -> int``; modules are imported only when their command runs, so ``--help`` stays instant.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("focus_eval.commands.run", "evaluate a model on tasks (the default command)"),
    "datasets": ("focus_eval.commands.datasets", "check, export or prepare the datasets under --data-root"),
    "synth": ("focus_eval.commands.synth", "write the synthetic datasets or miniature raw layouts"),
    "tasks": ("focus_eval.commands.tasks", "list tasks matching a pattern"),
    "models": ("focus_eval.commands.models", "list model presets"),
    "score": ("focus_eval.commands.score", "recompute results lines from sample files"),
    "leaderboard": ("focus_eval.commands.leaderboard", "build the static leaderboard site"),
    "report": ("focus_eval.commands.report", "the analyses of results folders (FunBench attribution, fine-tuning "
               "summary, ...)"),
    "funbench-report": ("focus_eval.commands.funbench_report", "FunBench module attribution (now 'report funbench')"),
    "sft": ("focus_eval.commands.sft", "train a LoRA adapter for a multimodal LLM"),
    "compare": ("focus_eval.commands.compare", "paired fine-tuned vs base deltas with bootstrap CIs"),
    "demo": ("focus_eval.commands.demo", "run the offline demo end to end"),
    "bench": ("focus_eval.commands.bench", "throughput benchmark: reference-style loops vs focus-eval"),
    "grid": ("focus_eval.commands.grid", "plan, run (here or on Slurm), check and collect the whole grid"),
    "serve": ("focus_eval.commands.serve", "serve a multimodal LLM over an OpenAI-compatible HTTP API"),
}


def _top_help() -> str:
    lines = ["usage: focus-eval --model MODEL --tasks TASKS [options]", "       focus-eval --config RUN.yaml [options]",
             "       focus-eval COMMAND [options]", "",
             "Evaluate retinal colour-fundus models on the FOCUS tasks.", "", "commands:"]
    width = max(map(len, COMMANDS))
    for name, (_, text) in COMMANDS.items():
        lines.append(f"  {name:<{width}}  {text}")
    lines += ["", "Run 'focus-eval run --help' for the evaluation options, 'focus-eval COMMAND --help' for a command."]
    return "\n".join(lines)


def build_parser(command: str) -> argparse.ArgumentParser:
    module_name, text = COMMANDS[command]
    module = importlib.import_module(module_name)
    prog = "focus-eval" if command == "run" else f"focus-eval {command}"
    parser = argparse.ArgumentParser(prog=prog, description=text)
    module.add_arguments(parser)
    parser.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in {"-h", "--help"}:
        print(_top_help())
        return 0
    if argv[0] in {"-V", "--version"}:
        from focus_eval.version import __version__
        print(f"focus-eval {__version__}")
        return 0
    command = argv[0] if argv[0] in COMMANDS else "run"
    rest = argv[1:] if argv[0] in COMMANDS else argv
    parser = build_parser(command)
    args = parser.parse_args(rest)
    args._argv = rest  # what was given explicitly (``focus-eval run --config`` lets it win over the file)
    from focus_eval.errors import FocusError
    try:
        return int(args._run(args) or 0)
    except FocusError as exc:
        print(f"focus-eval: error: {exc}", file=sys.stderr)
        if os.environ.get("FOCUS_EVAL_DEBUG"):
            raise
        return 2
    except BrokenPipeError:
        # the reader of our output went away (e.g. `| head`): stop quietly, as Unix tools do
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("focus-eval: interrupted; run the same command again to resume", file=sys.stderr)
        return 130

"""The ``focus-eval`` command line: ``focus-eval --model M --tasks T`` runs an evaluation; subcommands do the rest.

Every subcommand lives in its own module under ``focus_eval.commands`` with ``add_arguments(parser)`` and
``run(args) -> int``; modules are imported only when their command runs, so ``--help`` stays instant.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import threading

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("focus_eval.commands.run", "evaluate a model on tasks (the default command)"),
    "datasets": ("focus_eval.commands.datasets", "check, export or prepare the datasets under --data-root"),
    "synth": ("focus_eval.commands.synth", "write the synthetic datasets or miniature raw layouts"),
    "tasks": ("focus_eval.commands.tasks", "list tasks matching a pattern"),
    "models": ("focus_eval.commands.models", "list model presets"),
    "score": ("focus_eval.commands.score", "recompute results lines from sample files"),
    "verify": ("focus_eval.commands.verify", "check results and submission bundles: every line recomputed from "
               "its samples, its task, version and data"),
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
    lines += ["", "Run 'focus-eval run --help' for the evaluation options, 'focus-eval COMMAND --help' for a command.",
              "--debug (anywhere, or FOCUS_EVAL_DEBUG=1): show the traceback of an error. Exit status: 0 done, "
              "1 a file system error or a failed check, 2 a usage or input error, 130/143 interrupted."]
    return "\n".join(lines)


def build_parser(command: str) -> argparse.ArgumentParser:
    module_name, text = COMMANDS[command]
    module = importlib.import_module(module_name)
    prog = "focus-eval" if command == "run" else f"focus-eval {command}"
    parser = argparse.ArgumentParser(prog=prog, description=text)
    module.add_arguments(parser)
    parser.set_defaults(_run=module.run)
    return parser


def split_debug(argv: list[str]) -> tuple[list[str], bool]:
    """``argv`` without the global ``--debug`` flag (anywhere before a ``--``), and whether it was given or
    FOCUS_EVAL_DEBUG is set: then errors show their traceback."""
    end = argv.index("--") if "--" in argv else len(argv)
    kept = [a for a in argv[:end] if a != "--debug"] + argv[end:]
    return kept, len(kept) != len(argv) or bool(os.environ.get("FOCUS_EVAL_DEBUG"))


def main(argv: list[str] | None = None) -> int:
    argv, debug = split_debug(list(sys.argv[1:] if argv is None else argv))
    if not argv or argv[0] in {"-h", "--help"}:
        print(_top_help())
        return 0
    if argv[0] in {"-V", "--version"}:
        from focus_eval.version import __version__
        print(f"focus-eval {__version__}")
        return 0
    if argv[0] not in COMMANDS and not argv[0].startswith("-"):
        # the run command takes options only: a first word that is no command is a misspelled one
        from focus_eval.registry import suggest

        hint = suggest(argv[0], COMMANDS, listing="'focus-eval --help' lists the commands")
        print(f"focus-eval: error: unknown command {argv[0]!r}{hint}", file=sys.stderr)
        return 2
    command = argv[0] if argv[0] in COMMANDS else "run"
    rest = argv[1:] if argv[0] in COMMANDS else argv
    parser = build_parser(command)
    args = parser.parse_args(rest)
    args._argv = rest  # what was given explicitly (``focus-eval run --config`` lets it win over the file)
    with terminate_raises():
        return _run(args, debug)


@contextlib.contextmanager
def terminate_raises():
    """While a command runs, SIGTERM raises ``Terminated`` in the main thread (as SIGINT raises
    KeyboardInterrupt), so that the command unwinds instead of dying mid-write."""
    from focus_eval.errors import Terminated

    def terminate(signum, frame):
        raise Terminated(signum)

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run(args: argparse.Namespace, debug: bool) -> int:
    """The command, inside the one error boundary: exit 2 for a usage or input error (FocusError), 1 for a file
    system error, 130 / 143 when interrupted by SIGINT / SIGTERM."""
    from focus_eval.errors import FocusError, Terminated, os_error_line
    from focus_eval.redact import redact
    try:
        return int(args._run(args) or 0)
    except FocusError as exc:
        print(f"focus-eval: error: {redact(str(exc))}", file=sys.stderr)
        if debug:
            raise
        return 2
    except BrokenPipeError:
        # the reader of our output went away (e.g. `| head`): stop quietly, as Unix tools do
        sys.stderr.close()
        return 0
    except OSError as exc:
        # the one boundary for file system errors (read-only, full, not a folder, permission, ...): one line
        print(f"focus-eval: error: {redact(os_error_line(exc))}", file=sys.stderr)
        if debug:
            raise
        return 1
    except (KeyboardInterrupt, Terminated) as exc:
        print("focus-eval: interrupted; run the same command again to resume", file=sys.stderr)
        return 128 + (exc.signum if isinstance(exc, Terminated) else signal.SIGINT)

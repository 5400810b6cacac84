"""``focus-eval --model M --tasks T``: evaluate one model on a set of tasks. lm-eval's spellings are accepted
too (``--model_args``, ``--batch_size``, ``--output_path``, ``--include_path``, ``--num_fewshot 0``,
``--log_samples``, ``--tasks list``); its flags that have no meaning here stop with the focus-eval way instead."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from focus_eval.errors import FocusError
from focus_eval.options import batch_size, limit  # noqa: F401  (the parsers of --batch-size and --limit)

TASK_LISTINGS = ("list", "list_groups", "list_tasks", "list_tags")
# lm-eval flags without a counterpart here -> what to do instead
LM_EVAL_ONLY = {
    "--max_batch_size": "--batch-size auto finds the largest batch that fits",
    "--gen_kwargs": "multimodal LLMs answer greedily; set the answer length with --model-args max_new_tokens=N",
    "--apply_chat_template": "prompts always go through the model's own chat template",
    "--fewshot_as_multiturn": "focus-eval evaluates zero-shot only",
    "--system_instruction": "prompts have no system turn; a task's prompt is set in its task YAML",
    "--use_cache": "image embeddings are cached by default (--cache-dir DIR)",
    "--cache_requests": "image embeddings are cached by default (--cache-dir DIR)",
    "--predict_only": "every run writes its samples and metrics; 'focus-eval score' recomputes metrics from samples",
    "--wandb_args": "results are JSON Lines in --output-path; 'focus-eval leaderboard' builds a site from them",
    "--hf_hub_log_args": "results are JSON Lines in --output-path; 'focus-eval leaderboard' builds a site from them",
    "--samples": "--limit N (or a fraction such as 0.1) evaluates part of each test set",
    "--verbosity": "runs print a summary table; --no-progress turns the progress bars off",
    "--write_out": "per-image samples (with MLLM answers) are always written under <output>/<model>/samples/",
    "--show_config": "the run manifest <output>/<model>/run-*.json records the whole configuration",
    "--check_integrity": "'focus-eval datasets check' checks the data a run reads",
    "--confirm_run_unsafe_code": "no task runs code; --trust-remote-code allows a model's own code",
}


class LmEvalOnly(argparse.Action):
    """An lm-eval flag with no meaning here: stop with what to use instead."""

    def __call__(self, parser, namespace, values, option_string=None):
        instead = LM_EVAL_ONLY[option_string]
        raise argparse.ArgumentError(self, f"is an lm-eval option focus-eval does not have: {instead}")


def add_arguments(p: argparse.ArgumentParser, suppress: bool = False) -> None:
    """The run options as ``focus_eval.options`` declares them, then ``--config`` and lm-eval's flags; with
    ``suppress`` no default is set (only what a command line gives explicitly)."""
    from focus_eval.options import add_options

    add_options(p, suppress=suppress)
    unset = {"default": argparse.SUPPRESS} if suppress else {}
    p.add_argument("--config", type=Path, metavar="FILE", **({"default": None} | unset),
                   help="a YAML or JSON file of run options (option names or flag spellings -> values), or a "
                        "run manifest <output>/<model>/run-*.json (its options); the command line's options win")
    p.add_argument("--num_fewshot", "--num-fewshot", type=int, metavar="0", **({"default": 0} | unset),
                   help="accepted for lm-eval commands; only 0 (every task is zero-shot)")
    p.add_argument("--log_samples", "--log-samples", action="store_true", **unset,
                   help="accepted for lm-eval commands; per-image samples are always written")
    for flag in LM_EVAL_ONLY:
        p.add_argument(flag, nargs="?", action=LmEvalOnly, help=argparse.SUPPRESS)


def read_config(path: Path) -> tuple[Any, str]:
    """A --config file's mapping (a run manifest's ``options``) and the name its errors give."""
    import yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise FocusError(f"--config {path}: cannot read it: {exc.strerror or exc}") from None
    try:
        raw = json.loads(text) if Path(path).suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise FocusError(f"--config {path}: not a YAML or JSON mapping: {exc}") from None
    if isinstance(raw, dict) and isinstance(raw.get("options"), dict):
        return raw["options"], f"{path} (options)"  # a run manifest
    return raw, str(path)


def given_explicitly(args: argparse.Namespace) -> set[str]:
    """The options the command line itself gave: its arguments parsed again with every default suppressed
    (a namespace made without them: the options whose value is not the default)."""
    from focus_eval.options import DECLARED, cli_default

    argv = getattr(args, "_argv", None)
    if argv is None:
        return {n for n, d in DECLARED.items() if hasattr(args, n) and getattr(args, n) != cli_default(d)}
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser, suppress=True)
    return set(vars(parser.parse_known_args(argv)[0]))


def run_values(args: argparse.Namespace) -> dict[str, Any]:
    """The run options of a parsed command line, as RunOptions' fields hold them: those given explicitly,
    else a --config file's, else the defaults."""
    from focus_eval.options import config_values, from_namespace

    values = from_namespace(args)
    if getattr(args, "config", None) is None:
        return values
    from_file = config_values(*read_config(args.config))
    given = given_explicitly(args)
    return {**values, **from_file, **{n: v for n, v in values.items() if n in given}}


def run(args: argparse.Namespace) -> int:
    from focus_eval import api

    values = run_values(args)
    if not values.get("tasks"):
        raise FocusError("--tasks is required (on the command line or in the --config file): task names, groups, "
                         "tags, patterns or task YAML files; 'list' lists them")
    if values["tasks"].strip() in TASK_LISTINGS:
        return list_tasks(values)
    if not values.get("model"):
        raise FocusError("--model is required: a preset name ('focus-eval models'), a preset YAML file, or a family "
                         "adapter such as hf_vision with --model-args pretrained=HUB_ID_OR_PATH")
    if args.num_fewshot != 0:
        raise FocusError(f"--num_fewshot {args.num_fewshot}: focus-eval has no few-shot prompting (every task is "
                         f"zero-shot); leave it out or pass --num_fewshot 0")
    if args.log_samples:
        print("focus-eval: --log_samples: per-image samples are always written (<output>/<model>/samples/)",
              file=sys.stderr)
    tasks, values["include_path"] = task_files(values.pop("tasks"), values["include_path"])
    options = api.run_options(values.pop("model"), tasks, **values, argv=["focus-eval", *sys.argv[1:]])
    report, state = api.run(options)
    if not state.is_main_process:
        return 0
    print_summary(report)
    return 1 if report.failed else 0


def task_files(spec: str, include_path: list[str]) -> tuple[str, list[str]]:
    """``--tasks`` with each task YAML file replaced by its task name, the files added to the include path."""
    from focus_eval.task.config import read_yaml

    names, include = [], list(include_path)
    for item in (i.strip() for i in spec.split(",") if i.strip()):
        if not item.endswith((".yaml", ".yml")):
            names.append(item)
            continue
        path = Path(item).expanduser()
        if not path.is_file():
            raise FocusError(f"--tasks {item}: task file not found")
        name = read_yaml(path).get("task")
        if not isinstance(name, str):
            raise FocusError(f"{path}: a task file needs its own 'task: NAME' key")
        names.append(name)
        include.append(str(path))
    return ",".join(names), include


def list_tasks(values: dict[str, Any]) -> int:
    """``--tasks list``: the task listing of 'focus-eval tasks' (with groups), as lm-eval prints it."""
    from focus_eval.commands import tasks

    listing = argparse.Namespace(pattern=None, include_path=values["include_path"], data_root=None,
                                 dataset_path=values["dataset_path"], groups=True)
    return tasks.run(listing)


def _value(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def print_summary(report) -> None:
    rows = [r for r in report.results if not r.get("output_type")]
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
    classes = [r for r in report.results if r.get("output_type")]
    if classes:  # multi-class tasks: FunBench's F1 beside its random-guess value
        print(f"{'task':<42} {'method':<16} {'n':>6} {'f1':>7} {'guess':>7} {'acc':>7} {'kappa':>7}")
        for r in sorted(classes, key=lambda r: (r["task"], r["method"])):
            m, guess = r["metrics"], (r["extra"].get("random_guess") or {}).get("funbench_f1")
            print(f"{r['task']:<42} {r['method']:<16} {r['n']:>6} {_value(m['funbench_f1']):>7} {_value(guess):>7} "
                  f"{_value(m['accuracy']):>7} {_value(m['qw_kappa']):>7}")
    for g in report.groups:
        name = "auroc" if "auroc" in g["metrics"] else "funbench_f1"
        value, (low, high) = g["metrics"][name], g["ci"][name]
        shown = "-" if value is None else f"{value:.3f}" + ("" if low is None else f" [{low:.3f}, {high:.3f}]")
        print(f"group {g['group']:<22} {g['method']:<13} mean {name} {shown} over {len(g['tasks'])} task(s)")
    print(f"results: {report.model_dir / 'results.jsonl'}  (finished {len(report.finished)}, "
          f"already done {len(report.skipped)}, failed {len(report.failed)}, "
          f"skipped by their task {len(report.skipped_by_task)})")
    for stem, reason in report.failed.items():
        print(f"failed: {stem}: {reason}", file=sys.stderr)

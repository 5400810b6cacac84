"""``focus-eval --model M --tasks T``: evaluate one model on a set of tasks. lm-eval's spellings are accepted
too (``--model_args``, ``--batch_size``, ``--output_path``, ``--include_path``, ``--num_fewshot 0``,
``--log_samples``, ``--tasks list``); its flags that have no meaning here stop with the focus-eval way instead."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from focus_eval.errors import FocusError
from focus_eval.options import batch_size, limit  # noqa: F401  (the parsers of --batch-size and --limit)
from focus_eval.tables import print_json, print_table, print_text

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

    from focus_eval.files import DuplicateKeyError, load_json, load_yaml, read_user_text

    try:
        text = read_user_text(path)
    except OSError as exc:
        raise FocusError(f"--config {path}: cannot read it: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise FocusError(f"--config {path}: {exc}") from None
    try:
        raw = load_json(text) if Path(path).suffix == ".json" else load_yaml(text)
    except DuplicateKeyError as exc:
        raise FocusError(f"--config {path}: {exc}") from None
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
    if options.check:
        return print_check(api.preflight(options, counts=True), options)
    report, state = api.run(options)
    if not state.is_main_process:
        return 0
    if options.json:
        print_json(summary_json(report))
    else:
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


BINARY = ("task", "method", "n", "n_pos", "auroc", "auprc", "acc", "ece", "flags")
CLASSES = ("task", "method", "n", "f1", "guess", "acc", "kappa")
GROUPS = ("group", "method", "metric", "mean", "ci_low", "ci_high", "tasks")


def summary_rows(report) -> dict[str, list[list]]:
    """The summary's three tables as rows of values (None where a metric has none): binary tasks, multi-class
    tasks (FunBench's F1 beside its random-guess value), group means."""
    binary, classes, groups = [], [], []
    for r in sorted(report.results, key=lambda r: (r["task"], r["method"])):
        m = r["metrics"]
        if not r.get("output_type"):
            flags = " ".join(f for f in ("proxy", "underpowered") if r.get(f))
            binary.append([r["task"], r["method"], r["n"], r["n_pos"], m.get("auroc"), m.get("auprc"),
                           m.get("accuracy"), m.get("ece"), flags])
        else:
            guess = (r["extra"].get("random_guess") or {}).get("funbench_f1")
            classes.append([r["task"], r["method"], r["n"], m["funbench_f1"], guess, m["accuracy"], m["qw_kappa"]])
    for g in report.groups:
        name = "auroc" if "auroc" in g["metrics"] else "funbench_f1"
        low, high = g["ci"][name]
        groups.append([g["group"], g["method"], name, g["metrics"][name], low, high, len(g["tasks"])])
    return {"binary": binary, "classes": classes, "groups": groups}


def summary_json(report) -> dict:
    """``--json``: the summary's rows as records, the results file and the counts of units."""
    rows = summary_rows(report)
    return {"results": str(report.model_dir / "results.jsonl"),
            "binary": [dict(zip(BINARY, r)) for r in rows["binary"]],
            "classes": [dict(zip(CLASSES, r)) for r in rows["classes"]],
            "groups": [dict(zip(GROUPS, r)) for r in rows["groups"]],
            "finished": len(report.finished), "already_done": len(report.skipped), "failed": dict(report.failed),
            "skipped_by_task": dict(report.skipped_by_task), "trackers_failed": dict(report.trackers_failed)}


def print_summary(report) -> None:
    rows = summary_rows(report)
    if rows["binary"]:
        print_table(BINARY[:-1] + ("",), [[*r[:4], *map(_value, r[4:8]), r[8]] for r in rows["binary"]],
                    align="llrrrrrrl")
    if rows["classes"]:
        print_table(CLASSES, [[*r[:3], *map(_value, r[3:])] for r in rows["classes"]], align="llrrrrr")
    if rows["groups"]:
        def mean(v, lo, hi):
            return "-" if v is None else f"{v:.3f}" + ("" if lo is None else f" [{lo:.3f}, {hi:.3f}]")

        shown = [[f"group {g}", m, f"mean {name}", mean(v, lo, hi), f"over {n} task(s)"]
                 for g, m, name, v, lo, hi, n in rows["groups"]]
        print_table(("group", "method", "metric", "value", "tasks"), shown, align="lllll")
    print(f"results: {report.model_dir / 'results.jsonl'}  (finished {len(report.finished)}, "
          f"already done {len(report.skipped)}, failed {len(report.failed)}, "
          f"skipped by their task {len(report.skipped_by_task)})")
    for stem, reason in report.failed.items():
        print(f"failed: {stem}: {reason}", file=sys.stderr)
    for target, reason in report.trackers_failed.items():
        print(f"tracker failed: --log-to {target}: {reason}; it holds the units logged before, the results on "
              f"disk are complete", file=sys.stderr)


UNITS = ("task", "method", "dataset", "train", "val", "test")


def print_check(check, options) -> int:
    """``--check``: every problem (exit 2), else the units the run would compute with their images per split and,
    on a device named with --device, the estimated time; nothing is loaded or written."""
    check.raise_problems()
    rows = [[u.task.name, u.method, u.task.dataset,
             *[check.counts.get(u.task.name, {}).get(s) for s in ("train", "val", "test")]] for u in check.units]
    estimate = device_estimate(check, options)
    if options.json:
        print_json({"model": check.preset.name, "units": [dict(zip(UNITS, r)) for r in rows],
                    "skipped_by_task": check.skipped, "not_scored": check.unserved, "notes": check.notes,
                    "estimate": estimate})
        return 0
    print_table(UNITS, rows, align="lllrrr")
    datasets = len({u.task.dataset for u in check.units})
    print_text(f"{len(rows)} unit(s) of {check.preset.name} on {datasets} dataset(s); nothing was loaded or "
               f"written (--check)")
    for stem, reason in {**check.skipped, **check.unserved}.items():
        print_text(f"not run: {stem}: {reason}")
    for note in check.notes:
        print_text(f"note: {note}")
    if estimate is not None:
        print_text(estimate["text"])
    return 0


def device_estimate(check, options) -> dict | None:
    """On a device named with --device (a GPU, or the CPU), the run's estimated time from the throughput figures
    (``focus_eval.grid.estimate.run_estimate``); None otherwise."""
    device = str(options.device or "")
    if not (device.startswith("cuda") or device == "cpu") or not check.units:
        return None
    from focus_eval.grid.estimate import Throughput, run_estimate

    return run_estimate(check, options, Throughput.cpu() if device == "cpu" else Throughput.default())

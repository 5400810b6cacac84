"""``focus-eval --model M --tasks T``: evaluate one model on a set of tasks. lm-eval's spellings are accepted
too (``--model_args``, ``--batch_size``, ``--output_path``, ``--include_path``, ``--num_fewshot 0``,
``--log_samples``, ``--tasks list``); its flags that have no meaning here stop with the focus-eval way instead."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from focus_eval import validators
from focus_eval.errors import FocusError

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


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None,
                   help="a preset name ('focus-eval models' lists them), a preset YAML file, or a family adapter "
                        "(hf_vision, timm, open_clip, hf_clip, hf_mllm) with --model-args pretrained=HUB_ID_OR_PATH")
    p.add_argument("--tasks", required=True,
                   help="comma-separated task names, groups, tags, patterns or task YAML files, e.g. 'glaucoma_*' "
                        "or dr,refuge; 'list' lists them")
    p.add_argument("--model-args", "--model_args", default="",
                   help="preset overrides k=v,... (e.g. pretrained=ORG/NAME,revision=SHA, weights=PATH, source=DIR)")
    p.add_argument("--models-path", action="append", default=[], metavar="DIR",
                   help="a folder of user preset YAML files (repeatable; also $FOCUS_MODELS_PATH)")
    p.add_argument("--data-root", type=Path, default=os.environ.get("FOCUS_DATA"),
                   help="folder with one sub-folder per dataset (default: $FOCUS_DATA)")
    p.add_argument("--dataset-path", action="append", default=[], metavar="NAME=DIR",
                   help="a user dataset: NAME=DIR with a dataset.yaml card beside its manifest, or a folder of "
                        "cards (repeatable; also $FOCUS_DATASETS_PATH); its tasks are <target>_NAME")
    p.add_argument("-o", "--output-path", "--output_path", type=Path,
                   default=Path(os.environ.get("FOCUS_OUTPUT", "results")),
                   help="results folder (default: $FOCUS_OUTPUT, else results/)")
    p.add_argument("--include-path", "--include_path", action="append", default=[],
                   help="extra folder of task YAML files")
    p.add_argument("--include-proxy", action="store_true", help="let groups and patterns include proxy tasks")
    p.add_argument("--methods", default=None, help="subset of the preset's methods, comma-separated")
    p.add_argument("--batch-size", "--batch_size", default="auto", type=batch_size,
                   help="images per batch, or 'auto' (a large batch, halved when the GPU runs out of memory)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--num-workers", type=validators.non_negative, default=None, help="image decoding worker processes")
    p.add_argument("--seed", type=validators.seed, default=0)
    p.add_argument("--limit", type=limit, default=None,
                   help="evaluate at most N test images per task, or a fraction of each test set (e.g. 0.1)")
    p.add_argument("--resume", dest="resume", action="store_true", default=True,
                   help="skip finished (task, method) units and continue half-finished ones (default)")
    p.add_argument("--no-resume", dest="resume", action="store_false", help="evaluate everything again")
    p.add_argument("--overwrite", action="store_true",
                   help="replace results in the output folder that were computed from other inputs (data, labels, "
                        "task, preset, options) instead of stopping")
    p.add_argument("--verify-images", action="store_true",
                   help="also fingerprint the bytes of every image (resume then notices content changes that keep "
                        "a file's size and time)")
    p.add_argument("--probe-compat", action="store_true",
                   help="reference linear probe: L2-normalised features, C = 1, no validation search")
    p.add_argument("--probe-select", choices=("log_loss", "auroc"), default="log_loss",
                   help="how the linear probe chooses C on the validation split: log-loss (default, a proper "
                        "scoring rule) or AUROC")
    p.add_argument("--zs-scale", type=float, default=None,
                   help="fixed zero-shot logit scale (100 reproduces the reference); default: the model's own")
    p.add_argument("--adapter", default=None, help="folder of a peft LoRA adapter to load on the base model")
    p.add_argument("--trust-remote-code", "--trust_remote_code", action="store_true",
                   help="allow presets that declare remote code, and preset adapters named as module:Class")
    p.add_argument("--split-file", action="append", default=[], metavar="DATASET=CSV",
                   help="external split file (image_id, split) for one dataset; repeatable")
    p.add_argument("--cache-dir", type=Path, default=None, help="embedding cache (default: ~/.cache/focus-eval)")
    p.add_argument("--n-boot", type=validators.n_boot, default=1000,
                   help="bootstrap resamples for confidence intervals")
    p.add_argument("--no-prepared", dest="use_prepared", action="store_false",
                   help="read raw image files even where a prepared cache exists")
    p.add_argument("--no-progress", dest="progress", action="store_false")
    p.add_argument("--num_fewshot", "--num-fewshot", type=int, default=0, metavar="0",
                   help="accepted for lm-eval commands; only 0 (every task is zero-shot)")
    p.add_argument("--log_samples", "--log-samples", action="store_true",
                   help="accepted for lm-eval commands; per-image samples are always written")
    for flag in LM_EVAL_ONLY:
        p.add_argument(flag, nargs="?", action=LmEvalOnly, help=argparse.SUPPRESS)


def limit(text: str) -> int | float:
    """--limit: a whole number of images (at least 1), or a fraction of each test set between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value >= 1 and value.is_integer():
        return int(value)
    if 0 < value < 1:
        return value
    raise argparse.ArgumentTypeError(f"expected a number of images (1, 2, ...) or a fraction (0 < f < 1), got {text!r}")


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

    if args.tasks.strip() in TASK_LISTINGS:
        return list_tasks(args)
    if not args.model:
        raise FocusError("--model is required: a preset name ('focus-eval models'), a preset YAML file, or a family "
                         "adapter such as hf_vision with --model-args pretrained=HUB_ID_OR_PATH")
    if args.num_fewshot != 0:
        raise FocusError(f"--num_fewshot {args.num_fewshot}: focus-eval has no few-shot prompting (every task is "
                         f"zero-shot); leave it out or pass --num_fewshot 0")
    if args.log_samples:
        print("focus-eval: --log_samples: per-image samples are always written (<output>/<model>/samples/)",
              file=sys.stderr)
    tasks, include_path = task_files(args.tasks, args.include_path)
    options = api.run_options(
        args.model, tasks, model_args=args.model_args, models_path=args.models_path,
        dataset_path=args.dataset_path, include_path=include_path, include_proxy=args.include_proxy,
        data_root=args.data_root or None, output_path=args.output_path,
        batch_size=args.batch_size, device=args.device, seed=args.seed, limit=args.limit, resume=args.resume,
        overwrite=args.overwrite, verify_images=args.verify_images,
        num_workers=args.num_workers, probe_compat=args.probe_compat,
        probe_select=args.probe_select, zs_scale=args.zs_scale,
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


def list_tasks(args: argparse.Namespace) -> int:
    """``--tasks list``: the task listing of 'focus-eval tasks' (with groups), as lm-eval prints it."""
    from focus_eval.commands import tasks

    listing = argparse.Namespace(pattern=None, include_path=args.include_path, data_root=None,
                                 dataset_path=args.dataset_path, groups=True)
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

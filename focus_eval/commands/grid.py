"""``focus-eval grid plan|status|run|collect``: the whole grid of models x tasks (and the fine-tuning grid) as
jobs, run on this host or submitted to Slurm, then scored, compared and published in one leaderboard."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from focus_eval.errors import FocusError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    _plan_arguments(sub.add_parser("plan", help="write a plan file: one job per (model, dataset) with estimates"))
    status = sub.add_parser("status", help="per job: done, partial, stale or missing, read from the outputs")
    status.add_argument("plan", type=Path, metavar="PLAN")
    status.add_argument("--json", action="store_true", help="one JSON object per job, as a list")
    _run_arguments(sub.add_parser("run", help="run the jobs that are not done, here or on Slurm"))
    collect = sub.add_parser("collect", help="score, compare fine-tuned models and build the leaderboard")
    collect.add_argument("plan", type=Path, metavar="PLAN")
    collect.add_argument("-o", "--output", type=Path, required=True, metavar="SITE", help="leaderboard folder")
    collect.add_argument("--allow-incomplete", action="store_true",
                         help="publish what is finished even if some jobs are not done")


def _plan_arguments(p: argparse.ArgumentParser) -> None:
    from focus_eval.grid.plan import PLAN_OPTIONS
    from focus_eval.options import add_options

    p.add_argument("--models", default=None,
                   help="presets or shell patterns, comma-separated (default: the paper's 22 models)")
    p.add_argument("--tasks", default=None,
                   help="task names, groups, tags or patterns (default: the tasks of the dr, referable_dr and "
                        "glaucoma groups, proxies included)")
    p.add_argument("--include-proxy", action="store_true", help="let --tasks groups and patterns reach proxies")
    p.add_argument("--finetune", action="store_true",
                   help="add the fine-tuning grid: a LoRA adapter per cell and multimodal LLM, then its evaluation")
    p.add_argument("--finetune-models", default=None, help="models to fine-tune (default: every MLLM of the plan "
                   "whose preset declares fine-tuning settings)")
    p.add_argument("--finetune-cells", default=None, metavar="DATASET:TARGET,...",
                   help="training cells (default: brset:dr,brset:referable_dr,brset:glaucoma,mbrset:dr,"
                        "mbrset:referable_dr)")
    p.add_argument("--adapters", type=Path, default=Path("adapters"), help="adapter folder (default: adapters/)")
    p.add_argument("--model-args", action="append", default=[], metavar="MODEL:K=V,...",
                   help="preset overrides of one model, e.g. visionfm-fundus:weights=/w/VFM.pth (repeatable)")
    runs = p.add_argument_group("run options", "every job runs with these ('focus-eval run --help' explains them)")
    add_options(runs, PLAN_OPTIONS, aliases=False, drop=("-o",), overrides={
        "data_root": {"help": "dataset folder of the jobs (default: $FOCUS_DATA); image counts are read from it"},
        "output_path": {"help": "results folder of the jobs (default: $FOCUS_OUTPUT, else results/)"},
        "cache_dir": {"help": "embedding cache shared by the jobs"},
        "num_workers": {"help": "image decoding workers per job"}})
    p.add_argument("--sft-args", default="", help="extra 'focus-eval sft' options for every training job")
    p.add_argument("--throughput", type=Path, default=None, metavar="BENCH_JSON",
                   help="figures of 'focus-eval bench --json FILE' on the grid's GPU (default: planning figures)")
    p.add_argument("--no-count", dest="count", action="store_false",
                   help="use the documented image counts instead of loading the datasets under --data-root")
    p.add_argument("--list", action="store_true", help="print every job with its estimate")
    p.add_argument("--allow-missing", action="store_true",
                   help="plan even when the data root or some of the plan's datasets are missing")
    p.add_argument("-o", "--output", type=Path, default=Path("grid-plan.yaml"), help="plan file to write")


def _run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("plan", type=Path, metavar="PLAN")
    p.add_argument("--executor", default="local", help="local (this host, one job after another) or slurm")
    p.add_argument("--cluster", type=Path, default=None, metavar="YAML",
                   help="Slurm settings: partition, account, qos, constraint, gpus, cpus, mem_gb, time_min, "
                        "time_factor, array_parallelism, setup, sbatch, python")
    p.add_argument("--partition", default=None)
    p.add_argument("--account", default=None)
    p.add_argument("--qos", default=None)
    p.add_argument("--gpus", type=int, default=None, help="GPUs per job (default 1)")
    p.add_argument("--cpus", type=int, default=None, help="CPUs per job (default 8)")
    p.add_argument("--mem-gb", type=float, default=None, help="host memory per job (default: the estimate)")
    p.add_argument("--time-min", type=int, default=None, help="time limit per job (default: from the estimate)")
    p.add_argument("--logs", type=Path, default=None, help="log folder (default: <plan>-logs beside the plan)")
    p.add_argument("--jobs", default=None, help="only these job ids (comma-separated), if they are not done")
    p.add_argument("--overwrite", action="store_true",
                   help="also run stale jobs, replacing what they computed from other inputs (default: hold them)")
    p.add_argument("--dry-run", action="store_true", help="show what would run or be submitted")
    p.add_argument("--wait", action="store_true", help="slurm: return once the submitted jobs have left the queue")


def run(args: argparse.Namespace) -> int:
    return {"plan": _plan, "status": _status, "run": _run, "collect": _collect}[args.action](args)


# --- plan ----------------------------------------------------------------------------------------------------
def _model_args(values: list[str]) -> dict[str, str]:
    out = {}
    for value in values:
        model, sep, rest = value.partition(":")
        if not sep or not model.strip():
            raise FocusError(f"--model-args expects MODEL:K=V,..., got {value!r}")
        out[model.strip()] = rest.strip()
    return out


def _plan(args: argparse.Namespace) -> int:
    from focus_eval.grid.estimate import Throughput
    from focus_eval.grid.plan import PLAN_OPTIONS, Settings, build_plan, write_plan
    from focus_eval.options import absolute_paths, from_namespace, plain

    values = plain(absolute_paths(from_namespace(args, PLAN_OPTIONS)))
    settings = Settings(adapters_path=str(args.adapters.expanduser().resolve()),
                        model_args=_model_args(args.model_args), sft_args=shlex.split(args.sft_args), **values)
    throughput = Throughput.from_bench(args.throughput) if args.throughput else Throughput.default()
    plan = build_plan(settings, models=args.models, tasks=args.tasks, include_proxy=args.include_proxy,
                      finetune=args.finetune, finetune_models=args.finetune_models, cells=args.finetune_cells,
                      throughput=throughput, count_images=args.count)
    _check_data(plan, args.data_root, args.allow_missing)
    if args.list:
        _print_jobs(plan)
    path = write_plan(plan, args.output)
    _print_summary(plan)
    print(f"wrote {path}")
    return 0


def _check_data(plan, root: Path | None, allow_missing: bool) -> None:
    """The datasets the plan's jobs read must be under the data root, as 'datasets check' finds them; with
    --allow-missing the missing ones are only listed."""
    from focus_eval.data import registry

    names = sorted({j.dataset for j in plan.jobs})
    if root is None or not Path(root).is_dir():
        problem = (f"the data root {root} does not exist" if root else
                   f"no data root (--data-root or ${registry.DATA_ROOT_ENV})")
        missing = names
    else:
        missing = [n for n in names if not registry.dataset_present(root, n)]
        problem = f"{len(missing)} of the plan's {len(names)} datasets are missing under {root}" if missing else ""
    if not missing:
        return
    shown = ", ".join(f"{n} (expected {registry.folder_name(n)}/)" for n in missing)
    if not allow_missing:
        raise FocusError(f"{problem}: {shown}; extract them ('focus-eval datasets check' says where each goes), "
                         "or pass --allow-missing to plan without them")
    print(f"warning: {problem}: {shown}", file=sys.stderr)


def _print_jobs(plan) -> None:
    from focus_eval.tables import print_table

    print_table(("job", "configs", "images", "GPU GB", "minutes", "after"),
                [[j.id, j.configurations, j.images, f"{j.gpu_memory_gb:.1f}", f"{j.minutes:.0f}",
                  ",".join(j.after) or "-"] for j in plan.jobs], align="lrrrrl")


def _print_summary(plan) -> None:
    from focus_eval.presets import load_preset

    kinds = {"training": [j for j in plan.jobs if j.kind == "sft"],
             "evaluation": [j for j in plan.jobs if j.kind == "eval" and not j.adapter],
             "adapter evaluation": [j for j in plan.jobs if j.kind == "eval" and j.adapter]}
    parts = ", ".join(f"{len(v)} {k}" for k, v in kinds.items() if v)
    print(f"plan: {len(plan.jobs)} jobs ({parts}); {plan.base_configurations()} base configurations in jobs"
          + (f", {plan.adapter_configurations()} adapter configurations" if kinds["adapter evaluation"] else ""))
    for pair in plan.without_job:
        print(f"  + {pair['configurations']} configurations of {pair['task']} without a job: {pair['reason']}")
    if plan.without_job:
        print(f"  = {plan.paper_configurations()} base configurations of the paper's grid")
    families = {m: load_preset(m).family for m in {j.model for j in plan.jobs}}
    hours: dict[str, float] = {}
    for job in plan.jobs:
        family = families[job.model] + (" training" if job.kind == "sft" else "")
        hours[family] = hours.get(family, 0.0) + job.minutes / 60
    shown = ", ".join(f"{k} {v:.1f}" for k, v in sorted(hours.items()))
    print(f"estimated GPU-hours: {sum(hours.values()):.1f} ({shown}); throughput: {plan.throughput}")


# --- status, run, collect -------------------------------------------------------------------------------------
def _status(args: argparse.Namespace) -> int:
    from focus_eval.grid.plan import read_plan
    from focus_eval.grid.status import STATES, plan_status

    statuses = plan_status(read_plan(args.plan))
    if args.json:
        rows = [{"job": s.job.id, "kind": s.job.kind, "state": s.state, "units": s.counts, "reason": s.reason}
                for s in statuses]
        print(json.dumps(rows, indent=1))
        return 0
    from focus_eval.tables import print_table

    print_table(("job", "state", "units", "reason"),
                [[s.job.id, s.state, f"{s.counts['done']}/{len(s.units)} units done" if s.job.kind == "eval"
                  else "adapter", s.reason] for s in statuses])
    totals = {state: sum(1 for s in statuses if s.state == state) for state in STATES}
    print("jobs: " + ", ".join(f"{n} {state}" for state, n in totals.items()))
    return 0


def _logs(args: argparse.Namespace) -> Path:
    return args.logs or args.plan.with_name(f"{args.plan.stem}-logs")


def _selected(plan, args: argparse.Namespace):
    from focus_eval.grid.status import plan_status, to_run

    selection = to_run(plan_status(plan), overwrite=args.overwrite)
    if args.jobs:
        wanted = [plan.job(j.strip()).id for j in args.jobs.split(",") if j.strip()]
        selection.jobs = [j for j in selection.jobs if j.id in wanted]
        selection.held = {k: v for k, v in selection.held.items() if k in wanted}
    return selection


def _run(args: argparse.Namespace) -> int:
    from focus_eval.grid.executors import EXECUTORS, Cluster
    from focus_eval.grid.plan import read_plan

    plan = read_plan(args.plan)
    cluster = Cluster.load(args.cluster, partition=args.partition, account=args.account, qos=args.qos,
                           gpus=args.gpus, cpus=args.cpus, mem_gb=args.mem_gb, time_min=args.time_min)
    executor = EXECUTORS.get(args.executor)(cluster, _logs(args))
    selection = _selected(plan, args)
    for job_id, reason in selection.held.items():
        print(f"  held back: {job_id}: {reason}", file=sys.stderr)
    if not selection.jobs:
        print("no job to run" if selection.held else
              "every job of the plan is done; 'focus-eval grid collect' publishes them")
        return 1 if selection.held else 0
    print(f"{len(selection.jobs)} of {len(plan.jobs)} job(s) to run ({args.executor})")
    outcome = executor.run(plan, selection, dry_run=args.dry_run)
    for job_id, reason in {**outcome.skipped, **outcome.failed}.items():
        print(f"  not run: {job_id}: {reason}", file=sys.stderr)
    if outcome.submitted and args.wait and not args.dry_run:
        from focus_eval.grid.slurm import wait_for

        wait_for(list(outcome.submitted.values()))
    return 1 if outcome.failed or outcome.skipped or selection.held else 0


def _collect(args: argparse.Namespace) -> int:
    from focus_eval.grid.collect import collect
    from focus_eval.grid.plan import read_plan

    report = collect(read_plan(args.plan), args.output, allow_incomplete=args.allow_incomplete)
    print(f"collect: rescored {len(report.scored)} folder(s), wrote {len(report.compared)} comparison file(s), "
          f"{len(report.unfinished)} job(s) not done; leaderboard in {report.site}")
    return 0

"""grid plan: the paper's grid as jobs (532 base configurations, the fine-tuning grid with --finetune), estimates
from preset sizes, image counts and benchmark figures, the plan file, and each job's command line as the real
parser reads it."""

import contextlib
import io
import json
from collections import Counter

import pytest

from focus_eval.cli import build_parser, main
from focus_eval.errors import FocusError
from focus_eval.grid.estimate import Throughput, estimate, image_counts
from focus_eval.grid.jobs import job_argv
from focus_eval.grid.plan import Settings, build_plan, read_plan, write_plan
from focus_eval.presets import load_preset
from focus_eval.task import TaskIndex

PAPER_VM = {"dinov2-l", "dinov3-vitl16", "vit-l16", "visionfm-fundus", "retfound-mae-cfp", "retfound-mae-meh",
            "retfound-mae-oct", "retfound-mae-shanghai", "retfound-dinov2-meh", "retfound-dinov2-shanghai"}
PAPER_VLM = {"clip-vit-b32", "eyeclip", "flair", "medsiglip-448", "retclip", "siglip2-b16"}
PAPER_MLLM = {"gemma3-27b", "medgemma-4b", "medgemma1.5-4b", "medgemma-27b", "qwen3-vl-8b", "llava-next-8b"}


@pytest.fixture(scope="module")
def printed(tmp_path_factory):
    """(the paper's plan with the fine-tuning grid, what 'grid plan' printed)"""
    path = tmp_path_factory.mktemp("plan") / "paper.yaml"
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["grid", "plan", "--finetune", "--no-count", "--allow-missing", "--output-path", "/r",
                     "--adapters", "/a", "-o", str(path)]) == 0
    return read_plan(path), out.getvalue()


@pytest.fixture(scope="module")
def paper(printed):
    return printed[0]


def test_the_papers_grid_has_532_base_configurations_one_job_per_model_and_dataset(paper, printed):
    base = [j for j in paper.jobs if j.kind == "eval" and not j.adapter]
    assert {j.model for j in base} == PAPER_VM | PAPER_VLM | PAPER_MLLM
    assert len(base) == 22 * 10 and len({(j.model, j.dataset) for j in base}) == 220
    index, per_model = TaskIndex(), Counter()
    for job in base:
        assert {index.get(t).dataset for t in job.tasks} == {job.dataset}
        per_model[job.model] += len(job.tasks)
    assert set(per_model.values()) == {18}  # the 18 clinical tasks, both proxies included
    assert sum(j.configurations for j in base) == 10 * 18 + 6 * 18 * 2 + 6 * 18 == 504
    assert paper.without_job == [{"task": "glaucoma_mbrset", "configurations": 28,
                                  "reason": paper.without_job[0]["reason"]}]
    assert paper.paper_configurations() == 532 == 10 * 19 + 6 * 19 * 2 + 6 * 19
    assert "532 base configurations of the paper's grid" in printed[1]
    assert "30 training, 220 evaluation, 192 adapter evaluation" in printed[1]


def test_the_finetuning_grid_trains_first_and_evaluates_each_adapter_after_its_training(paper):
    sft = [j for j in paper.jobs if j.kind == "sft"]
    assert {(j.model, j.dataset, j.target) for j in sft} == {
        (m, d, t) for m in PAPER_MLLM for d, t in [("brset", "dr"), ("brset", "referable_dr"),
                                                   ("brset", "glaucoma"), ("mbrset", "dr"), ("mbrset", "referable_dr")]}
    adapted, index = [j for j in paper.jobs if j.adapter and j.kind == "eval"], TaskIndex()
    for job in adapted:
        (training,) = job.after
        trained = paper.job(training)
        assert trained.kind == "sft" and trained.adapter == job.adapter and trained.model == job.model
        assert {index.get(t).target for t in job.tasks} == {trained.target}
        assert paper.jobs.index(trained) < paper.jobs.index(job)
    assert paper.adapter_configurations() == 6 * (7 + 7 + 4 + 7 + 7)
    order = [("sft" if j.kind == "sft" else "adapter" if j.adapter else "base") for j in paper.jobs]
    assert order == sorted(order, key=["sft", "base", "adapter"].index)


def test_every_job_runs_a_command_the_real_parsers_accept(paper):
    for job in paper.jobs:
        argv = job_argv(paper.settings, job)
        if job.kind == "sft":
            args = build_parser("sft").parse_args(argv[1:])
            assert (args.model, args.dataset, args.target) == (job.model, job.dataset, job.target)
            assert str(args.output) == f"/a/{job.model}/{job.adapter}"
            continue
        args = build_parser("run").parse_args(argv)
        assert args.tasks.split(",") == job.tasks and args.methods.split(",") == job.methods
        assert str(args.output_path) == "/r" and args.n_boot == 1000 and args.seed == 0
        assert args.adapter == (f"/a/{job.model}/{job.adapter}" if job.adapter else None)
        assert str(paper.output_dir(job)) == f"/r/{job.model}" + (f"@{job.adapter}" if job.adapter else "")


def test_estimates_grow_with_model_size_and_follow_benchmark_figures(tmp_path):
    figures = Throughput.default()
    small, large = load_preset("medgemma-4b"), load_preset("medgemma-27b")
    a, b = estimate(small, "eval", 1000, 1, figures), estimate(large, "eval", 1000, 1, figures)
    assert b.gpu_memory_gb > a.gpu_memory_gb > 8 and b.minutes > a.minutes
    assert estimate(small, "eval", 4000, 1, figures).minutes > a.minutes
    assert estimate(small, "sft", 1000, 1, figures).gpu_memory_gb > a.gpu_memory_gb
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"tiny": False, "device": "H100", "date": "2026-01-01",
                                 "workloads": {"medgemma4b": {"ours_img_s": 4.0}}}))
    measured = Throughput.from_bench(bench)
    assert measured.figures["medgemma4b"] == 4.0 and "H100" in measured.source
    assert estimate(small, "eval", 1000, 1, measured).minutes > a.minutes
    bench.write_text(json.dumps({"tiny": True, "workloads": {}}))
    with pytest.raises(FocusError, match="tiny"):
        Throughput.from_bench(bench)


def test_image_counts_come_from_the_data_root_when_it_holds_the_dataset(tmp_path):
    assert main(["synth", "--out", str(tmp_path / "data"), "--n", "40"]) == 0
    settings = Settings(output_path=str(tmp_path / "r"), adapters_path=str(tmp_path / "a"),
                        data_root=str(tmp_path / "data"))
    plan = build_plan(settings, models="tiny-vit,tiny-medgemma", tasks="synth_desktop")
    vit, mllm = plan.jobs
    assert (vit.images_source, mllm.images_source) == ("counted", "counted")
    counts = image_counts("synth_desktop", None, [TaskIndex().get(t) for t in vit.tasks], tmp_path / "data")
    assert counts.test > 0 and counts.val > 0
    # linear probes read every split, prompts the test split and, for their validation rows, the val split
    assert vit.images == counts.total == 40 and mllm.images == counts.test + counts.val
    settings.val_scores = False
    assert build_plan(settings, models="tiny-medgemma", tasks="synth_desktop").jobs[0].images == counts.test
    assert plan.without_job == []  # a chosen task list is not the paper's grid


def test_plan_file_round_trip_and_errors_name_the_file_and_key(paper, tmp_path):
    path = write_plan(paper, tmp_path / "copy.yaml")
    again = read_plan(path)
    assert again.jobs == paper.jobs and again.settings == paper.settings
    assert again.paper_configurations() == 532
    text = path.read_text()
    path.write_text(text.replace("  minutes:", "  minutez:", 1))
    with pytest.raises(FocusError, match=r"copy.yaml: jobs\[0\]: unknown key\(s\) minutez"):
        read_plan(path)
    path.write_text(text.replace("after: []", "after: [eval/nowhere/x]", 1))
    with pytest.raises(FocusError, match="waits for 'eval/nowhere/x', which is not an earlier job"):
        read_plan(path)
    with pytest.raises(FocusError, match="did you mean"):
        paper.job("eval/dinov2-l/brsett")


def test_unknown_model_and_bad_cells_are_clear_errors(tmp_path):
    out = str(tmp_path / "p.yaml")
    assert main(["grid", "plan", "--models", "medgema-4b", "-o", out]) == 2
    assert main(["grid", "plan", "--models", "tiny-vit", "--tasks", "synth", "--finetune",
                 "--finetune-models", "tiny-vit", "-o", out]) == 2
    assert main(["grid", "plan", "--models", "tiny-medgemma", "--tasks", "synth", "--finetune",
                 "--finetune-cells", "brset", "-o", out]) == 2

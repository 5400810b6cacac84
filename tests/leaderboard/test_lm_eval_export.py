"""`focus-eval report export --format lm-eval`: lm-evaluation-harness result files, checked against lm-eval's own
code: its result schema (``lm_eval.result_schema``, validated with pydantic), its ``TaskConfig``, output types and
aggregation registry, its ``make_table``, its ``EvaluationTracker`` (the same sample lines and task hashes as it
writes from the same records) and its W&B sample logger (offline)."""

import copy
import json
import math
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from focus_eval.analysis import lm_eval_export as lx
from focus_eval.cli import main
from focus_eval.results.schema import GroupLine
from helpers.leaderboard_data import NO_SAMPLES, write_results

lm_eval = pytest.importorskip("lm_eval", reason="lm_eval (test extra) is not installed")
NOW = datetime(2026, 1, 2, 3, 4, 5, 678901)
SYNTH_DESKTOP = ["dr_synth_desktop", "referable_dr_synth_desktop", "glaucoma_synth_desktop"]


def _lines(root):
    return [json.loads(line) for path in sorted(root.glob("*/results.jsonl"))
            for line in path.read_text().splitlines() if line.strip()]


def _collection(*paths):
    from focus_eval.leaderboard.conventions import collect_results

    return collect_results(list(paths))


def _with_group(results: Path) -> Path:
    """A synth_desktop group line in efficientnet-lite0's results.jsonl, as a run with --tasks synth_desktop
    writes it."""
    line = GroupLine(group="synth_desktop", model="efficientnet-lite0", method="linear_probe", family="vm",
                     metrics={"auroc": 0.9, "accuracy": 0.8, "ece": 0.05, "brier": None},
                     ci={"auroc": [0.85, 0.95], "accuracy": [0.75, 0.85]}, members=SYNTH_DESKTOP,
                     tasks=SYNTH_DESKTOP, ci_method="patient_bootstrap", n_boot=200)
    with open(results / "efficientnet-lite0" / "results.jsonl", "a") as f:
        f.write(json.dumps(line.to_dict()) + "\n")
    return results


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The leaderboard's made-up results (with one group line) exported once: (results, out, written paths)."""
    tmp = tmp_path_factory.mktemp("lm")
    results = _with_group(write_results(tmp / "results"))
    out = tmp / "lm"
    return results, out, lx.export(_collection(results), out, now=NOW).written


def lm_eval_accepts(folder: Path) -> dict:
    """Every check of lm-eval's own code on one exported folder; returns its results object."""
    from lm_eval.api import metrics as _registers_aggregations  # noqa: F401
    from lm_eval.api.registry import AGGREGATION_REGISTRY
    from lm_eval.api.task import ALL_OUTPUT_TYPES
    from lm_eval.config.task import TaskConfig
    from lm_eval.result_schema import EvalResults, SampleResult
    from lm_eval.utils import get_file_task_name, make_table
    from pydantic import TypeAdapter

    [path] = folder.glob("results_*.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    # the schema's `configs` type (flat text values) is narrower than the configs lm-eval itself writes (lists,
    # numbers, a metadata mapping): those are checked by building lm-eval's TaskConfig from them instead
    TypeAdapter(EvalResults).validate_python({k: v for k, v in data.items() if k != "configs"})
    for config in data["configs"].values():
        TaskConfig(**config)
        assert config["output_type"] in ALL_OUTPUT_TYPES
        assert all(m["aggregation"] in AGGREGATION_REGISTRY for m in config["metric_list"])
    assert set(data["versions"]) == set(data["results"]) == set(data["higher_is_better"]) == set(data["n-shot"])
    assert set(data["groups"]) <= set(data["results"]) and set(data["group_subtasks"]) == set(data["groups"])
    assert isinstance(data["date"], float)
    table = make_table(data)
    assert all(task in table for task in data["configs"])
    if data["groups"]:
        assert all(group in make_table(data, "groups") for group in data["groups"])
    samples = TypeAdapter(SampleResult)
    for file in folder.glob("samples_*.jsonl"):
        task = get_file_task_name(file.name)
        listed = [m["metric"] for m in data["configs"][task]["metric_list"]]
        for text in file.read_text(encoding="utf-8").splitlines():
            record = json.loads(text)
            samples.validate_python(record)
            assert record["metrics"] == listed and all(isinstance(record[m], float) for m in listed)
    return data


def test_export_has_one_results_entry_per_task_with_lm_eval_names(tmp_path, capsys):
    results = write_results(tmp_path / "results")
    out = tmp_path / "lm"
    assert main(["report", "export", "--format", "lm-eval", str(results), "-o", str(out)]) == 0
    assert "results files" in capsys.readouterr().out
    files = sorted(out.glob("*/results_*.json"))
    lines = _lines(results)
    configs = {(r["model"], r["method"]) for r in lines}
    assert len(files) == len(configs)
    seen = 0
    for path in files:
        data = json.loads(path.read_text())
        model, method = data["config"]["model"], data["config"]["method"]
        mine = {r["task"]: r for r in lines if (r["model"], r["method"]) == (model, method)}
        assert set(data["results"]) == set(mine) == set(data["configs"]) == set(data["versions"])
        for task, block in data["results"].items():
            line = mine[task]
            assert block["alias"] == block["name"] == task and block["sample_len"] == line["n"]
            if line["metrics"]["auroc"] is None:  # lm-eval's blocks hold numbers: no value, no key
                assert "auroc,none" not in block and "auroc_stderr,none" not in block
            else:
                low, high = line["ci"]["auroc"]
                assert block["auroc,none"] == line["metrics"]["auroc"]
                assert abs(block["auroc_stderr,none"] - (high - low) / 3.919927969) < 1e-9
            assert data["n-samples"][task] == {"original": line["n"], "effective": line["n_valid"]}
            assert data["higher_is_better"][task]["auroc"] is True and data["higher_is_better"][task]["ece"] is False
            stamp = path.name[len("results_"):-len(".json")]
            samples = path.parent / f"samples_{task}_{stamp}.jsonl"
            assert samples.is_file() == ((model, task) not in NO_SAMPLES)
            if samples.is_file():
                rows = [json.loads(r) for r in samples.read_text().splitlines()]
                source = results / path.parent.name.split("__")[0] / "samples" / f"{task}.{method}.jsonl"
                # the test rows (the sample file also holds the validation rows, which the export leaves out)
                mine_rows = [r for r in map(json.loads, source.read_text().splitlines()) if r["split"] == "test"] \
                    if source.exists() else None
                assert rows[0]["filter"] == "none" and [r["doc_id"] for r in rows] == list(range(len(rows)))
                if mine_rows is not None:
                    assert [json.loads(r["filtered_resps"][0]) for r in rows] == [r["score"] for r in mine_rows]
                    assert [r["doc"]["image_id"] for r in rows] == [r["image_id"] for r in mine_rows]
            seen += 1
    assert seen == len(lines)


def test_lm_evals_schema_table_and_task_config_accept_every_folder(exported):
    results, out, written = exported
    folders = sorted({p.parent for p in written})
    assert len(folders) == len({(r["model"], r["method"]) for r in _lines(results)})
    for folder in folders:
        data = lm_eval_accepts(folder)
        assert data["date"] == NOW.timestamp() and (folder / f"results_{lx.timestamp(NOW)}.json").is_file()
        for config in data["configs"].values():
            # per-image metrics in the samples' config; corpus metrics such as AUROC in the results only
            assert [m["metric"] for m in config["metric_list"]] == ["accuracy", "brier"]
            assert config["metric_list"][0]["aggregation"] == "nanmean"
            assert config["metadata"]["output_type"] == "binary"


def test_groups_are_complete(exported):
    _, out, _ = exported
    [path] = out.glob("efficientnet-lite0__linear_probe/results_*.json")
    data = json.loads(path.read_text())
    block = data["groups"]["synth_desktop"]
    assert data["results"]["synth_desktop"] == block and block["auroc,none"] == 0.9
    assert "brier,none" not in block and "ece_stderr,none" not in block  # no value, no interval: no key
    assert block["sample_len"] == sum(data["results"][t]["sample_len"] for t in SYNTH_DESKTOP)
    assert data["group_subtasks"]["synth_desktop"] == SYNTH_DESKTOP
    assert data["versions"]["synth_desktop"] == "N/A" and data["n-shot"]["synth_desktop"] == 0
    assert data["higher_is_better"]["synth_desktop"] == {"accuracy": True, "auroc": True, "brier": False, "ece": False}


def test_sample_lines_are_those_lm_evals_tracker_writes_from_the_same_records(exported, tmp_path):
    from lm_eval.loggers.evaluation_tracker import EvaluationTracker

    results, out, _ = exported
    collection = _collection(results)
    tracker = EvaluationTracker(output_path=str(tmp_path / "tracker"))
    tracker.general_config_tracker.model_name_sanitized = "m"
    checked = 0
    for entry in collection.entries:
        records = lx.sample_records(entry)
        if records is None:
            continue
        folder = out / lx.sanitize("__".join(p for p in entry.config if p))
        tracker.date_id = f"{checked}"
        tracker.save_results_samples(entry.line.task, copy.deepcopy(records))
        theirs = (tmp_path / "tracker" / "m" / f"samples_{entry.line.task}_{checked}.jsonl").read_text("utf-8")
        assert (folder / f"samples_{entry.line.task}_{lx.timestamp(NOW)}.jsonl").read_text("utf-8") == theirs
        # each per-image value is the metric on that image alone; their NaN-mean is the results line's value
        for metric in ("accuracy", "brier"):
            values = [r[metric] for r in records]
            assert np.nanmean(values) == pytest.approx(entry.line.metrics[metric], abs=1e-12)
            assert all(math.isnan(v) for r, v in zip(records, values) if r["doc"].get("error"))
        checked += 1
    assert checked > 5


def test_task_hashes_are_lm_evals(exported, tmp_path):
    from lm_eval.loggers.evaluation_tracker import EvaluationTracker

    results, out, _ = exported
    entries = [e for e in _collection(results).entries if e.model == "efficientnet-lite0"]
    samples = {e.line.task: lx.sample_records(e) for e in entries}
    tracker = EvaluationTracker(output_path=str(tmp_path / "tracker"))
    tracker.general_config_tracker.model_name_sanitized = "m"
    aggregated = {"results": {}}
    tracker.save_results_aggregated(aggregated, copy.deepcopy(samples))
    [path] = out.glob("efficientnet-lite0__linear_probe/results_*.json")
    assert json.loads(path.read_text())["task_hashes"] == aggregated["task_hashes"] != {}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A real run: tiny-vit on the synthetic desktop group (three binary tasks and their group line), a
    multi-class task (DR grading) and a multi-label one (conditions)."""
    tmp = tmp_path_factory.mktemp("run")
    assert main(["synth", "--out", str(tmp / "data"), "--n", "300"]) == 0
    assert main(["--model", "tiny-vit", "--tasks", "synth_desktop,funbench_l4c_dr_grading_synth_desktop,"
                 "funbench_l4b_conditions_synth_desktop", "--data-root", str(tmp / "data"), "--output-path",
                 str(tmp / "out"), "--device", "cpu", "--n-boot", "20", "--num-workers", "0", "--no-progress"]) == 0
    return tmp / "out"


@pytest.mark.slow
def test_a_real_runs_export_reaches_lm_evals_wandb_sample_logger(tiny_run, tmp_path, monkeypatch):
    pytest.importorskip("wandb", reason="wandb (test extra) is not installed")
    from lm_eval.loggers import WandbLogger

    from helpers.wandb_log import wandb_records

    collection = _collection(tiny_run)
    lx.export(collection, tmp_path / "lm", now=NOW)
    [folder] = (tmp_path / "lm").iterdir()
    data = lm_eval_accepts(folder)
    assert set(data["groups"]) == {"synth_desktop"}
    samples = {e.line.task: lx.sample_records(e) for e in collection.entries}
    kinds = {e.line.output_type or "binary" for e in collection.entries}
    assert kinds == {"binary", "multiclass", "multilabel"}
    for entry in collection.entries:
        for metric in ("accuracy", "brier"):
            mean = np.nanmean([r[metric] for r in samples[entry.line.task]])
            assert mean == pytest.approx(entry.line.metrics[metric], abs=1e-12), (entry.line.task, metric)
    import wandb

    wandb.teardown()  # W&B keeps one setup per process: a run of an earlier test must not shape this one
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    logger = WandbLogger(init_args={"project": "focus-eval-export"})
    try:
        logger.post_init(data)
        logger.log_eval_result()
        logger.log_eval_samples(samples)
    finally:
        logger.run.finish()
    [log] = tmp_path.glob("wandb/offline-run-*/run-*.wandb")
    rows = {item.nested_key[0]: json.loads(item.value_json) for record in wandb_records(log)
            if record.WhichOneof("record_type") == "history" for item in record.history.item
            if list(item.nested_key[1:]) == ["nrows"]}
    assert {task: rows.get(f"{task}_eval_results") for task in samples} == {t: len(r) for t, r in samples.items()}


def test_lm_evals_sample_schema_refuses_what_the_export_once_wrote(exported):
    """The schema check above can fail: a record with a list of request tuples, its score as a number, and
    ``pred`` and ``error`` beside the metric values (instead of inside ``doc``) is refused."""
    from lm_eval.result_schema import SampleResult
    from pydantic import TypeAdapter, ValidationError

    _, out, _ = exported
    [path] = out.glob("efficientnet-lite0__linear_probe/samples_dr_synth_desktop_*.jsonl")
    record = json.loads(path.read_text().splitlines()[0])
    TypeAdapter(SampleResult).validate_python(record)
    for old in ({"arguments": [["dr_synth_desktop"]]}, {"filtered_resps": [0.42]}, {"error": "unreadable image"}):
        with pytest.raises(ValidationError):
            TypeAdapter(SampleResult).validate_python(record | old)

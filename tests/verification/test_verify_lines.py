"""``focus_eval.verification.verify`` on results written as a run writes them: an honest folder is verified line
by line; a changed figure, a sample label that disagrees with the dataset, another task definition, another
focus-eval version, a missing manifest or sample file, an incomplete test split or an unsafe name each end their
line as mismatch or unverifiable with the reason, and a group line is no better than its members."""

import json
import shutil

import pytest
from helpers.records import synthetic_root
from helpers.submissions import METHOD, TASKS, honest_results, rewrite_jsonl, write_manifest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from focus_eval.group_scores import group_line
from focus_eval.results import store
from focus_eval.results.verdict import LineVerdict
from focus_eval.scoring import score_unit
from focus_eval.verification import verify

MODEL = "fake-model"


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return synthetic_root(tmp_path_factory, "data", n=200, seed=3)  # a task with 10 test positives, for the group


@pytest.fixture(scope="module")
def honest(tmp_path_factory, data_root, index):
    out = tmp_path_factory.mktemp("honest")
    model = honest_results(out, data_root, index=index)
    line = group_line(model, "synth_desktop", list(TASKS), METHOD)
    assert line is not None
    store.upsert_line(model, line)
    return out


@pytest.fixture
def results(tmp_path, honest):
    copy = tmp_path / "results"
    shutil.copytree(honest, copy)
    return copy


def model_dir(results):
    return results / MODEL


def by_task(verdicts) -> dict[str, LineVerdict]:
    return {v.task: v for v in verdicts}


def test_an_honest_folder_is_verified_line_by_line(results, data_root, index):
    verdicts = verify([results], data_root=data_root, index=index)
    assert [(v.task, v.kind, v.state, v.reasons) for v in verdicts] == [
        ("dr_synth_desktop", "task", "verified", []), ("glaucoma_synth_desktop", "task", "verified", []),
        ("group:synth_desktop", "group", "verified", [])]
    assert {v.submitter for v in verdicts} == {None}


def test_a_raised_auroc_is_a_mismatch_naming_the_task_and_the_figure(results, data_root, index):
    rows = store.read_results(model_dir(results))
    before = rows[0]["metrics"]["auroc"]
    assert rows[0]["task"] == "dr_synth_desktop" and before <= 0.95
    rewrite_jsonl(model_dir(results) / "results.jsonl", lambda r: r[0]["metrics"].update(auroc=before + 0.05))
    verdicts = by_task(verify([results], data_root=data_root, index=index))
    bad = verdicts["dr_synth_desktop"]
    assert bad.state == "mismatch"
    assert [(f.figure, f.reported, f.recomputed) for f in bad.findings] == [
        ("metrics.auroc", pytest.approx(before + 0.05), before)]
    assert bad.reasons == [f"metrics.auroc: reported {before + 0.05:.6g}, recomputed {before:.6g}"]
    assert verdicts["glaucoma_synth_desktop"].state == "verified"


# (where the value sits in the line, the figure a finding names)
FIGURES = [(("metrics", "auroc"), "metrics.auroc"), (("metrics", "ece"), "metrics.ece"),
           (("ci", "auprc", 0), "ci.auprc[0]"), (("ci", "brier", 1), "ci.brier[1]"), (("n_pos",), "n_pos"),
           (("n",), "n"), (("fairness", "sex", "dp_gap"), "fairness.sex.dp_gap"),
           (("robustness", "quality", "accuracy_gap"), "robustness.quality.accuracy_gap"),
           (("extra", "samples_sha256"), "extra.samples_sha256"), (("task_hash",), "task_hash"),
           (("underpowered",), "underpowered")]


def _change(row, keys, delta):
    *parents, last = keys
    block = row
    for key in parents:
        block = block[key]
    value = block[last]
    if value is None:
        return False
    block[last] = (not value if isinstance(value, bool) else value + 1 if isinstance(value, int)
                   else value[::-1] if isinstance(value, str) else value + delta)
    return True


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(figure=st.sampled_from(FIGURES), delta=st.floats(1e-6, 0.5), line=st.sampled_from([0, 1]))
def test_any_changed_figure_is_a_mismatch_and_only_that_line_is(tmp_path_factory, honest, data_root, index, figure,
                                                                 delta, line):
    keys, name = figure
    results = tmp_path_factory.mktemp("changed") / "results"
    shutil.copytree(honest, results)
    rows = store.read_results(model_dir(results))
    if not _change(rows[line], keys, delta):
        return  # a figure the line has no value for
    store.write_results(model_dir(results), rows)
    verdicts = verify([results], data_root=data_root, index=index)
    changed = rows[line]["task"]
    assert by_task(verdicts)[changed].state == "mismatch"
    assert name in [f.figure for f in by_task(verdicts)[changed].findings]
    assert [v.task for v in verdicts if v.state != "verified"] in ([changed], [changed, "group:synth_desktop"])


def test_figures_within_the_float_tolerance_agree(results, data_root, index):
    rewrite_jsonl(model_dir(results) / "results.jsonl",
                  lambda rows: rows[0]["metrics"].update(auroc=rows[0]["metrics"]["auroc"] * (1 + 1e-12)))
    assert {v.state for v in verify([results], data_root=data_root, index=index)} == {"verified"}


def test_a_sample_label_that_disagrees_with_the_dataset_is_a_mismatch_naming_the_image(results, data_root, index):
    samples = model_dir(results) / "samples" / f"glaucoma_synth_desktop.{METHOD}.jsonl"
    flipped = {}

    def flip(rows):
        rows[2]["label"] = 1 - rows[2]["label"]
        flipped.update(rows[2])

    rewrite_jsonl(samples, flip)
    score_unit(model_dir(results), "glaucoma_synth_desktop", METHOD)  # the line now agrees with its samples
    verdicts = by_task(verify([results], data_root=data_root, index=index))
    bad = verdicts["glaucoma_synth_desktop"]
    assert bad.state == "mismatch"
    assert [f.figure for f in bad.findings] == ["samples.label"]
    assert f"{flipped['image_id']}: sample {flipped['label']}, dataset {1 - flipped['label']}" in bad.reasons[0]
    assert verdicts["dr_synth_desktop"].state == "verified"


def test_samples_of_another_split_twice_or_missing_are_mismatches_with_the_data(results, data_root, index):
    samples = model_dir(results) / "samples" / f"dr_synth_desktop.{METHOD}.jsonl"

    def damage(rows):
        test = [r for r in rows if r["split"] == "test"]
        val = [r for r in rows if r["split"] == "val"]
        test[0]["image_id"] = val[0]["image_id"]  # a validation image scored as a test image
        rows.append(dict(test[1]))  # a test image twice
        rows.remove(test[2])  # a test image left out

    rewrite_jsonl(samples, damage)
    score_unit(model_dir(results), "dr_synth_desktop", METHOD)
    bad = by_task(verify([results], data_root=data_root, index=index))["dr_synth_desktop"]
    assert {f.figure for f in bad.findings} == {"samples.split", "samples.test.duplicates", "samples.test.missing"}
    assert all(f.state == "mismatch" for f in bad.findings)


def test_sample_lines_of_the_train_split_are_a_mismatch_with_or_without_the_data(results, data_root, index):
    samples = model_dir(results) / "samples" / f"dr_synth_desktop.{METHOD}.jsonl"
    rewrite_jsonl(samples, lambda rows: rows.append({**rows[0], "split": "train"}))
    for root in (data_root, None):
        bad = by_task(verify([results], data_root=root, index=index))["dr_synth_desktop"]
        assert bad.state == "mismatch"
        assert "sample lines of the train split: a run writes test and validation rows only" in bad.reasons


def test_a_task_changed_since_the_run_is_a_mismatch_and_another_version_unverifiable(results, data_root, index):
    meta_path = model_dir(results) / "samples" / f"dr_synth_desktop.{METHOD}.meta.json"
    meta = json.loads(meta_path.read_text())
    meta["task_hash"] = "f" * 64
    meta_path.write_text(json.dumps(meta))
    meta_path = model_dir(results) / "samples" / f"glaucoma_synth_desktop.{METHOD}.meta.json"
    meta = json.loads(meta_path.read_text())
    meta["task_version"] = 0.5
    meta_path.write_text(json.dumps(meta))
    for task in TASKS:  # the lines agree with their (edited) meta records
        score_unit(model_dir(results), task, METHOD)
    verdicts = by_task(verify([results], data_root=data_root, index=index))
    assert [(f.state, f.figure) for f in verdicts["dr_synth_desktop"].findings] == [("mismatch", "task_hash")]
    assert [(f.state, f.figure) for f in verdicts["glaucoma_synth_desktop"].findings] == [
        ("unverifiable", "task_version")]
    assert "written for task version 0.5; the installed task is version 1.0" in verdicts[
        "glaucoma_synth_desktop"].reasons


def test_another_focus_eval_version_or_no_manifest_leaves_the_lines_unverifiable(results, data_root, index):
    folder = model_dir(results)
    (manifest,) = folder.glob("run-*.json")
    record = json.loads(manifest.read_text())
    record["versions"]["focus-eval"] = "0.0.1"
    manifest.write_text(json.dumps(record))
    verdicts = verify([results], data_root=data_root, index=index)
    task_lines = [v for v in verdicts if v.kind == "task"]
    assert {v.state for v in task_lines} == {"unverifiable"}
    assert all(v.reasons[0].startswith("written by focus-eval 0.0.1; this is ") for v in task_lines)
    manifest.unlink()
    verdicts = verify([results], data_root=data_root, index=index)
    assert all("no run manifest beside the results" in v.reasons[0] for v in verdicts if v.kind == "task")
    assert by_task(verdicts)["group:synth_desktop"].state == "unverifiable"


def test_a_missing_sample_file_or_meta_record_leaves_the_line_unverifiable(results, data_root, index):
    (model_dir(results) / "samples" / f"dr_synth_desktop.{METHOD}.jsonl").unlink()
    (model_dir(results) / "samples" / f"glaucoma_synth_desktop.{METHOD}.meta.json").unlink()
    verdicts = by_task(verify([results], data_root=data_root, index=index))
    assert verdicts["dr_synth_desktop"].reasons[0] == (f"no sample file dr_synth_desktop.{METHOD}.jsonl: the line "
                                                       "cannot be recomputed")
    assert verdicts["glaucoma_synth_desktop"].reasons[0].startswith("no meta file")
    assert {v.state for v in verdicts.values()} == {"unverifiable", "mismatch"}  # the group cannot be recomputed


def test_a_group_line_is_no_better_than_its_members(results, data_root, index):
    rewrite_jsonl(model_dir(results) / "results.jsonl",
                  lambda rows: rows[1]["metrics"].update(brier=rows[1]["metrics"]["brier"] / 2))
    group = by_task(verify([results], data_root=data_root, index=index))["group:synth_desktop"]
    assert group.state == "mismatch"
    assert [f.check for f in group.findings] == ["member"]
    rewrite_jsonl(model_dir(results) / "results.jsonl", lambda rows: rows[2]["metrics"].update(auroc=0.99))
    group = by_task(verify([results], data_root=data_root, index=index))["group:synth_desktop"]
    assert "metrics.auroc" in [f.figure for f in group.findings]


@pytest.mark.parametrize("name", ["../../../etc/passwd", "/etc/passwd", ".hidden", "a\\b"])
def test_a_line_naming_a_path_is_refused_before_any_file_is_read(results, data_root, index, name):
    rewrite_jsonl(model_dir(results) / "results.jsonl", lambda rows: rows[0].update(task=name))
    (bad, *_) = verify([results], data_root=data_root, index=index)
    assert (bad.task, bad.state) == (name, "mismatch")
    assert bad.reasons == ["the task and method must be plain names (no '/', not hidden)"]


def test_a_line_that_is_not_json_or_off_the_contract_is_a_mismatch(results, data_root, index):
    path = model_dir(results) / "results.jsonl"
    text = path.read_text().splitlines()
    broken = json.loads(text[0])
    del broken["ci"]
    path.write_text("\n".join([json.dumps(broken), text[1], "{not json", text[2]]) + "\n")
    verdicts = verify([results], data_root=data_root, index=index)
    assert [(v.row, v.state) for v in verdicts] == [(1, "mismatch"), (2, "verified"), (3, "mismatch"),
                                                    (4, "mismatch")]
    assert verdicts[0].reasons[0].startswith("not a valid results line: result: missing key 'ci'")
    assert verdicts[2].reasons[0].startswith("not valid JSON")


def test_a_limited_run_is_checked_against_the_first_images_of_the_split(tmp_path, data_root, index):
    model = honest_results(tmp_path / "out", data_root, tasks=("dr_synth_desktop",), index=index, limit=5)
    assert model.name == "limit-5"
    (verdict,) = verify([tmp_path / "out"], data_root=data_root, index=index)
    assert verdict.state == "verified"
    (without,) = verify([tmp_path / "out"], index=index)
    assert without.state == "unverifiable" and "a --limit run covers part of the test split" in without.reasons[0]


def test_a_run_of_another_version_recorded_in_a_later_manifest_counts_by_its_time(results, data_root, index):
    """The manifest of the run that finished the unit decides the version, not a later run's."""
    from datetime import datetime, timezone

    from focus_eval.results.layout import OutputLayout

    later = datetime(2999, 1, 1, tzinfo=timezone.utc)
    write_manifest(OutputLayout(model_dir(results)), later, [f"{t}.{METHOD}" for t in TASKS], MODEL,
                   version="9.9.9")
    assert {v.state for v in verify([results], data_root=data_root, index=index)} == {"verified"}


def test_a_verdict_reads_back_from_its_dict(results, data_root, index):
    rewrite_jsonl(model_dir(results) / "results.jsonl", lambda rows: rows[0].update(n=rows[0]["n"] + 1))
    for verdict in verify([results], data_root=data_root, index=index):
        again = LineVerdict.from_dict(json.loads(json.dumps(verdict.to_dict())))
        assert again.to_dict() == verdict.to_dict() and again.state == verdict.state

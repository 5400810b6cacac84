"""--label-rules: a target's alternative harmonisation is a task <task>@<rule> whose positives are the rule's,
counted here by hand on a miniature synthetic dataset, with the rule in the unit's fingerprint."""

import pytest
from helpers.records import synthetic_root

from focus_eval.data.registry import load_dataset
from focus_eval.errors import FocusError
from focus_eval.options import RunOptions
from focus_eval.task import TaskIndex
from focus_eval.task.variants import expand_label_rules


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return synthetic_root(tmp_path_factory, "data", n=40, seed=13)


def test_severe_rule_moves_the_positives_as_it_says(data_root):
    load = load_dataset("synth_desktop", data_root)
    task = TaskIndex().get("referable_dr_synth_desktop")
    base, severe, grade_only = expand_label_rules([task], ["all"])
    assert (severe.name, grade_only.name) == ("referable_dr_synth_desktop@severe",
                                              "referable_dr_synth_desktop@grade_only")
    # by hand, from the fields the reader recorded
    grades = [(r.dr_grade, "macular_edema" in (r.conditions or ())) for r in load.records]
    assert sum(base.label(r) for r in load.records) == sum(g >= 2 or e for g, e in grades)
    assert sum(severe.label(r) for r in load.records) == sum(g >= 3 or e for g, e in grades)
    assert sum(grade_only.label(r) for r in load.records) == sum(g >= 2 for g, _e in grades)
    moved = [r for r in load.records if base.label(r) != severe.label(r)]
    assert moved and all(r.dr_grade == 2 and base.label(r) == 1 and severe.label(r) == 0 for r in moved)


def test_the_rule_is_in_the_fingerprint(tmp_path, data_root):
    from focus_eval.runner.provenance import changes
    from focus_eval.runner.run import Runner

    runner = Runner(RunOptions(model="tiny-vit", tasks="referable_dr_synth_desktop", data_root=data_root,
                               output_path=tmp_path, label_rules=["severe"]))
    prints = {u.task.name: runner.fingerprint(u) for u in runner.units}
    said = changes(prints["referable_dr_synth_desktop"], prints["referable_dr_synth_desktop@severe"])
    assert any(c.startswith("label_rule") for c in said) and any(c.startswith("task_hash") for c in said)


def test_an_undeclared_rule_is_refused():
    task = TaskIndex().get("referable_dr_synth_desktop")
    with pytest.raises(FocusError, match="no selected task declares sever"):
        expand_label_rules([task], ["sever"])


def test_report_gives_the_change_under_the_rule(tmp_path, data_root):
    import json

    from focus_eval.cli import main
    from focus_eval.results.schema import read_jsonl

    out = tmp_path / "out"
    assert main(["--no-progress", "--num-workers", "0", "--n-boot", "50", "--model", "tiny-vit", "--tasks",
                 "referable_dr_synth_desktop", "--data-root", str(data_root), "--output-path", str(out),
                 "--cache-dir", str(tmp_path / "cache"), "--label-rules", "severe"]) == 0
    rows = {r["task"]: r for r in read_jsonl(out / "tiny-vit" / "results.jsonl")}
    own, severe = rows["referable_dr_synth_desktop"], rows["referable_dr_synth_desktop@severe"]
    assert severe["extra"]["label_rule"] == "severe" and severe["n_pos"] <= own["n_pos"]
    assert main(["report", "label-rule-sensitivity", str(out), "--json", str(tmp_path / "r.json")]) == 0
    (row,) = json.loads((tmp_path / "r.json").read_text())["rows"]
    assert row["rule"] == "severe" and (row["n_pos_own"], row["n_pos_rule"]) == (own["n_pos"], severe["n_pos"])
    assert row["change"] == pytest.approx(severe["metrics"]["auroc"] - own["metrics"]["auroc"])


def test_papila_suspects_counted_positive_on_a_miniature_layout(tmp_path):
    from helpers.raw_layouts import plain

    from focus_eval.synth import raw_papila

    raw_papila.write(tmp_path / "papila", seed=0, image=plain(64, (140, 70, 35)))
    load = load_dataset("papila", tmp_path)
    task = TaskIndex().get("glaucoma_papila")
    own, suspects = expand_label_rules([task], ["suspects_positive"])
    diagnoses = [r.extra["diagnosis"] for r in load.records]
    assert 2 in diagnoses  # the layout has suspects
    assert sum(own.label(r) or 0 for r in load.records) == diagnoses.count(1)
    assert sum(own.label(r) is None for r in load.records) == diagnoses.count(2)
    assert sum(suspects.label(r) for r in load.records) == diagnoses.count(1) + diagnoses.count(2)
    assert sum(suspects.label(r) == 0 for r in load.records) == diagnoses.count(0)


def test_brset_all_patients_rule_widens_the_cohort(tmp_path):
    from helpers.raw_layouts import plain

    from focus_eval.synth import raw_brset

    raw_brset.write(tmp_path / "brset", seed=0, image=plain(64, (140, 70, 35)))
    own, everyone = expand_label_rules([TaskIndex().get("dr_brset")], ["all_patients"])
    assert (own.cohort, everyone.cohort, everyone.name) == ("diabetic", "all", "dr_brset@all_patients")
    diabetic, full = load_dataset("brset", tmp_path, cohort=own.cohort), load_dataset("brset", tmp_path, cohort="all")
    labelled = [r for r in full.records if everyone.label(r) is not None]
    by_hand = [r for r in labelled if r.extra.get("diabetes") == "yes"]
    assert len([r for r in diabetic.records if own.label(r) is not None]) == len(by_hand) < len(labelled)
    # the label rule itself is the task's own: the same image keeps its label
    assert all(own.label(r) == everyone.label(r) for r in labelled)

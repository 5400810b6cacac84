"""FunBench tasks: output types, label spaces read from records, question generation (seeded option order,
distractors, single- and multi-answer forms, the two instruction texts), validation messages, groups, and
encoders running the multi-class tasks through the probe and class-prompt zero-shot."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

import pytest
from helpers.records import image_record, synthetic_root

from focus_eval.errors import FocusError
from focus_eval.task import TaskIndex
from focus_eval.task.questions import MULTI_INSTRUCTION, SINGLE_INSTRUCTION, option_seed

SHIPPED = {
    "funbench_l2b_laterality_brset", "funbench_l2b_laterality_mbrset",
    "funbench_l3a_hemorrhage_brset", "funbench_l3a_drusen_brset", "funbench_l3a_scar_brset",
    "funbench_l3a_nevus_brset",
    "funbench_l4a_normal_abnormal_brset", "funbench_l4a_normal_abnormal_rfmid", "funbench_l4a_normal_abnormal_jsiec",
    "funbench_l4b_conditions_brset", "funbench_l4b_conditions_rfmid", "funbench_l4b_conditions_jsiec",
    "funbench_l4c_dr_grading_brset", "funbench_l4c_dr_grading_mbrset", "funbench_l4c_dr_grading_idrid",
    "funbench_l4c_dr_grading_messidor2",
}
SHIPPED |= {f"funbench_{code}_modality_{d}" for code in ("l1a", "l1b")
            for d in ("oia_odir", "deepdrid", "octdl", "oct2017", "idrid", "idrid_seg", "idrid_loc", "ddr",
                      "retinal_lesions")}
SHIPPED |= {"funbench_l2b_laterality_oia_odir", "funbench_l2b_laterality_deepdrid",
            "funbench_l4a_normal_abnormal_oia_odir", "funbench_l4a_normal_abnormal_octdl",
            "funbench_l4a_normal_abnormal_oct2017", "funbench_l4b_conditions_oia_odir",
            "funbench_l4b_conditions_octdl", "funbench_l4b_conditions_oct2017", "funbench_l4c_dr_grading_deepdrid"}
LESIONS = ("microaneurysm", "hemorrhage", "hard_exudate", "cotton_wool_spot")
SHIPPED |= {f"funbench_{code}_{lesion}_{d}" for lesion in LESIONS for d in ("ddr", "idrid_seg", "retinal_lesions")
            for code in ("l3a", "l3c", "l3d")} | {f"funbench_l3b_{lesion}_idrid_seg" for lesion in LESIONS}
SHIPPED |= {"funbench_l2a_fovea_position_idrid_loc", "funbench_l2b_laterality_idrid_loc",
            "funbench_l2b_laterality_retinal_lesions", "funbench_l4c_dr_grading_ddr",
            "funbench_l4c_dr_grading_retinal_lesions"}
SHIPPED |= {"funbench_l1a_modality_mmc_amd", "funbench_l1b_modality_mmc_amd", "funbench_l4a_normal_abnormal_mmc_amd",
            "funbench_l4d_amd_category_mmc_amd"}
SHIPPED |= {"funbench_l1a_modality_octid", "funbench_l1b_modality_octid", "funbench_l4a_normal_abnormal_octid",
            "funbench_l4b_conditions_octid"}
SHIPPED |= {"funbench_l1a_modality_neh", "funbench_l1b_modality_neh", "funbench_l4a_normal_abnormal_neh",
            "funbench_l4b_conditions_neh"}
SHIPPED |= {f"funbench_l3{c}_{lesion}_retouch" for c in "acd" for lesion in ("irf", "srf", "ped")}
SHIPPED |= {"funbench_l1a_modality_top", "funbench_l1b_modality_top", "funbench_l2b_laterality_top",
            "funbench_l4a_normal_abnormal_top", "funbench_l4b_conditions_top"}
RARE = ("vitreous_hemorrhage", "preretinal_hemorrhage", "new_vessels", "fibrous_proliferation")
SHIPPED |= {f"funbench_{code}_{lesion}_retinal_lesions" for lesion in RARE for code in ("l3a", "l3c", "l3d")}
SHIPPED |= {f"funbench_l3b_{lesion}_retinal_lesions" for lesion in LESIONS + RARE}
# on datasets FunBench does not use: the group funbench_extended, outside funbench and its level groups
EXTENDED = {t for t in SHIPPED if t.endswith(("_brset", "_mbrset", "_messidor2"))}
POOLED = {"funbench_l1b_modality_funbench_pool"}  # its own group, funbench_l1b_pooled, beside the per-dataset L1b
SYNTH = {"funbench_l2b_laterality_synth_desktop", "funbench_l3a_haemorrhage_synth_desktop",
         "funbench_l4a_normal_abnormal_synth_desktop", "funbench_l4b_conditions_synth_desktop",
         "funbench_l4c_dr_grading_synth_desktop"}


record = partial(image_record, "brset")


def test_shipped_funbench_tasks_and_groups(index):
    funbench = {t.name for t in index.tasks() if t.name.startswith("funbench_")}
    assert funbench == SHIPPED | SYNTH | POOLED
    groups = index.groups
    assert set(groups["funbench_l1b_pooled"].tasks) == POOLED
    single = {t for t in SHIPPED if t.startswith("funbench_l1b_") and not t.endswith(("_deepdrid", "_mmc_amd"))}
    assert set(groups["funbench"].tasks) == SHIPPED - single - EXTENDED
    assert len(EXTENDED) == 11 and set(groups["funbench_extended"].tasks) == EXTENDED
    assert set(groups["funbench_l1b_single_modality"].tasks) == single and len(single) == 11
    assert set(groups["funbench_synth_desktop"].tasks) == SYNTH
    for level in ("l2", "l3", "l4"):
        assert set(groups[f"funbench_{level}"].tasks) == {t for t in SHIPPED - EXTENDED
                                                           if t.startswith(f"funbench_{level}")}
    types = {t.name: t.output_type for t in index.tasks() if t.name in SYNTH}
    assert set(types.values()) == {"multiple_choice", "multiclass", "multilabel"}
    assert index.expand("funbench_*synth*") == sorted(SYNTH)
    # a pattern reaches FunBench tasks only when it says funbench: *_brset stays the yes/no suite
    assert index.expand("*_synth_desktop") == ["dr_synth_desktop", "glaucoma_synth_desktop",
                                               "referable_dr_synth_desktop"]
    assert index.expand("*_brset") == ["dr_brset", "glaucoma_brset", "referable_dr_brset"]
    assert index.expand("funbench_l4c_*") == sorted(t for t in SHIPPED if t.startswith("funbench_l4c"))


def test_labels_come_from_the_record_fields(index):
    laterality = index.get("funbench_l2b_laterality_brset")
    assert laterality.label(record(laterality="right")) == 1 and laterality.label(record()) is None
    grading = index.get("funbench_l4c_dr_grading_idrid")
    assert grading.label(record(dr_grade=3)) == 3 and grading.label_space.ordinal
    lesion = index.get("funbench_l3a_hemorrhage_brset")
    assert lesion.label(record(findings={"hemorrhage": 1})) == 1
    assert lesion.label(record(findings={"drusen": 1})) is None  # not annotated -> excluded
    conditions = index.get("funbench_l4b_conditions_brset")
    assert conditions.multilabel
    assert conditions.label(record(conditions=("diabetic_retinopathy", "macular_edema"))) == [1, 2]
    assert conditions.label(record(conditions=())) is None  # abnormal, no listed condition
    assert conditions.label_vector(record(conditions=("normal",))) == [1] + [0] * 8
    jsiec = index.get("funbench_l4b_conditions_jsiec")
    assert not jsiec.multilabel and jsiec.label(record(conditions=("1.0.DR2",))) == 4
    notes = grading.output_notes()
    assert notes["classes"] == ["no_dr", "mild", "moderate", "severe", "proliferative"] and notes["ordinal"]


def test_questions_are_reproducible_by_seed_with_the_funbench_instructions(index):
    task = index.get("funbench_l4c_dr_grading_brset")
    seed = option_seed(0, task.name, "img1")
    first = task.question.render(task, record(dr_grade=2), 2, seed)
    again = task.question.render(task, record(dr_grade=2), 2, option_seed(0, task.name, "img1"))
    assert first == again and sorted(first.options) == [0, 1, 2, 3, 4]
    assert first.prompt.startswith(SINGLE_INSTRUCTION + "\nWhat is the diabetic retinopathy grade")
    assert first.answer == "ABCDE"[first.options.index(2)]
    assert f"{first.answer}. moderate non-proliferative diabetic retinopathy" in first.prompt
    orders = {tuple(task.question.render(task, None, 2, option_seed(s, task.name, "img1")).options) for s in range(8)}
    assert len(orders) > 1  # another run seed shuffles differently
    multi = index.get("funbench_l4b_conditions_rfmid")
    asked = multi.question.render(multi, None, [1, 36], 11)
    assert asked.prompt.startswith(MULTI_INSTRUCTION) and len(asked.options) == 2 + 4  # truths + 4 distractors
    letters = asked.answer.split(",")
    assert [asked.options["ABCDEF".index(x)] for x in letters] == sorted([1, 36], key=asked.options.index)
    two = index.get("funbench_l2b_laterality_mbrset").question.render(
        index.get("funbench_l2b_laterality_mbrset"), None, 0, 5)
    assert sorted(two.options) == [0, 1] and two.prompt.count("\n") == 3


def write_task(tmp_path, body: str) -> Path:
    path = tmp_path / "funbench_custom_synth_desktop.yaml"
    path.write_text("task: funbench_custom_synth_desktop\ninclude: _base_funbench.yaml\ndataset: synth_desktop\n"
                    "metadata: {version: 1, label_rule: by hand}\n" + body)
    return path


@pytest.mark.parametrize("body, message", [
    ("target: laterality\nclasses: [{name: left, value: left}, {name: right, value: right}]\n"
     "output_type: ordinal\n", "unknown output_type"),
    ("target: laterality\n", r"missing required key\(s\) classes"),
    ("target: laterality\nclasses: [{name: left, value: left}]\nquestion: {text: 'Which eye?'}\n",
     "at least two classes"),
    ("target: laterality\nclasses: [{name: left, value: left}, {name: left, value: right}]\n"
     "question: {text: 'Which eye?'}\n", "given twice"),
    ("target: laterality\nclasses: [{name: left, value: left}, {name: right, value: right}]\n", "'question' block"),
    ("target: laterality\nclasses: [{name: left, value: left}, {name: right, value: right}]\n"
     "question: {text: 'Which eye?', answer: multi}\n", "reads its labels from a list field"),
    ("target: age\nclasses: [{name: young, value: 1}, {name: old, value: 2}]\nquestion: {text: 'How old?'}\n",
     "unknown target 'age'"),
    ("target: laterality\nclasses: [{name: left, value: left}, {name: right, value: right}]\n"
     "question: {text: 'Which eye?'}\nzero_shot: {up: [x]}\n", r"unknown: \[.up.\]"),
    ("target: laterality\nclasses: [{name: left, value: left}, {name: right, value: right}]\n"
     "question: {text: 'Which eye, {{ record }}?'}\n", "outside the prompt context"),
    ("target: laterality\nclasses: [{name: left, value: left}, {name: right, value: right}]\n"
     "question: {text: 'Which eye?', distractors: 0}\n", "distractors"),
    ("target: laterality\nclasses: [{name: left, value: left}, {name: right, value: right}]\n"
     "question: {text: 'Which eye?', always: [middle]}\n", "always names unknown class"),
    ("target: laterality\nclasses: [{name: left, value: left}, {name: right, value: right}]\n"
     "question: {text: 'Which eye?', always: left}\n", "always must be a list"),
    ("output_type: multilabel\ntarget: conditions\nclasses: [{name: a, value: a}, {name: b, value: b}]\n"
     "question: {answer: single}\n", "must be multi"),
    ("target: laterality\nclasses: [{name: left, value: left}, {name: right, value: right}]\n"
     "question: {text: 'Which eye?'}\nmetric_list: [{metric: auroc}]\n", "unknown metric 'auroc'"),
])
def test_bad_task_files_are_errors_naming_the_file(tmp_path, body, message):
    path = write_task(tmp_path, body)
    with pytest.raises(FocusError, match=message) as error:
        TaskIndex(include_paths=[tmp_path])
    assert str(path) in str(error.value)


def test_a_multiclass_task_without_a_question_gets_the_default_one(tmp_path):
    write_task(tmp_path, "output_type: multiclass\ntarget: dr_grade\n"
                         "classes: [{name: none, value: 0}, {name: some, value: [1, 2, 3, 4], option: retinopathy}]\n")
    task = TaskIndex(include_paths=[tmp_path]).get("funbench_custom_synth_desktop")
    assert task.label(record(dr_grade=3)) == 1
    assert task.zero_shot["some"] == ["A fundus photograph showing retinopathy."]
    assert "Which of the following options best describes" in task.question.render(task, None, 0, 1).prompt


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return synthetic_root(tmp_path_factory, "data", n=80, seed=1)


def test_tasks_command_counts_test_images_and_rows_beyond_the_first_class(data_root, capsys):
    from focus_eval.cli import main
    from focus_eval.data.registry import load_dataset

    assert main(["tasks", "funbench_l4c_dr_grading_synth_desktop,funbench_l4b_conditions_synth_desktop",
                 "--data-root", str(data_root)]) == 0
    printed = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[1:]}
    load = load_dataset("synth_desktop", data_root)
    test = [r for r in load.records if r.split == "test"]
    grading = printed["funbench_l4c_dr_grading_synth_desktop"]
    assert grading[6:8] == [str(len(test)), str(sum(r.dr_grade >= 1 for r in test))]
    conditions = printed["funbench_l4b_conditions_synth_desktop"]
    assert conditions[7] == str(sum(r.conditions != ("normal",) for r in test))


@pytest.mark.slow
def test_encoders_score_every_multiclass_task_with_probe_and_class_prompts(tmp_path, data_root):
    from focus_eval.cli import main
    from focus_eval.results.schema import read_jsonl, validate_result_dict, validate_sample_dict

    out = tmp_path / "out"
    assert main(["--model", "tiny-clip", "--tasks", "funbench_synth_desktop", "--data-root", str(data_root),
                 "--output-path", str(out), "--cache-dir", str(tmp_path / "cache"), "--n-boot", "30",
                 "--no-progress"]) == 0
    rows = read_jsonl(out / "tiny-clip" / "results.jsonl")
    lines = [r for r in rows if r.get("kind") != "group"]
    assert {(r["task"], r["method"]) for r in lines} == {(t, m) for t in SYNTH for m in ("linear_probe", "zero_shot")}
    for r in rows:
        validate_result_dict(r) if r.get("kind") != "group" else None
    for r in lines:
        assert r["n"] > 0 and r["output_type"] in ("multiple_choice", "multiclass", "multilabel")
        assert r["extra"]["random_guess"]["funbench_f1"] is not None and r["extra"]["confusion_matrix"]
        for sample in read_jsonl(out / "tiny-clip" / "samples" / f"{r['task']}.{r['method']}.jsonl"):
            validate_sample_dict(sample)
            assert len(sample["probs"]) == len(r["extra"]["classes"])
    probe = next(r for r in lines if r["task"].startswith("funbench_l4c") and r["method"] == "linear_probe")
    assert probe["extra"]["probe"] == "standardised multinomial" and probe["extra"]["c_selection"] == "val_log_loss"
    assert probe["metrics"]["qw_kappa"] is not None
    zero = next(r for r in lines if r["task"].startswith("funbench_l4b") and r["method"] == "zero_shot")
    assert zero["extra"]["class_rule"] == "every class at P >= 1/K"


def test_the_tasks_command_lists_the_rare_lesions_and_only_funbench_sources(capsys):
    from focus_eval.cli import main

    assert main(["tasks", "funbench_l3*"]) == 0
    listed = capsys.readouterr().out
    for lesion in RARE:
        for code in ("l3a", "l3b", "l3c", "l3d"):
            assert f"funbench_{code}_{lesion}_retinal_lesions" in listed
    assert main(["tasks", "funbench"]) == 0
    listed = capsys.readouterr().out
    names = set(re.findall(r"^(funbench_\w+)", listed, re.M))
    assert names == set(TaskIndex().expand("funbench")) and len(names) == 112
    assert not any(n.endswith(("_brset", "_mbrset", "_messidor2")) for n in names)
    assert main(["tasks", "funbench_extended"]) == 0
    assert set(re.findall(r"^(funbench_\w+)", capsys.readouterr().out, re.M)) == EXTENDED

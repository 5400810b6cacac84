"""FunBench tasks of the lesion and localization datasets: labels read from the record fields (L2a fovea
position, L3b multi-answer sectors with "not observed", L3c size and L3d count bins, DDR's ungradable grade),
the mode skips of their base files, and a tiny MLLM answering them on the miniature raw layouts."""

from __future__ import annotations

import json
from functools import partial

import pytest
from helpers.records import image_record


record = partial(image_record, "idrid_seg")


def test_fovea_position_and_laterality_from_the_centres(index):
    position = index.get("funbench_l2a_fovea_position_idrid_loc")
    assert position.label(record(fovea_position="left")) == 0 and position.label(record()) is None
    assert index.get("funbench_l2b_laterality_idrid_loc").label(record(laterality="right")) == 1


def test_positions_are_multi_answer_with_not_observed(index):
    task = index.get("funbench_l3b_hemorrhage_idrid_seg")
    assert task.multilabel and task.label_space.names == ["nasal", "temporal", "superior", "inferior",
                                                          "not_observed"]
    assert task.label(record(lesion_quadrants={"hemorrhage": ("temporal", "inferior")})) == [1, 3]
    assert task.label(record(lesion_quadrants={"hemorrhage": ("not_observed",)})) == [4]
    assert task.label(record(lesion_quadrants={"microaneurysm": ("nasal",)})) is None  # no disc centre: excluded


def test_size_and_count_bins_are_ordinal_classes(index):
    size = index.get("funbench_l3c_hard_exudate_ddr")
    assert size.label_space.ordinal and size.label_space.names == ["none", "small", "medium", "large"]
    assert size.label(record(lesion_size={"hard_exudate": "medium"})) == 2
    count = index.get("funbench_l3d_microaneurysm_retinal_lesions")
    assert count.label_space.names == ["none", "few", "several", "many"]
    assert [count.label(record(lesion_count={"microaneurysm": b})) for b in ("none", "1-5", "6-20", "over_20")] \
        == [0, 1, 2, 3]


def test_ddr_grading_keeps_the_ungradable_class(index):
    ddr = index.get("funbench_l4c_dr_grading_ddr")
    assert ddr.label_space.names[-1] == "ungradable" and not ddr.label_space.ordinal
    assert ddr.label(record(dr_grade=5)) == 5 and ddr.label(record(dr_grade=2)) == 2
    assert index.get("funbench_l4c_dr_grading_retinal_lesions").label(record(dr_grade=5)) is None


@pytest.mark.parametrize("name, skipped", [
    ("funbench_l2a_fovea_position_idrid_loc", {"ve_probe", "linear_probe", "knowledge_prompt"}),
    ("funbench_l3b_hemorrhage_idrid_seg", {"ve_probe", "linear_probe", "knowledge_prompt"}),
    ("funbench_l3c_hemorrhage_ddr", {"ve_probe", "linear_probe", "knowledge_prompt"}),
    ("funbench_l3d_hemorrhage_retinal_lesions", {"ve_probe", "linear_probe", "knowledge_prompt"}),
    ("funbench_l3a_hemorrhage_idrid_seg", set()), ("funbench_l2b_laterality_idrid_loc", set())])
def test_mode_skips_with_reasons(index, name, skipped):
    skips = index.get(name).skip_methods
    assert set(skips) == skipped and all(isinstance(r, str) and r.endswith(".") for r in skips.values())


@pytest.mark.slow
def test_a_tiny_mllm_answers_them_on_the_miniature_layouts(tmp_path, capsys):
    from focus_eval.cli import main
    from focus_eval.synth import layouts

    for name in ("ddr", "idrid_seg", "idrid_loc", "retinal_lesions"):
        layouts.write_layout(name, tmp_path / "data" / layouts.folder_name(name), seed=1)
    tasks = ["funbench_l2a_fovea_position_idrid_loc", "funbench_l3b_hemorrhage_idrid_seg",
             "funbench_l3d_microaneurysm_ddr", "funbench_l4c_dr_grading_ddr", "funbench_l3c_hemorrhage_retinal_lesions"]
    assert main(["--model", "tiny-medgemma", "--tasks", ",".join(tasks), "--data-root", str(tmp_path / "data"),
                 "-o", str(tmp_path / "out"), "--no-progress"]) == 0
    lines = [json.loads(line) for line in (tmp_path / "out/tiny-medgemma/results.jsonl").read_text().splitlines()]
    by_task = {line["task"]: line for line in lines}
    assert set(by_task) == set(tasks) and {line["method"] for line in lines} == {"multiple_choice"}
    # test images with a label: 6 idrid_loc test images, 4 idrid_seg ones with a disc, 3 DDR lesion images,
    # 8 graded DDR images (the ungradable one included)
    assert [by_task[t]["n"] for t in tasks[:4]] == [6, 4, 3, 8]

"""FunBench tasks on the OIA-ODIR, DeepDRiD, OCTDL and OCT2017 datasets: L1a/L1b modality (skipped by the
probe and knowledge modes, with reasons), laterality, normal vs abnormal, conditions and grading read from
the new records; the L1 group; and FunBench's F1 on a task whose truth has a single class (L1a)."""

import warnings
from functools import partial

import numpy as np
import pytest
from helpers.records import image_record

from focus_eval.metrics.classes import ClassArrays, class_metrics, confusion, random_guess

DATASETS = ("oia_odir", "deepdrid", "octdl", "oct2017", "idrid", "idrid_seg", "idrid_loc", "ddr", "retinal_lesions",
            "mmc_amd", "octid", "neh", "top")


record = partial(image_record, "octdl")


def test_modality_tasks_on_every_dataset_and_the_l1_group(index):
    l1 = {f"funbench_{code}_modality_{d}" for code in ("l1a", "l1b") for d in DATASETS}
    # L1b is scored on the datasets holding several modalities; the single-modality ones are a group apart
    single = {f"funbench_l1b_modality_{d}" for d in DATASETS if d not in ("deepdrid", "mmc_amd")}
    assert set(index.groups["funbench_l1"].tasks) == l1 - single
    assert set(index.groups["funbench_l1b_single_modality"].tasks) == single
    assert l1 - single <= set(index.groups["funbench"].tasks)
    assert not single & set(index.groups["funbench"].tasks)
    for name in l1:
        task = index.get(name)
        assert set(task.skip_methods) == {"ve_probe", "linear_probe", "knowledge_prompt"}
        assert all(reason.endswith(".") for reason in task.skip_methods.values())


def test_l1a_truth_is_always_the_fundus_option(index):
    coarse = index.get("funbench_l1a_modality_octdl")
    assert [coarse.label(record(modality=m)) for m in ("cfp", "oct", "uwf")] == [0, 0, 0]
    assert coarse.label(record()) is None
    assert coarse.label_space.names == ["fundus", "natural", "painting", "remote_sensing"]
    assert coarse.question.distractors == 3


def test_l1b_truth_is_the_record_modality(index):
    fine = index.get("funbench_l1b_modality_deepdrid")
    assert [fine.label(record(modality=m)) for m in ("cfp", "oct", "uwf")] == [0, 1, 2]
    assert fine.label_space.names == ["cfp", "oct", "uwf", "xray", "mri"]
    # every question offers the three retinal modalities and one of X-ray and MRI
    for seed in range(20):
        drawn = fine.question.draw(2, fine.n_classes, seed)
        assert len(drawn) == 4 and {0, 1, 2} <= set(drawn) and len(set(drawn) & {3, 4}) == 1


def test_disease_tasks_read_the_new_records(index):
    assert index.get("funbench_l4a_normal_abnormal_octdl").label(record(abnormal=1)) == 1
    octdl = index.get("funbench_l4b_conditions_octdl")
    assert not octdl.multilabel and octdl.label(record(conditions=("RVO",))) == 5
    assert index.get("funbench_l4b_conditions_oct2017").label(record(conditions=("normal",))) == 0
    odir = index.get("funbench_l4b_conditions_oia_odir")
    assert odir.multilabel and odir.label(record(conditions=("glaucoma", "cataract"))) == [2, 3]
    assert odir.label(record(conditions=None)) is None
    assert index.get("funbench_l4c_dr_grading_deepdrid").label(record(dr_grade=4)) == 4
    assert index.get("funbench_l2b_laterality_oia_odir").label(record(laterality="left")) == 0


def single_class_rows(preds):
    probs = {0: [0.7, 0.1, 0.1, 0.1], 2: [0.2, 0.1, 0.6, 0.1], None: None}
    return [{"image_id": f"i{i}", "patient_id": f"p{i}", "label": 0, "pred": p, "probs": probs[p],
             "options": [0, 1, 2, 3]} for i, p in enumerate(preds)]


def test_funbench_f1_with_a_single_true_class_is_the_share_answered_correctly():
    # L1a: every image is a fundus image. Classes absent from the truth have no sensitivity and leave the
    # mean; the fundus class has no negatives, so its F1 is its sensitivity.
    arrays = ClassArrays.from_samples(single_class_rows([0, 0, 2, 0, None]), 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metrics, intervals = class_metrics(arrays, np.ones((1, arrays.n)))
        guess = random_guess(arrays)
    assert metrics["funbench_f1"] == pytest.approx(3 / 5) == metrics["accuracy"]
    assert metrics["macro_auroc"] is None and metrics["qw_kappa"] is None  # no class has both outcomes
    # scikit-learn's convention: the wrongly answered painting class counts with precision and recall 0
    assert metrics["macro_recall"] == pytest.approx((3 / 5 + 0) / 2)
    assert metrics["macro_f1"] == pytest.approx((2 * 3 / (2 * 3 + 2) + 0) / 2)
    assert guess["funbench_f1"] == pytest.approx(0.25) == guess["accuracy"]  # FunBench's L1a random guess
    assert confusion(arrays, ["fundus", "natural", "painting", "remote_sensing"])["counts"][0] == [3, 0, 1, 0, 1]


def test_funbench_f1_of_a_perfect_single_class_answer_is_one():
    arrays = ClassArrays.from_samples(single_class_rows([0, 0, 0]), 4)
    metrics, _ = class_metrics(arrays, np.ones((1, arrays.n)))
    assert metrics["funbench_f1"] == 1.0 and metrics["macro_f1"] == 1.0


@pytest.mark.slow
def test_a_tiny_mllm_runs_the_octdl_tasks_in_every_mode_on_the_miniature_layout(tmp_path):
    import json

    from focus_eval.cli import main
    from focus_eval.synth.layouts import write_layout

    data = tmp_path / "data"
    for name in ("oia_odir", "deepdrid", "octdl", "oct2017"):
        write_layout(name, data / name, seed=0)
    assert main(["datasets", "check", "--data-root", str(data), "oia_odir", "deepdrid", "octdl", "oct2017"]) == 0
    assert main(["--model", "tiny-medgemma", "--tasks", "funbench_*_octdl", "--data-root", str(data),
                 "--methods", "multiple_choice,ve_probe,knowledge_prompt", "-o", str(tmp_path / "out"),
                 "--no-progress"]) == 0
    lines = [json.loads(line) for line in (tmp_path / "out/tiny-medgemma/results.jsonl").read_text().splitlines()]
    scored = {(line["task"], line["method"]) for line in lines}
    assert scored == {("funbench_l1a_modality_octdl", "multiple_choice"),
                      ("funbench_l1b_modality_octdl", "multiple_choice"),
                      ("funbench_l4a_normal_abnormal_octdl", "multiple_choice"),
                      ("funbench_l4a_normal_abnormal_octdl", "ve_probe"),
                      *{("funbench_l4b_conditions_octdl", m) for m in ("multiple_choice", "ve_probe", "knowledge_prompt")}}
    coarse = next(line for line in lines if line["task"] == "funbench_l1a_modality_octdl")
    assert coarse["n_pos"] == 0 and coarse["extra"]["random_guess"]["funbench_f1"] == pytest.approx(0.25)

"""FunBench fields on a user's own data: a dataset card maps laterality, dr_grade, findings.<lesion>, abnormal
and conditions, read with the shipped readers' cell rules; the generated tasks then include the FunBench tasks
those fields allow (group ``<name>_funbench``), and a tiny MLLM runs L4c DR grading on the clinic's images."""

from __future__ import annotations

import json

import pytest

from focus_eval.cli import main
from focus_eval.data.manifests import register_manifests
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError, FocusError
from focus_eval.task import TaskIndex
from helpers.open_fixtures import CARD, clean_cards, manifest_rows, write_clinic  # noqa: F401

pytestmark = pytest.mark.usefixtures("clean_cards")
FUNBENCH_CARD = CARD.replace(
    "columns: {{patient_id: patient, laterality: eye}}",
    "columns: {{patient_id: patient, laterality: eye, dr_grade: icdr, findings.hemorrhage: hem, "
    "abnormal: abn, conditions: cond}}") + "conditions: [diabetic_retinopathy, glaucoma]\n"


def funbench_rows(n_patients=10):
    rows = manifest_rows(n_patients=n_patients)
    for i, row in enumerate(rows):
        row.update(icdr=row["dr_grade"], hem="yes" if i % 3 == 0 else "no",
                   abn=int(row["dr_grade"] > 0 or row["glaucoma"] == 1),
                   cond=";".join(c for c, on in (("diabetic_retinopathy", row["dr_grade"] > 0),
                                                 ("glaucoma", row["glaucoma"] == 1)) if on) or "normal")
    return rows


def clinic(tmp_path, rows=None, card=FUNBENCH_CARD):
    folder = write_clinic(tmp_path / "clinic", funbench_rows() if rows is None else rows,
                          card=card.format(manifest="manifest.csv"))
    register_manifests(None, [f"clinic={folder}"])
    return folder


def test_mapped_funbench_fields_are_read_by_the_shipped_rules(tmp_path):
    rows = funbench_rows()
    clinic(tmp_path, rows)
    load = load_dataset("clinic", tmp_path)
    by_id = {r.image_id: r for r in load.records}
    for row in rows:
        record = by_id[row["image"].rsplit(".", 1)[0]]
        assert record.dr_grade == row["dr_grade"] and record.abnormal == row["abn"]
        assert record.findings == {"hemorrhage": int(row["hem"] == "yes")}
        assert record.laterality == {"R": "right", "L": "left"}[row["eye"]]
        assert record.conditions == (("normal",) if row["cond"] == "normal" else tuple(row["cond"].split(";")))


def test_generated_funbench_tasks_follow_the_mapped_fields(tmp_path):
    clinic(tmp_path)
    index = TaskIndex([])
    assert index.expand("clinic") == ["dr_clinic", "referable_dr_clinic", "glaucoma_clinic"]
    assert index.expand("clinic_funbench") == [
        "funbench_l2b_laterality_clinic", "funbench_l3a_hemorrhage_clinic", "funbench_l4a_normal_abnormal_clinic",
        "funbench_l4b_conditions_clinic", "funbench_l4c_dr_grading_clinic"]
    grading = index.get("funbench_l4c_dr_grading_clinic")
    assert grading.target == "dr_grade" and grading.dataset == "clinic" and grading.n_classes == 5
    conditions = index.get("funbench_l4b_conditions_clinic")
    assert conditions.multilabel and [c.option for c in conditions.label_space.classes] == [
        "normal fundus", "diabetic retinopathy", "glaucoma"]


@pytest.mark.parametrize("column, value, message", [
    ("icdr", "7", "column 'icdr': '7' is not a grade in [0, 1, 2, 3, 4]"),
    ("hem", "maybe", "column 'hem': unknown code 'maybe'"),
    ("cond", "cataract", "unknown condition(s) ['cataract']"),
    ("cond", "normal;glaucoma", "'normal' cannot stand beside a condition"),
])
def test_a_bad_funbench_cell_is_an_error_naming_file_row_and_column(tmp_path, column, value, message):
    rows = funbench_rows()
    rows[3][column] = value
    clinic(tmp_path, rows)
    with pytest.raises(DataError) as caught:
        load_dataset("clinic", tmp_path)
    assert "manifest.csv, row 5" in str(caught.value) and message in str(caught.value)


def test_a_grade_the_dr_target_excludes_is_no_grade(tmp_path):
    rows = funbench_rows()
    rows[0]["dr_grade"] = "ungradable"
    clinic(tmp_path, rows, card=FUNBENCH_CARD.replace("dr_grade: icdr", "dr_grade: dr_grade"))
    record = next(r for r in load_dataset("clinic", tmp_path).records if r.image_id == rows[0]["image"][:-4])
    assert record.dr_grade is None and record.dr is None


def test_card_mistakes_about_funbench_fields(tmp_path):
    with pytest.raises(FocusError, match="not a field: diagnosis"):
        clinic(tmp_path / "a", card=CARD.replace("laterality: eye}}", "laterality: eye, diagnosis: dx}}"))
    with pytest.raises(FocusError, match="'conditions' must list the condition names"):
        clinic(tmp_path / "b", card=FUNBENCH_CARD.replace("conditions: [diabetic_retinopathy, glaucoma]\n", ""))


def test_a_tiny_mllm_runs_dr_grading_on_the_clinics_images(tmp_path):
    folder = clinic(tmp_path)
    out = tmp_path / "out"
    assert main(["--model", "tiny-qwen-vl", "--methods", "multiple_choice", "--tasks",
                 "funbench_l4c_dr_grading_clinic", "--data-root", str(tmp_path), "--dataset-path",
                 f"clinic={folder}", "--output-path", str(out), "--cache-dir", str(tmp_path / "cache"),
                 "--n-boot", "20", "--no-progress", "--num-workers", "0", "--batch-size", "4"]) == 0
    (line,) = [json.loads(x) for x in (out / "tiny-qwen-vl" / "results.jsonl").read_text().splitlines()
               if json.loads(x).get("kind") != "group"]
    assert line["task"] == "funbench_l4c_dr_grading_clinic" and line["dataset"] == "clinic"
    assert line["n"] > 0 and line["metrics"]["funbench_f1"] is not None and "coverage" in line
    samples = (out / "tiny-qwen-vl" / "samples" / "funbench_l4c_dr_grading_clinic.multiple_choice.jsonl")
    first = json.loads(samples.read_text().splitlines()[0])
    assert "diabetic retinopathy grade" in first["question"] and len(first["options"]) == 5

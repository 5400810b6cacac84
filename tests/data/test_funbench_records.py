"""The label fields FunBench tasks read (laterality, DR grade, findings, abnormal, conditions): each reader on its
miniature raw layout, stated by hand from the rules in docs/DATASETS.md, and their counts in `datasets check`."""

from __future__ import annotations

import json

import pytest
from helpers.raw_layouts import plain

from focus_eval.cli import main
from focus_eval.data.cells import normal_and_conditions
from focus_eval.data.registry import read_dataset
from focus_eval.data.records import ImageRecord


blank = plain(48, (120, 60, 30))


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    from focus_eval.synth import raw_brset, raw_idrid, raw_jsiec, raw_mbrset, raw_messidor2, raw_rfmid

    root = tmp_path_factory.mktemp("raw")
    for name, module in (("brset", raw_brset), ("mbrset", raw_mbrset), ("rfmid", raw_rfmid), ("jsiec", raw_jsiec),
                         ("idrid", raw_idrid), ("messidor2", raw_messidor2)):
        module.write(root / name, 0, image=blank)
    return root


def by_id(root, name):
    return {r.image_id: r for r in read_dataset(name, root).records}


def test_brset_laterality_grade_findings_and_conditions(root):
    records = by_id(root, "brset")
    one, two = records["img00001"], records["img00002"]
    assert (one.laterality, two.laterality) == ("right", "left")  # exam_eye 1 right, 2 left
    assert one.abnormal == 0 and one.conditions == ("normal",) and one.dr_grade == 0
    assert set(one.findings) >= {"hemorrhage", "drusen", "scar", "nevus", "amd", "diabetic_retinopathy"}
    assert not any(one.findings.values())
    # img00019: ICDR 4, hemorrhage and scar -> abnormal; conditions are the disease findings only
    r19 = records["img00019"]
    assert r19.dr_grade == 4 and r19.findings["hemorrhage"] == 1 and r19.findings["scar"] == 1
    assert r19.abnormal == 1 and r19.conditions == ("diabetic_retinopathy",)
    assert records["img00027"].conditions == ("amd", "increased_cup_disc")  # drusen is a lesion, not listed
    assert records["img00003"].abnormal == 1 and records["img00003"].conditions == ()  # only a nevus
    assert records["img00033"].conditions == ("diabetic_retinopathy", "macular_edema", "increased_cup_disc")
    assert records["img00008"].findings["drusen"] == 1 and records["img00008"].value("findings.drusen") == 1
    assert records["img00017"].conditions == ("macular_edema",)  # edema at ICDR 0
    assert records["img00017"].extra["hemorrhage"] == "0"  # source columns stay in extra as written


def test_mbrset_idrid_messidor2_grades_and_laterality(root):
    mbrset = by_id(root, "mbrset")
    assert mbrset["1.1"].laterality == "right" and mbrset["1.3"].laterality == "left"
    assert mbrset["4.2"].laterality == "left"  # the file's exception to the view rule is read, not guessed
    assert mbrset["7.1"].dr_grade == 4 and mbrset["2.2"].dr_grade is None
    assert mbrset["1.1"].extra["laterality"] == "right"
    assert all(r.findings == {} and r.conditions is None for r in mbrset.values())
    idrid = read_dataset("idrid", root).records
    assert {r.dr_grade for r in idrid} <= set(range(5)) and all(r.dr_grade == r.extra["retinopathy_grade"]
                                                               for r in idrid)
    messidor = read_dataset("messidor2", root).records
    assert all(r.dr_grade == r.extra["adjudicated_dr_grade"] and r.laterality is None for r in messidor)


def test_rfmid_disease_risk_and_condition_columns(root):
    records = by_id(root, "rfmid")
    assert records["train/2"].abnormal == 0 and records["train/2"].conditions == ("normal",)
    assert records["train/4"].abnormal == 1 and records["train/4"].conditions == ("DR", "CME")
    assert records["test/8"].conditions == ("DR", "LS")
    assert records["train/4"].dr_grade is None and records["train/4"].laterality is None


def test_jsiec_normal_folder_and_class_conditions(root):
    records = read_dataset("jsiec", root).records
    for r in records:
        folder = r.extra["class_folder"]
        assert r.abnormal == int(folder != "0.0.Normal")
        assert r.conditions == (("normal",) if folder == "0.0.Normal" else (folder,))


def test_normal_and_conditions_rule():
    assert normal_and_conditions({"a": 0, "b": 0}, ["a"]) == (0, ("normal",))
    assert normal_and_conditions({"a": 1, "b": None}, ["a"]) == (1, ("a",))
    assert normal_and_conditions({"a": None, "b": 1}, ["a"]) == (1, None)
    assert normal_and_conditions({"a": 0, "b": None}, ["a"]) == (None, None)
    record = ImageRecord("d", "i", "p", path=None, relpath="x", laterality="left")
    assert record.value("laterality") == "left" and record.value("findings.none") is None
    with pytest.raises(KeyError, match="label field"):
        record.value("age")


def test_datasets_check_counts_the_new_fields(root, capsys):
    assert main(["datasets", "check", "brset", "rfmid", "--data-root", str(root), "--cohort", "all",
                 "--json"]) in (0, 1)
    reports = {r["name"]: r for r in json.loads(capsys.readouterr().out)["datasets"]}
    brset = reports["brset"]["label_fields"]
    assert brset["laterality"] == {"left": 19, "right": 18}  # odd image numbers are right eyes; 37 has no file
    assert brset["dr_grade"] == {"0": 25, "1": 4, "2": 3, "3": 1, "4": 4}
    assert brset["findings"]["hemorrhage"] == {"annotated": 37, "present": 8}
    assert brset["findings"]["drusen"] == {"annotated": 37, "present": 4}
    assert brset["conditions"]["normal"] == 6  # img 1, 2, 4, 5, 6 and 34
    assert reports["rfmid"]["label_fields"]["abnormal"] == {"0": 10, "1": 20}
    assert main(["datasets", "check", "brset", "--data-root", str(root), "--cohort", "all"]) in (0, 1)
    text = capsys.readouterr().out
    assert "laterality: left 19, right 18" in text and "hemorrhage 8/37" in text

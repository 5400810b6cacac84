"""OIA-ODIR reader on a miniature copy of its three published parts: per-eye records, laterality from the file
name, per-eye keywords mapped to conditions, patient-level flags kept aside and checked, the published split."""

import pytest
from helpers.raw_layouts import columns, raw_copy, solid

from focus_eval.data.readers import oia_odir
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_oia_odir


# (image_id, patient, split, laterality, conditions, abnormal, dr, glaucoma, quality, age, sex)
EXPECTED = [
    ("0_left", "0", "train", "left", ("cataract",), 1, 0, 0, None, 69.0, "female"),
    ("0_right", "0", "train", "right", ("normal",), 0, 0, 0, None, 69.0, "female"),
    ("1_left", "1", "train", "left", ("normal",), 0, 0, 0, None, 57.0, "male"),
    ("1_right", "1", "train", "right", ("normal",), 0, 0, 0, None, 57.0, "male"),
    ("2_left", "2", "train", "left", ("diabetic_retinopathy", "other"), 1, 1, 0, None, 42.0, "male"),
    ("2_right", "2", "train", "right", ("diabetic_retinopathy",), 1, 1, 0, None, 42.0, "male"),
    ("4_left", "4", "train", "left", ("glaucoma",), 1, 0, None, None, 53.0, "male"),
    ("4_right", "4", "train", "right", ("glaucoma",), 1, 0, 1, None, 53.0, "male"),
    ("5_left", "5", "train", "left", ("amd", "other"), 1, 0, 0, None, 50.0, "female"),
    ("5_right", "5", "train", "right", ("normal",), 0, 0, 0, None, 50.0, "female"),
    ("937_left", "937", "val", "left", ("myopia",), 1, 0, 0, None, 62.0, "female"),
    ("937_right", "937", "val", "right", None, None, None, None, "inadequate", 62.0, "female"),
    ("951_left", "951", "val", "left", ("diabetic_retinopathy", "hypertensive_retinopathy"), 1, 1, 0, None, 60.0,
     "male"),
    ("951_right", "951", "val", "right", ("normal",), 0, 0, 0, None, 60.0, "male"),
    ("1000_left", "1000", "test", "left", ("normal",), 0, 0, 0, None, 45.0, "male"),
    ("1000_right", "1000", "test", "right", ("other",), 1, 0, 0, None, 45.0, "male"),
    ("1001_left", "1001", "test", "left", ("diabetic_retinopathy",), 1, 1, 0, None, 71.0, "female"),
    ("1001_right", "1001", "test", "right", ("glaucoma", "cataract"), 1, 0, 1, None, 71.0, "female"),
    ("1002_left", "1002", "test", "left", ("normal",), 0, 0, 0, None, 66.0, "male"),
]
FOLDERS = {"train": "Training Set", "val": "Off-site Test Set", "test": "On-site Test Set"}


rows = columns("image_id", "patient_id", "split", "laterality", "conditions", "abnormal", "dr", "glaucoma", "quality",
               "age", "sex")


@pytest.fixture
def folder(tmp_path):
    return raw_copy(raw_oia_odir, tmp_path / "oia_odir", seed=4, image=solid)


def test_row_by_row(folder):
    load = oia_odir.read(folder)
    assert rows(load) == EXPECTED
    for r in load.records:
        assert r.relpath == f"OIA-ODIR/{FOLDERS[r.split]}/Images/{r.image_id}.jpg"
        assert r.path.is_file()
    assert [(s.image_id, s.reason.split(":")[0]) for s in load.skipped] == [("1002_right", "image file not found")]


def test_patient_flags_are_kept_aside_and_checked(folder):
    load = oia_odir.read(folder)
    by_id = load.by_id()
    assert by_id["951_left"].extra["patient_flags"] == {"N": "0", "D": "0", "G": "0", "C": "0", "A": "0", "H": "1",
                                                         "M": "0", "O": "0"}
    assert by_id["2_left"].extra["keywords"] == ["moderate non proliferative retinopathy", "laser spot"]
    assert any("1 patient(s) have an eye condition whose patient-level flag is 0" in w and "951" in w
               for w in load.warnings)


@pytest.mark.parametrize("keyword, condition", [
    ("normal fundus", "normal"), ("mild nonproliferative retinopathy", "diabetic_retinopathy"),
    ("moderate non proliferative retinopathy", "diabetic_retinopathy"),
    ("proliferative diabetic retinopathy", "diabetic_retinopathy"), ("suspected glaucoma", "glaucoma"),
    ("wet age-related macular degeneration", "amd"), ("hypertensive retinopathy", "hypertensive_retinopathy"),
    ("pathological myopia", "myopia"), ("myopia retinopathy", "myopia"), ("Cataract", "cataract"),
    ("epiretinal membrane", "other"), ("lens dust", None), ("low  image quality", None), ("no fundus image", None),
])
def test_keyword_rule(keyword, condition):
    assert oia_odir.keyword_condition(keyword) == condition


def test_eye_labels_drop_normal_beside_a_condition_and_read_quality_remarks():
    labels = oia_odir.eye_labels("normal fundus，drusen")
    assert labels.conditions == ("other",) and labels.glaucoma == 0 and not labels.inadequate
    assert oia_odir.eye_labels("lens dust，normal fundus").conditions == ("normal",)
    unreadable = oia_odir.eye_labels("no fundus image")
    assert unreadable.conditions is None and unreadable.glaucoma is None and unreadable.inadequate
    assert oia_odir.eye_labels("suspected glaucoma，glaucoma").glaucoma == 1


def test_a_file_name_of_the_other_eye_is_an_error(folder):
    from openpyxl import load_workbook
    path = folder / "OIA-ODIR/Training Set/Annotation/training annotation (English).xlsx"
    book = load_workbook(path)
    book.active["D2"] = "0_right.jpg"
    book.save(path)
    with pytest.raises(DataError, match="is not a left-eye file name"):
        oia_odir.read(folder)


def test_missing_part_names_the_expected_file(folder):
    (folder / "OIA-ODIR/On-site Test Set/Annotation/on-site test annotation (English).xlsx").unlink()
    with pytest.raises(DataError, match=r"on-site test annotation \(English\)\.xlsx"):
        oia_odir.read(folder)


def test_load_dataset_keeps_the_published_split(folder):
    load = load_dataset("oia_odir", folder.parent)
    assert load.metadata["split_source"] == "official"
    assert {r.split for r in load.records if r.patient_id == "951"} == {"val"}
    assert {r.modality for r in load.records} == {"cfp"}

"""OCTDL reader on a miniature copy of its class folders and label file: disease -> condition, patient ids,
laterality and sex, modality "oct", and the seeded patient-grouped split."""

import pytest
from helpers.raw_layouts import raw_copy

from focus_eval.data.readers import octdl
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_octdl

# (image_id, patient, condition, abnormal, laterality, sex)
EXPECTED = [
    ("amd_1001_1", "1", "AMD", 1, "right", "male"), ("amd_1001_2", "1", "AMD", 1, "right", "male"),
    ("amd_1002_1", "2", "AMD", 1, "left", "female"), ("amd_1003_1", "3", "AMD", 1, "left", "female"),
    ("dme_1004_1", "4", "DME", 1, "right", "male"), ("dme_1005_1", "5", "DME", 1, "left", "female"),
    ("erm_1006_1", "6", "ERM", 1, "right", "female"), ("erm_1003_1", "3", "ERM", 1, "right", "female"),
    ("no_1007_1", "7", "normal", 0, "right", "male"), ("no_1007_2", "7", "normal", 0, "left", "male"),
    ("no_1008_1", "8", "normal", 0, "left", "female"), ("no_1009_1", "9", "normal", 0, "right", "male"),
    ("rao_1010_1", "10", "RAO", 1, "left", "male"), ("rvo_1011_1", "11", "RVO", 1, "right", "female"),
    ("vid_1013_1", "13", "VID", 1, "right", "female"), ("no_1020_1", "20", "normal", 0, "left", "female"),
    ("no_1015_1", "15", "normal", 0, "right", "male"), ("amd_1016_1", "16", "AMD", 1, "right", "male"),
    ("dme_1017_1", "17", "DME", 1, "left", "female"), ("rvo_1018_1", "18", "RVO", 1, "left", "male"),
    ("no_1021_1", "21", "normal", 0, "right", "female"),
]


@pytest.fixture
def folder(tmp_path):
    return raw_copy(raw_octdl, tmp_path / "octdl", seed=6, image=None)


def test_row_by_row(folder):
    load = octdl.read(folder)
    assert [(r.image_id, r.patient_id, *r.conditions, r.abnormal, r.laterality, r.sex) for r in load.records] == EXPECTED
    for r in load.records:
        assert r.modality == "oct" and r.split is None
        assert r.relpath == f"OCTDL/{r.extra['disease']}/{r.image_id}.jpg"
    assert [(s.image_id, s.reason.split(":")[0]) for s in load.skipped] == [("vid_1012_1", "image file not found")]
    assert load.by_id()["rvo_1011_1"].extra["subcategory"] == "BRVO"


def test_unknown_disease_code_is_an_error(folder):
    path = folder / "OCTDL_labels.csv"
    path.write_text(path.read_text().replace("rao_1010_1,RAO", "rao_1010_1,CSR"))
    with pytest.raises(DataError, match="'CSR' is not one of AMD, DME"):
        octdl.read(folder)


def test_label_file_is_required(folder):
    (folder / "OCTDL_labels.csv").unlink()
    with pytest.raises(DataError, match="OCTDL_labels.csv"):
        octdl.read(folder)


def test_seeded_patient_split_keeps_a_patient_in_one_split(folder):
    first = load_dataset("octdl", folder.parent)
    again = load_dataset("octdl", folder.parent)
    assert first.metadata["split_source"] == "grouped_stratified"
    assert [(r.image_id, r.split) for r in first.records] == [(r.image_id, r.split) for r in again.records]
    by_patient = {}
    for r in first.records:
        by_patient.setdefault(r.patient_id, set()).add(r.split)
    assert all(len(s) == 1 for s in by_patient.values())
    for split in ("val", "test"):  # the miniature's patients give both classes to both held-out splits
        assert {r.abnormal for r in first.split(split)} == {0, 1}

"""NEH OCT reader on a miniature copy of its table and class folders: B-scan label -> condition and abnormal,
the patient keyed by the volume's class, both path spellings, a missing file, and the label checks."""

import pytest

from focus_eval.data.readers import neh
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_neh

# (image_id, patient, condition, abnormal, volume class)
EXPECTED = [
    ("NORMAL/1/1", "NORMAL-1", "normal", 0, "NORMAL"), ("NORMAL/1/2", "NORMAL-1", "normal", 0, "NORMAL"),
    ("NORMAL/2/1", "NORMAL-2", "normal", 0, "NORMAL"), ("NORMAL/2/2", "NORMAL-2", "normal", 0, "NORMAL"),
    ("NORMAL/3/1", "NORMAL-3", "normal", 0, "NORMAL"), ("NORMAL/4/1", "NORMAL-4", "normal", 0, "NORMAL"),
    ("NORMAL/4/2", "NORMAL-4", "normal", 0, "NORMAL"), ("NORMAL/5/1", "NORMAL-5", "normal", 0, "NORMAL"),
    ("DRUSEN/1/1", "DRUSEN-1", "drusen", 1, "DRUSEN"), ("DRUSEN/1/2", "DRUSEN-1", "normal", 0, "DRUSEN"),
    ("DRUSEN/2/1", "DRUSEN-2", "drusen", 1, "DRUSEN"), ("DRUSEN/3/1", "DRUSEN-3", "drusen", 1, "DRUSEN"),
    ("DRUSEN/4/1", "DRUSEN-4", "drusen", 1, "DRUSEN"),
    ("CNV/1/1", "CNV-1", "CNV", 1, "CNV"), ("CNV/1/2", "CNV-1", "drusen", 1, "CNV"),
    ("CNV/1/3", "CNV-1", "normal", 0, "CNV"), ("CNV/2/1", "CNV-2", "CNV", 1, "CNV"),
    ("CNV/3/1", "CNV-3", "CNV", 1, "CNV"), ("CNV/3/2", "CNV-3", "CNV", 1, "CNV"), ("CNV/4/1", "CNV-4", "CNV", 1, "CNV"),
]


@pytest.fixture
def folder(tmp_path):
    raw_neh.write(tmp_path / "neh", seed=5, image=None)
    return tmp_path / "neh"


def test_row_by_row(folder):
    load = neh.read(folder)
    rows = [(r.image_id, r.patient_id, *r.conditions, r.abnormal, r.extra["volume_class"]) for r in load.records]
    assert rows == EXPECTED
    for r in load.records:
        assert r.modality == "oct" and r.relpath == f"NEH_UT_2021RetinalOCTDataset/{r.image_id}.jpg"
    assert [(s.image_id, s.row, s.reason) for s in load.skipped] == [("DRUSEN/3/2", 14, "image file not found")]
    assert load.metadata["image_root"] == "NEH_UT_2021RetinalOCTDataset"


def test_images_beside_the_table_are_read_too(folder):
    for child in (folder / "NEH_UT_2021RetinalOCTDataset").iterdir():
        child.rename(folder / child.name)
    load = neh.read(folder)
    assert [r.image_id for r in load.records] == [row[0] for row in EXPECTED]
    assert load.metadata["image_root"] == "."


def test_an_unknown_label_is_an_error(folder):
    path = folder / "data_information.csv"
    path.write_text(path.read_text().replace("/CNV/2/1.jpg,CNV,CNV", "/CNV/2/1.jpg,CNV,DME"))
    with pytest.raises(DataError, match="'DME' is not normal, drusen or CNV"):
        neh.read(folder)


def test_the_table_is_required(folder):
    (folder / "data_information.csv").unlink()
    with pytest.raises(DataError, match="data_information.csv"):
        neh.read(folder)


def test_seeded_split_keeps_a_volume_in_one_split(folder):
    load = load_dataset("neh", folder.parent)
    assert load.metadata["split_source"] == "grouped_stratified"
    splits = {}
    for r in load.records:
        splits.setdefault(r.patient_id, set()).add(r.split)
    assert all(len(s) == 1 for s in splits.values())
    assert {r.abnormal for r in load.records if r.split == "test"} == {0, 1}

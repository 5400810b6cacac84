"""UCSD OCT2017 reader on a miniature copy of its Kaggle layout: class folders per split, patient ids from the
file names, val folded into train, the nested duplicate tree read once, odd file names skipped."""

import shutil

import pytest
from helpers.raw_layouts import raw_copy

from focus_eval.data.readers import oct2017
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_oct2017

# (image_id, patient, split, condition, abnormal)
EXPECTED = [
    ("test/CNV-5001-1", "5001", "test", "CNV", 1), ("test/DME-5002-1", "5002", "test", "DME", 1),
    ("test/DRUSEN-5003-1", "5003", "test", "DRUSEN", 1), ("test/NORMAL-5004-1", "5004", "test", "normal", 0),
    ("test/NORMAL-5004-2", "5004", "test", "normal", 0),
    ("train/CNV-1001-1", "1001", "train", "CNV", 1), ("train/CNV-1001-2", "1001", "train", "CNV", 1),
    ("train/CNV-1002-1", "1002", "train", "CNV", 1), ("train/DME-2001-1", "2001", "train", "DME", 1),
    ("train/DME-2002-1", "2002", "train", "DME", 1), ("train/DRUSEN-3001-1", "3001", "train", "DRUSEN", 1),
    ("train/DRUSEN-3002-1", "3002", "train", "DRUSEN", 1), ("train/NORMAL-4001-1", "4001", "train", "normal", 0),
    ("train/NORMAL-4001-2", "4001", "train", "normal", 0), ("train/NORMAL-4002-1", "4002", "train", "normal", 0),
    ("val/CNV-1003-1", "1003", "train", "CNV", 1), ("val/NORMAL-4003-1", "4003", "train", "normal", 0),
]


def rows(load):
    return [(r.image_id, r.patient_id, r.split, *r.conditions, r.abnormal) for r in load.records]


@pytest.fixture
def folder(tmp_path):
    return raw_copy(raw_oct2017, tmp_path / "oct2017", seed=7, image=None)


def test_row_by_row_with_the_nested_copy_read_once(folder):
    load = oct2017.read(folder)
    assert rows(load) == EXPECTED
    assert all(r.modality == "oct" and r.relpath.startswith("OCT2017 /") for r in load.records)
    assert load.by_id()["val/CNV-1003-1"].relpath == "OCT2017 /val/CNV/CNV-1003-1.jpeg"
    assert [(s.image_id, s.reason) for s in load.skipped] == [
        ("train/scan copy", "file name scan copy.jpeg is not NORMAL-<patient id>-<n>")]
    assert any("nested copy" in w for w in load.warnings)


def test_only_the_nested_copy(tmp_path, folder):
    nested = tmp_path / "nested" / "oct2017"
    shutil.copytree(folder / "oct2017", nested / "oct2017")
    load = oct2017.read(nested)
    assert [r.image_id for r in load.records] == [i for i, *_ in EXPECTED if i.startswith("test/")]


def test_unknown_class_folder_is_an_error(folder):
    (folder / "OCT2017 " / "test" / "GA").mkdir()
    with pytest.raises(DataError, match="unknown class folder 'GA'"):
        oct2017.read(folder)


def test_no_split_folders_names_the_expected_path(tmp_path):
    (tmp_path / "oct2017" / "OCT2017").mkdir(parents=True)
    with pytest.raises(DataError, match="OCT2017/train/CNV/"):
        oct2017.read(tmp_path / "oct2017")


def test_load_dataset_keeps_the_published_split_and_carves_val_by_patient(folder):
    load = load_dataset("oct2017", folder.parent)
    assert load.metadata["split_source"] == "official+carved_val"
    assert {r.image_id for r in load.split("test")} == {i for i, _, s, *_ in EXPECTED if s == "test"}
    assert load.split("val") and not {r.patient_id for r in load.split("val")} & {r.patient_id for r in load.split("train")}

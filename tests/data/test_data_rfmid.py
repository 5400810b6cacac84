"""RFMiD 1.0 reader on miniature copies of both raw layouts (official release and Kaggle copy)."""

import pytest
from helpers.raw_layouts import GRADED, columns, raw_copy, solid

from focus_eval.data.readers import rfmid
from focus_eval.errors import DataError
from focus_eval.synth import raw_rfmid


# (image_id, split, dr, referable_dr (the CME proxy), glaucoma, file name) typed from the miniature's design.
EXPECTED = [
    ("train/1", "train", 1, 0, None, "1.png"),
    ("train/2", "train", 0, 0, None, "2.png"),
    ("train/3", "train", 0, 0, None, "3.png"),
    ("train/4", "train", 1, 1, None, "4.png"),
    ("train/5", "train", 0, 0, None, "5.png"),
    ("train/6", "train", 0, 1, None, "6.png"),
    ("train/7", "train", 1, 0, None, "7.png"),
    ("train/8", "train", 0, 0, None, "8.png"),
    ("train/9", "train", 0, 0, None, "9.png"),
    ("train/10", "train", 1, 0, None, "10.png"),
    ("val/1", "val", 0, 0, None, "1.png"),
    ("val/2", "val", 1, 1, None, "2.png"),
    ("val/3", "val", 1, 0, None, "3.png"),
    ("val/4", "val", 0, 0, None, "4.png"),
    ("val/5", "val", 0, 0, None, "5.png"),
    ("val/6", "val", 0, 1, None, "6.png"),
    ("val/7", "val", 0, 0, None, "7.png"),
    ("val/8", "val", 1, 0, None, "8.png"),
    ("val/9", "val", 0, 0, None, "9.png"),
    ("val/10", "val", 0, 0, None, "10.png"),
    ("test/1", "test", 0, 1, None, "1.png"),
    ("test/2", "test", 0, 0, None, "2.png"),
    ("test/3", "test", 1, 0, None, "3.png"),
    ("test/4", "test", 0, 0, None, "4.png"),
    ("test/5", "test", 1, 1, None, "5.png"),
    ("test/6", "test", 0, 0, None, "6.png"),
    ("test/7", "test", 0, 0, None, "7.png"),
    ("test/8", "test", 1, 0, None, "8.png"),
    ("test/9", "test", 0, 0, None, "9.png"),
    ("test/10", "test", 0, 0, None, "10.png"),
]
IMAGE_FOLDERS = {
    "official": {"train": "A. RFMiD_All_Classes_Dataset/1. Original Images/a. Training Set",
                 "val": "A. RFMiD_All_Classes_Dataset/1. Original Images/b. Validation Set",
                 "test": "A. RFMiD_All_Classes_Dataset/1. Original Images/c. Testing Set"},
    "kaggle": {"train": "Training_Set/Training_Set/Training",
               "val": "Evaluation_Set/Evaluation_Set/Validation",
               "test": "Test_Set/Test_Set/Test"},
}
LABEL_FILES = {
    "official": "A. RFMiD_All_Classes_Dataset/2. Groundtruths/a. RFMiD_Training_Labels.csv",
    "kaggle": "Training_Set/Training_Set/RFMiD_Training_Labels.csv",
}


rows = columns(*GRADED)


def expected(layout, drop=()):
    return [(i, s, dr, ref, gl, f"{IMAGE_FOLDERS[layout][s]}/{name}")
            for i, s, dr, ref, gl, name in EXPECTED if i not in drop]


@pytest.fixture(params=["official", "kaggle"])
def layout(request):
    return request.param


@pytest.fixture
def folder(tmp_path, layout):
    return raw_copy(raw_rfmid, tmp_path / "rfmid", seed=3, image=solid, layout=layout)


def test_records_row_by_row(folder, layout):
    load = rfmid.read(folder)
    assert rows(load) == expected(layout)
    assert load.skipped == []
    assert load.metadata["layout"] == layout
    for record in load.records:
        assert record.path == (folder / record.relpath).resolve()
        assert record.patient_id == record.image_id


def test_ids_restart_per_split_and_stay_distinct(folder):
    by_id = rfmid.read(folder).by_id()
    ones = [by_id["train/1"], by_id["val/1"], by_id["test/1"]]
    assert len({r.path for r in ones}) == 3
    assert [(r.dr, r.referable_dr) for r in ones] == [(1, 0), (0, 0), (0, 1)]
    assert len({r.path.read_bytes() for r in ones}) == 3


def test_referable_proxy_column_is_recorded(folder):
    load = rfmid.read(folder)
    assert load.metadata["referable_dr_column"] == "CME"
    assert load.metadata["referable_dr_proxy"] is True
    assert rfmid.SPEC.targets == ("dr", "referable_dr")
    assert rfmid.SPEC.official_split is True and rfmid.SPEC.default_cohort in rfmid.SPEC.cohorts
    assert all(r.glaucoma is None for r in load.records)


def test_missing_image_is_skipped_and_reported(folder, layout):
    (folder / IMAGE_FOLDERS[layout]["val"] / "3.png").unlink()
    load = rfmid.read(folder)
    assert rows(load) == expected(layout, drop={"val/3"})
    [skip] = load.skipped
    assert (skip.image_id, skip.row) == ("val/3", 4)
    assert "3.png" in skip.reason and "Validation" in skip.file


def test_renamed_column_names_the_file(folder, layout):
    label_file = folder / LABEL_FILES[layout]
    label_file.write_text(label_file.read_text().replace(",CME,", ",CME_renamed,", 1))
    with pytest.raises(DataError, match="CME") as info:
        rfmid.read(folder)
    assert info.value.file == str(label_file)


def test_absent_dataset_names_the_expected_file(tmp_path):
    (tmp_path / "rfmid").mkdir()
    with pytest.raises(DataError, match="a. RFMiD_Training_Labels.csv"):
        rfmid.read(tmp_path / "rfmid")


def test_both_layouts_present_reads_the_official_one(tmp_path):
    raw_rfmid.write(tmp_path / "rfmid", seed=1, image=solid, layout="official")
    raw_rfmid.write(tmp_path / "rfmid", seed=1, image=solid, layout="kaggle")
    load = rfmid.read(tmp_path / "rfmid")
    assert rows(load) == expected("official")
    assert any("official" in w for w in load.warnings)

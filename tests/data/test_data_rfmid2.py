"""RFMiD 2.0 reader on miniature copies of its raw layout (latin-1 label files with the release's quirks)."""

import pytest
from helpers.raw_layouts import GRADED, columns, raw_copy, solid

from focus_eval.data.readers import rfmid2
from focus_eval.errors import DataError
from focus_eval.synth import raw_rfmid2


# (image_id, split, dr, referable_dr (the ME proxy), glaucoma, file name). Training ID 6 has a label row but no
# image, as a handful of rows in the release do.
EXPECTED = [
    ("train/1", "train", 1, 0, None, "1.jpg"),
    ("train/2", "train", 0, 0, None, "2.jpg"),
    ("train/3", "train", 0, 1, None, "3.jpg"),
    ("train/4", "train", 1, 1, None, "4.JPG"),
    ("train/5", "train", 0, 0, None, "5.jpg"),
    ("train/7", "train", 0, 0, None, "7.jpg"),
    ("train/8", "train", 1, 0, None, "8.JPG"),
    ("train/9", "train", 0, 0, None, "9.jpg"),
    ("train/10", "train", 0, 0, None, "10.jpg"),
    ("train/11", "train", 0, 0, None, "11.jpg"),
    ("val/12", "val", 0, 0, None, "12.jpg"),
    ("val/13", "val", 1, 0, None, "13.JPG"),
    ("val/14", "val", 0, 1, None, "14.jpg"),
    ("val/15", "val", 0, 0, None, "15.jpg"),
    ("val/16", "val", 1, 1, None, "16.jpg"),
    ("val/17", "val", 0, 0, None, "17.jpg"),
    ("val/18", "val", 0, 0, None, "18.jpg"),
    ("val/19", "val", 0, 0, None, "19.jpg"),
    ("val/20", "val", 1, 0, None, "20.JPG"),
    ("val/21", "val", 0, 0, None, "21.jpg"),
    ("test/22", "test", 0, 1, None, "22.jpg"),
    ("test/23", "test", 0, 0, None, "23.jpg"),
    ("test/24", "test", 1, 0, None, "24.JPG"),
    ("test/25", "test", 0, 0, None, "25.jpg"),
    ("test/26", "test", 0, 0, None, "26.jpg"),
    ("test/27", "test", 1, 1, None, "27.jpg"),
    ("test/28", "test", 0, 0, None, "28.jpg"),
    ("test/29", "test", 0, 0, None, "29.jpg"),
    ("test/30", "test", 1, 0, None, "30.jpg"),
    ("test/31", "test", 0, 0, None, "31.JPG"),
]
FOLDERS = {
    "release": {"train": "Training_set", "val": "Validation_set", "test": "Test_set"},
    "short": {"train": "Train", "val": "Validation", "test": "Test"},
}


rows = columns(*GRADED)


def expected(layout, drop=()):
    return [(i, s, dr, ref, gl, f"{FOLDERS[layout][s]}/{name}")
            for i, s, dr, ref, gl, name in EXPECTED if i not in drop]


@pytest.fixture(params=["release", "short"])
def layout(request):
    return request.param


@pytest.fixture
def folder(tmp_path, layout):
    return raw_copy(raw_rfmid2, tmp_path / "rfmid2", seed=5, image=solid, layout=layout)


def test_records_row_by_row(folder, layout):
    load = rfmid2.read(folder)
    assert rows(load) == expected(layout)
    assert load.metadata["referable_dr_column"] == "ME"
    assert load.metadata["referable_dr_proxy"] is True
    for record in load.records:
        assert record.path == (folder / record.relpath).resolve()


def test_label_row_without_image_is_skipped_and_logged(folder, layout):
    load = rfmid2.read(folder)
    [skip] = load.skipped
    assert skip.image_id == "train/6" and skip.row == 7
    assert skip.file.endswith(f"{FOLDERS[layout]['train']}/RFMiD_2_Training_labels.csv")
    assert "no image" in skip.reason and "6.jpg" in skip.reason
    assert any("1 label rows have no image" in w for w in load.warnings)


def test_latin1_header_quirks(folder, layout):
    raw = (folder / FOLDERS[layout]["val"] / "RFMiD_2_Validation_labels.csv").read_bytes()
    assert b",ON\xa0," in raw and b",OPDM," in raw and raw.split(b"\r\n")[0].endswith(b",,")
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    test_header = (folder / FOLDERS[layout]["test"] / "RFMiD_2_Testing_labels.csv").read_bytes()
    assert test_header.startswith(b"id,")
    record = rfmid2.read(folder).by_id()["val/16"]
    assert record.extra["ON"] == "0" and record.extra["ODPM"] == "0"
    assert not any(key.startswith("ON\xa0") or key == "OPDM" or key == "" for key in record.extra)


def test_pandas_resaved_unnamed_columns_are_ignored(folder, layout):
    label_file = folder / FOLDERS[layout]["train"] / "RFMiD_2_Training_labels.csv"
    text = label_file.read_bytes().decode("latin-1")
    header, rest = text.split("\r\n", 1)
    label_file.write_bytes((header.rstrip(",") + ",Unnamed: 21,Unnamed: 22\r\n" + rest).encode("latin-1"))
    load = rfmid2.read(folder)
    assert rows(load) == expected(layout)
    assert not any(k.startswith("Unnamed") for r in load.records for k in r.extra)


def test_missing_image_is_skipped_and_reported(folder, layout):
    (folder / FOLDERS[layout]["test"] / "24.JPG").unlink()
    load = rfmid2.read(folder)
    assert rows(load) == expected(layout, drop={"test/24"})
    assert sorted(s.image_id for s in load.skipped) == ["test/24", "train/6"]


def test_renamed_column_names_the_file(folder, layout):
    label_file = folder / FOLDERS[layout]["val"] / "RFMiD_2_Validation_labels.csv"
    label_file.write_bytes(label_file.read_bytes().replace(b",ME,", b",MacEd,", 1))
    with pytest.raises(DataError, match="ME") as info:
        rfmid2.read(folder)
    assert info.value.file == str(label_file)


def test_absent_label_file_is_named(tmp_path):
    (tmp_path / "rfmid2").mkdir()
    with pytest.raises(DataError, match="RFMiD_2_Training_labels.csv"):
        rfmid2.read(tmp_path / "rfmid2")

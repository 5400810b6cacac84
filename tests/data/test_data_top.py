"""TOP reader on a miniature copy of its label table: diagnosis columns -> conditions, abnormal, dr and glaucoma
(DM kept apart), the LR column -> laterality, the patient from the file name's serial and the patient-grouped
split, a missing file, the strict cell checks, and the FunBench tasks and pool reading the records."""

import pytest

from focus_eval.data.readers import top
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_top

# (image_id, patient, laterality, conditions, abnormal, dr, glaucoma, diabetes, age, sex), stated by hand
EXPECTED = [
    ("000000_00", "000000", "left", ("normal",), 0, 0, 0, 0, 78.0, "male"),
    ("000000_01", "000000", "right", ("normal",), 0, 0, 0, 0, 78.0, "male"),
    ("000001_02", "000001", "left", ("Gla",), 1, 0, 1, 0, 69.0, "male"),
    ("000001_03", "000001", "right", ("Gla",), 1, 0, 1, 0, 69.0, "male"),
    ("000002_00", "000002", "right", ("DR",), 1, 1, 0, 1, 55.0, "female"),
    ("000002_01", "000002", "left", ("DR",), 1, 1, 0, 1, 55.0, "female"),
    ("000003_00", "000003", "left", ("normal",), 0, 0, 0, 1, 61.0, "female"),  # DM alone: a normal eye
    ("000004_00", "000004", "right", ("AMD",), 1, 0, 0, 0, 72.0, "male"),
    ("000004_01", "000004", "right", ("AMD", "RVO"), 1, 0, 0, 0, 72.0, "male"),
    ("000005_00", "000005", "left", ("RD",), 1, 0, 0, 0, 45.0, "male"),
    ("000006_00", "000006", "right", ("RP",), 1, 0, 0, 0, 33.0, "female"),
    ("000006_01", "000006", "left", ("RP",), 1, 0, 0, 0, 33.0, "female"),  # written "l"
    ("000007_00", "000007", "left", ("AO",), 1, 0, 0, 0, 80.0, "female"),
    ("000008_00", "000008", "right", ("MH",), 1, 0, 0, 0, 66.0, "male"),
    ("000009_00", "000009", "left", ("normal",), 0, 0, 0, 0, 58.0, "female"),
    ("000009_01", "000009", "right", ("normal",), 0, 0, 0, 0, 58.0, "female"),
    ("000010_00", "000010", "left", ("Gla", "DR"), 1, 1, 1, 1, 70.0, "male"),
    ("000011_01", "000011", "left", ("DR",), 1, 1, 0, 1, 70.0, "female"),
    ("000012_00", "000012", "right", ("RVO",), 1, 0, 0, 0, 64.0, "male"),
    ("000013_00", "000013", "left", ("normal",), 0, 0, 0, 0, 52.0, "female"),
    ("000014_00", "000014", "right", ("Gla",), 1, 0, 1, 0, 75.0, "male"),
    ("000015_00", "000015", "left", ("normal",), 0, 0, 0, 0, 40.0, "female"),
    ("000015_01", "000015", "right", ("DR",), 1, 1, 0, 0, 40.0, "female"),
]


@pytest.fixture
def folder(tmp_path):
    raw_top.write(tmp_path / "top", seed=6, image=None)
    return tmp_path / "top"


def rewrite(folder, old, new):
    path = folder / "data.csv"
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))


def test_row_by_row(folder):
    load = top.read(folder)
    rows = [(r.image_id, r.patient_id, r.laterality, r.conditions, r.abnormal, r.dr, r.glaucoma,
             r.extra["diabetes"], r.age, r.sex) for r in load.records]
    assert rows == EXPECTED
    assert all(r.modality == "uwf" and r.relpath == f"images/{r.image_id}.jpg" for r in load.records)
    assert [(s.image_id, s.row) for s in load.skipped] == [("000016_00", 25)]
    assert load.metadata["label_file"] == "data.csv"


def test_table_at_depth_and_images_in_any_folder_below_it(folder):
    nested = folder / "TOP" / "release"
    (nested / "part2").mkdir(parents=True)
    (folder / "data.csv").rename(nested / "data.csv")
    (folder / "images").rename(nested / "part1")
    (nested / "part1" / "000015_01.jpg").rename(nested / "part2" / "000015_01.JPG")
    load = top.read(folder)
    assert [r.image_id for r in load.records] == [row[0] for row in EXPECTED]
    assert load.by_id()["000015_01"].relpath == "TOP/release/part2/000015_01.JPG"
    assert load.metadata["label_file"] == "TOP/release/data.csv"


@pytest.mark.parametrize("old, new, message", [
    ("000005_00.jpg,45,M,L,", "000005_00.jpg,45,M,X,", r"data.csv, row 11: column 'LR': unknown code 'X'"),
    ("000005_00.jpg,45,M,L,", "000005_00.jpg,45,U,L,", r"data.csv, row 11: column 'sex': unknown code 'U'"),
    ("000005_00.jpg,45,M,L,0,0,0,0,0,1", "000005_00.jpg,45,M,L,0,0,0,0,0,2",
     r"data.csv, row 11: column 'RD': '2' is not a grade in \[0, 1\]"),
    ("000005_00.jpg,45,M,L,0,0,0,0,0,1,0,0,0", "000005_00.jpg,45,M,L,0,0,0,0,0,1,0,0,yes",
     r"data.csv, row 11: column 'DM': 'yes' is not a grade"),
    ("000005_00.jpg", "scan5.jpg", r"data.csv, row 11: column 'filename': 'scan5.jpg' is not a file name of the form"),
])
def test_unknown_codes_are_errors_naming_file_and_row(folder, old, new, message):
    rewrite(folder, old, new)
    with pytest.raises(DataError, match=message):
        top.read(folder)


def test_missing_table_or_column_is_an_error(folder):
    rewrite(folder, ",LR,", ",eye,")
    with pytest.raises(DataError, match=r"missing column for 'eye': expected one of \['LR'\]"):
        top.read(folder)
    (folder / "data.csv").unlink()
    with pytest.raises(DataError, match="no TOP label table found; expected data.csv"):
        top.read(folder)


def test_split_keeps_a_patient_in_one_split_and_is_stratified(folder):
    load = load_dataset("top", folder.parent)
    assert load.metadata["split_source"] == "grouped_stratified"
    splits = {}
    for r in load.records:
        splits.setdefault(r.patient_id, set()).add(r.split)
    assert all(len(s) == 1 for s in splits.values())
    assert len(splits) == 16 and sum(len(s) for s in splits.values()) == 16
    test = load.split("test")
    assert {r.dr for r in test} == {0, 1} and {r.glaucoma for r in test} == {0, 1}


def test_funbench_tasks_read_the_records(folder, index):
    records = top.read(folder).by_id()
    assert index.get("funbench_l2b_laterality_top").label(records["000006_01"]) == 0  # left
    assert index.get("funbench_l2b_laterality_top").label(records["000004_00"]) == 1  # right
    assert index.get("funbench_l1b_modality_top").label(records["000000_00"]) == 2  # uwf
    assert index.get("funbench_l1a_modality_top").label(records["000000_00"]) == 0  # fundus
    conditions = index.get("funbench_l4b_conditions_top")
    assert conditions.multilabel and conditions.label_space.names == ["normal", *top.CONDITIONS]
    assert conditions.label(records["000004_01"]) == [1, 2]
    assert conditions.label(records["000010_00"]) == [3, 5]
    assert conditions.label(records["000003_00"]) == [0]
    normal = index.get("funbench_l4a_normal_abnormal_top")
    assert [normal.label(records[i]) for i in ("000003_00", "000007_00")] == [0, 1]


def test_pool_holds_the_top_images_as_ultra_wide_field(folder):
    pool = load_dataset("funbench_pool", folder.parent)
    assert pool.metadata["members"] == ["top"]
    assert {r.image_id for r in pool.records} == {f"top/{row[0]}" for row in EXPECTED}
    assert {r.modality for r in pool.records} == {"uwf"}

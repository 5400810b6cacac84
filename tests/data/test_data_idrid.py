"""IDRiD (part B, Disease Grading) reader on miniature copies of its raw layout, including the image names
that restart per split (the reference implementation's train/test collision)."""

import pytest
from helpers.raw_layouts import GRADED, columns, raw_copy, solid

from focus_eval.data.cells import referable_dr
from focus_eval.data.readers import idrid
from focus_eval.errors import DataError
from focus_eval.synth import raw_idrid


# (image_id, split, dr, referable_dr, glaucoma, image file) from the miniature's grades: dr = grade >= 1,
# referable = grade >= 2 or macular-edema risk >= 1. IDRiD_001..010 exist in both splits with other grades.
EXPECTED = [
    ("train/IDRiD_001", "train", 1, 1, None, "IDRiD_001.jpg"),  # grade 3, risk 2
    ("train/IDRiD_002", "train", 0, 0, None, "IDRiD_002.jpg"),
    ("train/IDRiD_003", "train", 1, 0, None, "IDRiD_003.jpg"),  # grade 1
    ("train/IDRiD_004", "train", 1, 1, None, "IDRiD_004.jpg"),  # grade 2, risk 0
    ("train/IDRiD_005", "train", 0, 0, None, "IDRiD_005.jpg"),
    ("train/IDRiD_006", "train", 1, 1, None, "IDRiD_006.jpg"),
    ("train/IDRiD_007", "train", 1, 1, None, "IDRiD_007.jpg"),  # cell with a stray trailing space
    ("train/IDRiD_008", "train", 0, 0, None, "IDRiD_008.jpg"),
    ("train/IDRiD_009", "train", 1, 0, None, "IDRiD_009.jpg"),
    ("train/IDRiD_010", "train", 1, 1, None, "IDRiD_010.jpg"),
    ("train/IDRiD_011", "train", 0, 0, None, "IDRiD_011.jpg"),
    ("train/IDRiD_012", "train", 1, 1, None, "IDRiD_012.jpg"),
    ("train/IDRiD_013", "train", 1, 0, None, "IDRiD_013.jpg"),
    ("train/IDRiD_014", "train", 0, 0, None, "IDRiD_014.jpg"),
    ("train/IDRiD_015", "train", 1, 1, None, "IDRiD_015.jpg"),  # grade 4, risk 0
    ("test/IDRiD_001", "test", 0, 0, None, "IDRiD_001.jpg"),
    ("test/IDRiD_002", "test", 1, 1, None, "IDRiD_002.jpg"),
    ("test/IDRiD_003", "test", 0, 0, None, "IDRiD_003.jpg"),
    ("test/IDRiD_004", "test", 1, 0, None, "IDRiD_004.jpg"),
    ("test/IDRiD_005", "test", 1, 1, None, "IDRiD_005.jpg"),
    ("test/IDRiD_006", "test", 0, 0, None, "IDRiD_006.jpg"),
    ("test/IDRiD_007", "test", 1, 0, None, "IDRiD_007.jpg"),
    ("test/IDRiD_008", "test", 1, 1, None, "IDRiD_008.jpg"),
    ("test/IDRiD_009", "test", 0, 0, None, "IDRiD_009.jpg"),
    ("test/IDRiD_010", "test", 1, 1, None, "IDRiD_010.jpg"),
]
ROOTS = {
    "plain": "B. Disease Grading",
    "url_encoded": "B.%20Disease%20Grading/B. Disease Grading",
    "doubled": "B. Disease Grading/B. Disease Grading",
}
IMAGE_FOLDERS = {"train": "1. Original Images/a. Training Set", "test": "1. Original Images/b. Testing Set"}
LABEL_FILES = {"train": "2. Groundtruths/a. IDRiD_Disease Grading_Training Labels.csv",
               "test": "2. Groundtruths/b. IDRiD_Disease Grading_Testing Labels.csv"}


rows = columns(*GRADED)


def expected(layout, drop=()):
    return [(i, s, dr, ref, gl, f"{ROOTS[layout]}/{IMAGE_FOLDERS[s]}/{name}")
            for i, s, dr, ref, gl, name in EXPECTED if i not in drop]


@pytest.fixture(params=sorted(ROOTS))
def layout(request):
    return request.param


@pytest.fixture
def folder(tmp_path, layout):
    return raw_copy(raw_idrid, tmp_path / "idrid", seed=7, image=solid, layout=layout)


def test_records_row_by_row(folder, layout):
    load = idrid.read(folder)
    assert rows(load) == expected(layout)
    assert load.skipped == []
    for record in load.records:
        assert record.path == (folder / record.relpath).resolve()


def test_same_name_in_train_and_test_stays_distinct(folder, layout):
    by_id = idrid.read(folder).by_id()
    for n in range(1, 11):
        train, test = by_id[f"train/IDRiD_{n:03d}"], by_id[f"test/IDRiD_{n:03d}"]
        assert "/a. Training Set/" in train.relpath and "/b. Testing Set/" in test.relpath
        assert train.path != test.path and train.path.read_bytes() != test.path.read_bytes()
    assert (by_id["train/IDRiD_001"].extra, by_id["test/IDRiD_001"].extra) == (
        {"retinopathy_grade": 3, "macular_edema_risk": 2}, {"retinopathy_grade": 0, "macular_edema_risk": 0})


def test_raw_label_file_quirks_are_read(folder, layout):
    train_csv = folder / ROOTS[layout] / LABEL_FILES["train"]
    header, *lines = train_csv.read_text().splitlines()
    assert header.startswith("Image name,Retinopathy grade,Risk of macular edema ,,")
    assert lines[6].startswith("IDRiD_007,2,1 ,")
    assert idrid.read(folder).by_id()["train/IDRiD_007"].extra == {"retinopathy_grade": 2, "macular_edema_risk": 1}


def test_missing_image_is_skipped_and_reported(folder, layout):
    (folder / ROOTS[layout] / IMAGE_FOLDERS["test"] / "IDRiD_005.jpg").unlink()
    load = idrid.read(folder)
    assert rows(load) == expected(layout, drop={"test/IDRiD_005"})
    [skip] = load.skipped
    assert (skip.image_id, skip.row) == ("test/IDRiD_005", 6)
    assert "IDRiD_005.jpg" in skip.reason and skip.file.endswith("Testing Labels.csv")


def test_renamed_column_names_the_file(folder, layout):
    test_csv = folder / ROOTS[layout] / LABEL_FILES["test"]
    test_csv.write_text(test_csv.read_text().replace("Retinopathy grade", "DR grade"))
    with pytest.raises(DataError, match="Retinopathy grade") as info:
        idrid.read(folder)
    assert info.value.file == str(test_csv)


def test_unknown_grade_names_file_and_row(folder, layout):
    train_csv = folder / ROOTS[layout] / LABEL_FILES["train"]
    train_csv.write_text(train_csv.read_text().replace("IDRiD_003,1,0", "IDRiD_003,5,0"))
    with pytest.raises(DataError, match="'5'") as info:
        idrid.read(folder)
    assert (info.value.file, info.value.row) == (str(train_csv), 4)


@pytest.mark.parametrize("grade, edema, label", [
    (None, 0, None), (1, None, None), (2, None, 1), (None, 1, 1), (1, 0, 0), (0, 2, 1), (None, None, None)])
def test_referable_rule_excludes_what_it_cannot_decide(grade, edema, label):
    assert referable_dr(grade, edema) == label


def test_absent_dataset_names_the_expected_file(tmp_path):
    (tmp_path / "idrid").mkdir()
    with pytest.raises(DataError, match="B. Disease Grading/2. Groundtruths/a. IDRiD_Disease Grading_Training"):
        idrid.read(tmp_path / "idrid")


def test_load_dataset_carves_val_from_train_only(tmp_path):
    from focus_eval.data.registry import load_dataset

    raw_idrid.write(tmp_path / "idrid", seed=7, image=solid, layout="url_encoded")
    official = {r.image_id: r.split for r in idrid.read(tmp_path / "idrid").records}
    load = load_dataset("idrid", tmp_path)
    split_of = {r.image_id: r.split for r in load.records}
    assert split_of.keys() == official.keys()
    val = sorted(i for i, s in split_of.items() if s == "val")
    assert val and all(official[i] == "train" for i in val)
    assert load.metadata["carved_val_images"] == len(val) == 3
    assert {i for i, s in split_of.items() if s == "test"} == {i for i, s in official.items() if s == "test"}
    for split in ("train", "val"):
        labels = [(r.dr, r.referable_dr) for r in load.records if r.split == split]
        assert {0, 1} <= {dr for dr, _ in labels} and {0, 1} <= {ref for _, ref in labels}
    by_file: dict[str, set] = {}
    for r in load.records:
        by_file.setdefault(r.relpath, set()).add(r.split)
    assert len(by_file) == 25 and all(len(s) == 1 for s in by_file.values())


def test_other_idrid_parts_beside_it_are_not_read(tmp_path):
    raw_idrid.write(tmp_path / "idrid", seed=7, image=solid, layout="plain")
    other = tmp_path / "idrid" / "A. Segmentation" / "1. Original Images" / "a. Training Set"
    other.mkdir(parents=True)
    solid({"seed": 99}).save(other / "IDRiD_001.jpg")
    assert rows(idrid.read(tmp_path / "idrid")) == expected("plain")

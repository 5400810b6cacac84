"""REFUGE reader on miniature copies of the official release and of the Kaggle bundle: the official test
set is read with its own labels, never replaced by the validation set."""

import json
import shutil

import pytest
from openpyxl import load_workbook
from helpers.raw_layouts import GRADED, columns, raw_copy, solid

from focus_eval.data.readers import refuge
from focus_eval.errors import DataError
from focus_eval.synth import raw_refuge


# (image_id, split, dr, referable_dr, glaucoma, relative path in the official release)
OFFICIAL = [
    ("train/g0001", "train", None, None, 1, "Training400/Glaucoma/g0001.jpg"),
    ("train/g0002", "train", None, None, 1, "Training400/Glaucoma/g0002.jpg"),
    ("train/g0003", "train", None, None, 1, "Training400/Glaucoma/g0003.jpg"),
    ("train/n0001", "train", None, None, 0, "Training400/Non-Glaucoma/n0001.jpg"),
    ("train/n0002", "train", None, None, 0, "Training400/Non-Glaucoma/n0002.jpg"),
    ("train/n0003", "train", None, None, 0, "Training400/Non-Glaucoma/n0003.jpg"),
    ("train/n0004", "train", None, None, 0, "Training400/Non-Glaucoma/n0004.jpg"),
    ("train/n0005", "train", None, None, 0, "Training400/Non-Glaucoma/n0005.jpg"),
    ("train/n0006", "train", None, None, 0, "Training400/Non-Glaucoma/n0006.jpg"),
    ("train/n0007", "train", None, None, 0, "Training400/Non-Glaucoma/n0007.jpg"),
    ("val/V0001", "val", None, None, 0, "REFUGE-Validation400/V0001.jpg"),
    ("val/V0002", "val", None, None, 1, "REFUGE-Validation400/V0002.jpg"),
    ("val/V0003", "val", None, None, 0, "REFUGE-Validation400/V0003.jpg"),
    ("val/V0004", "val", None, None, 0, "REFUGE-Validation400/V0004.jpg"),
    ("val/V0005", "val", None, None, 1, "REFUGE-Validation400/V0005.jpg"),
    ("val/V0006", "val", None, None, 0, "REFUGE-Validation400/V0006.jpg"),
    ("val/V0007", "val", None, None, 0, "REFUGE-Validation400/V0007.jpg"),
    ("val/V0008", "val", None, None, 0, "REFUGE-Validation400/V0008.jpg"),
    ("val/V0009", "val", None, None, 1, "REFUGE-Validation400/V0009.jpg"),
    ("val/V0010", "val", None, None, 0, "REFUGE-Validation400/V0010.jpg"),
    ("test/T0001", "test", None, None, 1, "Test400/T0001.jpg"),
    ("test/T0002", "test", None, None, 0, "Test400/T0002.jpg"),
    ("test/T0003", "test", None, None, 0, "Test400/T0003.jpg"),
    ("test/T0004", "test", None, None, 1, "Test400/T0004.jpg"),
    ("test/T0005", "test", None, None, 0, "Test400/T0005.jpg"),
    ("test/T0006", "test", None, None, 0, "Test400/T0006.jpg"),
    ("test/T0007", "test", None, None, 0, "Test400/T0007.jpg"),
    ("test/T0008", "test", None, None, 1, "Test400/T0008.jpg"),
    ("test/T0009", "test", None, None, 0, "Test400/T0009.jpg"),
    ("test/T0010", "test", None, None, 0, "Test400/T0010.jpg"),
]
KAGGLE_FOLDERS = {"train": "REFUGE/train/Images", "val": "REFUGE/val/Images", "test": "REFUGE/test/Images"}
TEST_WORKBOOK = "REFUGE-Test-GT/Glaucoma_label_and_Fovea_location.xlsx"


rows = columns(*GRADED)


def kaggle(splits=("train", "val", "test")):
    """The official rows with the Kaggle bundle's paths."""
    return [(i, s, dr, ref, gl, f"{KAGGLE_FOLDERS[s]}/{path.rsplit('/', 1)[1]}")
            for i, s, dr, ref, gl, path in OFFICIAL if s in splits]


@pytest.fixture
def official(tmp_path):
    return raw_copy(raw_refuge, tmp_path / "refuge", seed=11, image=solid, layout="official")


@pytest.fixture
def bundle(tmp_path):
    return raw_copy(raw_refuge, tmp_path / "refuge", seed=11, image=solid, layout="kaggle")


def test_official_release_row_by_row(official):
    load = refuge.read(official)
    assert rows(load) == OFFICIAL
    assert load.skipped == []
    assert load.metadata["layout"] == "official"
    assert load.metadata["label_files"]["val"] == "REFUGE-Validation400-GT/Fovea_locations.xlsx"
    assert load.metadata["label_files"]["test"] == TEST_WORKBOOK
    for record in load.records:
        assert record.path == (official / record.relpath).resolve()


def test_official_test_labels_come_from_the_test_workbook(official):
    load = refuge.read(official)
    test = load.split("test")
    assert [r.image_id for r in test if r.glaucoma == 1] == ["test/T0001", "test/T0004", "test/T0008"]
    assert all(r.relpath.startswith("Test400/") for r in test)
    book = load_workbook(official / TEST_WORKBOOK)
    assert [c.value for c in book.active[1]] == ["ImgName", "Label(Glaucoma=1)", "Fovea_X", "Fovea_Y"]
    book.close()


def test_training_fovea_workbook_is_not_taken_for_validation_labels(official):
    (official / "REFUGE-Validation400-GT" / "Fovea_locations.xlsx").unlink()
    load = refuge.read(official)
    assert rows(load) == [row for row in OFFICIAL if row[1] != "val"]
    assert sorted(s.image_id for s in load.skipped) == [f"val/V{n:04d}" for n in range(1, 11)]
    assert any("Fovea_locations.xlsx" in w for w in load.warnings)


def test_missing_image_is_skipped_and_reported(official):
    (official / "REFUGE-Validation400" / "V0005.jpg").unlink()
    load = refuge.read(official)
    assert rows(load) == [row for row in OFFICIAL if row[0] != "val/V0005"]
    [skip] = load.skipped
    assert (skip.image_id, skip.row) == ("val/V0005", 6)
    assert "V0005.jpg" in skip.reason and skip.file.endswith("Fovea_locations.xlsx")


def test_renamed_column_names_the_file(official):
    workbook = official / "REFUGE-Validation400-GT" / "Fovea_locations.xlsx"
    book = load_workbook(workbook)
    book.active["D1"] = "Glaucoma"
    book.save(workbook)
    with pytest.raises(DataError, match="Glaucoma Label") as info:
        refuge.read(official)
    assert info.value.file == str(workbook)


def test_kaggle_bundle_without_test_labels_skips_test_and_says_why(bundle):
    load = refuge.read(bundle)
    assert rows(load) == kaggle(("train", "val"))
    assert load.split("test") == [] and load.split("val") != []
    assert sorted(s.image_id for s in load.skipped) == [f"test/T{n:04d}" for n in range(1, 11)]
    assert all("no glaucoma label" in s.reason for s in load.skipped)
    assert any("REFUGE-Test-GT" in w and "official test" in w for w in load.warnings)


def test_kaggle_bundle_reads_official_test_labels_when_present(bundle):
    raw_refuge.write_test_workbook(bundle / TEST_WORKBOOK)
    load = refuge.read(bundle)
    assert rows(load) == kaggle()
    assert load.skipped == []
    assert load.metadata["label_files"]["test"] == TEST_WORKBOOK


def _as_list(records: dict) -> list:
    return list(records.values())


def _as_columns(records: dict) -> dict:
    fields = {k for r in records.values() for k in r}
    return {f: {key: r.get(f) for key, r in records.items()} for f in sorted(fields)}


@pytest.mark.parametrize("shape", [_as_list, _as_columns])
def test_kaggle_index_shapes(bundle, shape):
    for split in ("train", "val"):
        index = bundle / "REFUGE" / split / "index.json"
        index.write_text(json.dumps(shape(json.loads(index.read_text()))))
    assert rows(refuge.read(bundle)) == kaggle(("train", "val"))


def test_both_layouts_present_reads_the_official_release(official):
    raw_refuge.write(official, seed=11, image=solid, layout="kaggle")
    load = refuge.read(official)
    assert rows(load) == OFFICIAL
    assert any("Kaggle" in w for w in load.warnings)


def test_absent_dataset_names_the_expected_layout(tmp_path):
    (tmp_path / "refuge").mkdir()
    with pytest.raises(DataError, match="Training400"):
        refuge.read(tmp_path / "refuge")


def test_missing_test_folder_is_an_error(official):
    shutil.rmtree(official / "Test400")
    with pytest.raises(DataError, match="Test400"):
        refuge.read(official)


def test_load_dataset_keeps_the_official_test_split(official):
    from focus_eval.data.registry import load_dataset

    load = load_dataset("refuge", official.parent)
    assert load.metadata["split_source"] == "official"
    assert {s: [r.image_id for r in load.split(s)] for s in ("train", "val", "test")} == {
        s: [row[0] for row in OFFICIAL if row[1] == s] for s in ("train", "val", "test")}

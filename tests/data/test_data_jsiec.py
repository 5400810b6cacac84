"""JSIEC1000 reader on a miniature copy of 1000images/<class folder>/: labels from folders, excluded ambiguous
folders, double-dot names, .TIF files, and the Kaggle zip's nested duplicate folder read once."""

import shutil

import pytest
from helpers.raw_layouts import raw_copy, solid

from focus_eval.data.readers import jsiec
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_jsiec


# (image_id, dr, referable_dr), sorted by image_id; patient_id is the image id, relpath 1000images/<image_id>
EXPECTED = [
    ("0.0.Normal/0a1b2c3d-0001..JPG", 0, 0),
    ("0.0.Normal/0a1b2c3d-0002.jpg", 0, 0),
    ("0.2.Large optic cup/0a1b2c3d-0003..JPG", 0, 0),
    ("0.3.DR1/0a1b2c3d-0004..JPG", 1, 0),
    ("1.0.DR2/0a1b2c3d-0005..JPG", 1, 1),
    ("1.0.DR2/0a1b2c3d-0006.TIF", 1, 1),
    ("1.1.DR3/0a1b2c3d-0007..JPG", 1, 1),
    ("1.1.DR3/0a1b2c3d-0013..JPG", 1, 1),
    ("10.0.Possible glaucoma/0a1b2c3d-0009..JPG", 0, 0),
    ("2.0.BRVO/0a1b2c3d-0008..JPG", 0, 0),
    ("20.Massive hard exudates/0a1b2c3d-0010..JPG", None, None),
    ("27.Laser Spots/0a1b2c3d-0011..JPG", None, None),
    ("29.1.Blur fundus with suspected PDR/0a1b2c3d-0012..JPG", None, None),
]


def rows(load):
    return sorted((r.image_id, r.dr, r.referable_dr) for r in load.records)


@pytest.fixture
def tree(tmp_path):
    return raw_copy(raw_jsiec, tmp_path / "jsiec", seed=2, image=solid)


def test_row_by_row_with_nested_duplicate_read_once(tree):
    assert (tree / "1000images/1000images/1.0.DR2/0a1b2c3d-0005..JPG").is_file()
    load = jsiec.read(tree)
    assert rows(load) == EXPECTED
    for r in load.records:
        assert r.patient_id == r.image_id
        assert r.relpath == f"1000images/{r.image_id}"
        assert r.glaucoma is None
        assert r.path.is_file()
    assert any("nested duplicate" in w for w in load.warnings)


def test_folder_sets_match_the_documented_table():
    assert jsiec.DR_POSITIVE_FOLDERS == ("0.3.DR1", "1.0.DR2", "1.1.DR3")
    assert jsiec.REFERABLE_DR_POSITIVE_FOLDERS == ("1.0.DR2", "1.1.DR3")
    assert set(jsiec.EXCLUDED_FOLDERS) == {
        "18.Vitreous particles", "20.Massive hard exudates", "22.Cotton-wool spots", "25.Preretinal hemorrhage",
        "26.Fibrosis", "27.Laser Spots", "29.0.Blur fundus without PDR", "29.1.Blur fundus with suspected PDR"}
    assert len(jsiec.NEGATIVE_FOLDERS) == 28 and len(set(jsiec.CLASS_FOLDERS)) == 39
    assert "0.2.Large optic cup" in jsiec.NEGATIVE_FOLDERS and "2.0.BRVO" in jsiec.NEGATIVE_FOLDERS
    assert set(jsiec.REFERABLE_DR_NEGATIVE_FOLDERS) == set(jsiec.NEGATIVE_FOLDERS) | {"0.3.DR1"}
    assert jsiec.labels_for("22.Cotton-wool spots") == (None, None)
    assert jsiec.labels_for("0.3.DR1") == (1, 0)
    assert jsiec.labels_for("23.Vessel tortuosity") == (0, 0)
    assert "glaucoma" not in jsiec.SPEC.targets


def test_stray_files_are_ignored_and_loose_images_skipped(tree):
    assert (tree / "1000images/0.0.Normal/index.html").is_file()
    shutil.copy(tree / "1000images/0.0.Normal/0a1b2c3d-0002.jpg", tree / "1000images/loose.jpg")
    load = jsiec.read(tree)
    assert len(load.records) == 13
    assert [(s.image_id, s.reason) for s in load.skipped] == [("loose.jpg", "image outside any class folder")]


def test_kaggle_zip_with_only_the_nested_copy(tmp_path, tree):
    nested = tmp_path / "nested" / "jsiec"
    shutil.copytree(tree / "1000images/1000images", nested / "1000images/1000images")
    load = jsiec.read(nested)
    assert [r.relpath for r in sorted(load.records, key=lambda r: r.image_id)] == [
        "1000images/1000images/0.0.Normal/0a1b2c3d-0001..JPG", "1000images/1000images/0.0.Normal/0a1b2c3d-0002.jpg",
        "1000images/1000images/1.0.DR2/0a1b2c3d-0005..JPG", "1000images/1000images/1.0.DR2/0a1b2c3d-0006.TIF"]


def test_class_folders_directly_in_the_dataset_folder(tmp_path, tree):
    flat = tmp_path / "flat" / "jsiec"
    shutil.copytree(tree / "1000images", flat, ignore=shutil.ignore_patterns("1000images"))
    assert rows(jsiec.read(flat)) == EXPECTED


def test_unknown_class_folder_is_an_error(tree):
    (tree / "1000images" / "30.Something new").mkdir()
    with pytest.raises(DataError, match="unknown class folder '30.Something new'"):
        jsiec.read(tree)


def test_no_class_folders_names_the_expected_path(tmp_path):
    (tmp_path / "jsiec" / "1000images").mkdir(parents=True)
    with pytest.raises(DataError, match=r"1000images/0.0.Normal"):
        jsiec.read(tmp_path / "jsiec")


def test_load_dataset_splits_at_image_level(tree):
    load = load_dataset("jsiec", tree.parent)
    assert len(load.records) == 13
    assert load.metadata["group_key"] == jsiec.SPEC.group_key
    for split in ("train", "val", "test"):
        for target in ("dr", "referable_dr"):
            assert {r.label(target) for r in load.split(split)} >= {0, 1}, (split, target)

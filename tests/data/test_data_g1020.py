"""G1020 reader on a miniature copy of the Kaggle bundle, unzipped one level deeper (G1020/G1020/)."""

import shutil
from functools import partial

import pytest
from helpers import raw_layouts
from helpers.raw_layouts import columns, raw_copy

from focus_eval.data.readers import g1020
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_g1020


solid = partial(raw_layouts.solid, size=96)


IMAGES = "G1020/G1020/Images"
# (image_id, patient_id, glaucoma, relpath); image_3.jpg has a label row but no image
EXPECTED = [
    ("image_0.jpg", "image_0.jpg", 0, f"{IMAGES}/image_0.jpg"),
    ("image_1.jpg", "image_1.jpg", 0, f"{IMAGES}/image_1.jpg"),
    ("image_4.jpg", "image_4.jpg", 0, f"{IMAGES}/image_4.jpg"),
    ("image_18.jpg", "image_18.jpg", 1, f"{IMAGES}/image_18.jpg"),
    ("image_19.jpg", "image_19.jpg", 1, f"{IMAGES}/image_19.jpg"),
    ("image_65.jpg", "image_65.jpg", 1, f"{IMAGES}/image_65.jpg"),
    ("image_103.jpg", "image_103.jpg", 0, f"{IMAGES}/image_103.jpg"),
    ("image_110.jpg", "image_110.jpg", 1, f"{IMAGES}/image_110.jpg"),
    ("image_111.jpg", "image_111.jpg", 1, f"{IMAGES}/image_111.jpg"),
    ("image_120.jpg", "image_120.jpg", 0, f"{IMAGES}/image_120.jpg"),
    ("image_121.jpg", "image_121.jpg", 0, f"{IMAGES}/image_121.jpg"),
]


rows = columns("image_id", "patient_id", "glaucoma", "relpath")


@pytest.fixture
def bundle(tmp_path):
    return raw_copy(raw_g1020, tmp_path / "g1020", seed=3, image=solid)


def test_doubled_folder_row_by_row(bundle):
    load = g1020.read(bundle)
    assert rows(load) == EXPECTED
    assert all(r.dr is None and r.referable_dr is None and r.age is None for r in load.records)
    assert [(s.row, s.image_id) for s in load.skipped] == [(4, "image_3.jpg")]


def test_only_the_images_folder_is_read(bundle):
    # the bundle's square and cropped copies carry the same names; the json sidecars are not images
    assert (bundle / "G1020/G1020/Images_Square/image_0.jpg").is_file()
    assert (bundle / "G1020/G1020/Images/image_0.json").is_file()
    assert {r.path.parent.name for r in g1020.read(bundle).records} == {"Images"}


def test_original_single_level_layout_gives_the_same_records(bundle, tmp_path):
    flat = tmp_path / "flat" / "g1020"
    shutil.copytree(bundle / "G1020" / "G1020", flat / "G1020")
    load = g1020.read(flat)
    assert [(i, p, g, rel.replace("G1020/G1020/", "G1020/")) for i, p, g, rel in EXPECTED] == rows(load)


def test_load_dataset_groups_by_image_and_warns(bundle):
    load = load_dataset("g1020", bundle.parent)
    assert len(load.records) == 11
    assert all(r.patient_id == r.image_id and r.split in ("train", "val", "test") for r in load.records)
    assert any("no patient id" in w for w in load.warnings)
    for split in ("train", "val", "test"):
        assert {r.glaucoma for r in load.split(split)} == {0, 1}, split


def test_unknown_label_is_an_error_naming_file_and_row(bundle):
    csv_path = bundle / "G1020/G1020/G1020.csv"
    csv_path.write_text(csv_path.read_text().replace("image_18.jpg,1", "image_18.jpg,2"))
    with pytest.raises(DataError, match=r"G1020.csv, row 6: column 'binaryLabels': unknown code '2'"):
        g1020.read(bundle)


def test_empty_label_excludes_the_image(bundle):
    csv_path = bundle / "G1020/G1020/G1020.csv"
    csv_path.write_text(csv_path.read_text().replace("image_18.jpg,1", "image_18.jpg,"))
    assert g1020.read(bundle).by_id()["image_18.jpg"].glaucoma is None


def test_missing_images_folder_names_the_expected_path(bundle):
    shutil.rmtree(bundle / "G1020/G1020/Images")
    with pytest.raises(DataError, match=r"expected .*G1020/G1020/Images"):
        g1020.read(bundle)


def test_missing_label_file_is_an_error(tmp_path):
    (tmp_path / "g1020" / "Images").mkdir(parents=True)
    with pytest.raises(DataError, match="G1020.csv"):
        g1020.read(tmp_path / "g1020")

"""DeepDRiD reader on a miniature copy of its regular and ultra-wide-field parts: grades per eye, laterality,
quality, modality per part, the ungradable UWF level, the official split."""

import pytest
from PIL import Image
from helpers.raw_layouts import columns, raw_copy, solid

from focus_eval.data.readers import deepdrid
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_deepdrid


# (image_id, patient, split, modality, laterality, dr_grade, dr, quality)
EXPECTED = [
    ("regular/1_l1", "regular/1", "train", "cfp", "left", 0, 0, "adequate"),
    ("regular/1_r1", "regular/1", "train", "cfp", "right", 0, 0, "adequate"),
    ("regular/2_l1", "regular/2", "train", "cfp", "left", 2, 1, "inadequate"),
    ("regular/2_r1", "regular/2", "train", "cfp", "right", 2, 1, "adequate"),
    ("regular/3_l1", "regular/3", "train", "cfp", "left", 1, 1, "adequate"),
    ("regular/3_r1", "regular/3", "train", "cfp", "right", 0, 0, "inadequate"),
    ("regular/4_l1", "regular/4", "train", "cfp", "left", 3, 1, "adequate"),
    ("regular/4_r1", "regular/4", "train", "cfp", None, 4, 1, "adequate"),
    ("regular/301_l1", "regular/301", "val", "cfp", "left", 0, 0, "adequate"),
    ("regular/301_r1", "regular/301", "val", "cfp", "right", 1, 1, "adequate"),
    ("regular/302_l1", "regular/302", "val", "cfp", "left", 4, 1, "inadequate"),
    ("regular/302_r1", "regular/302", "val", "cfp", "right", 4, 1, "adequate"),
    ("regular/347_l1", "regular/347", "test", "cfp", "left", 0, 0, "adequate"),
    ("regular/347_r1", "regular/347", "test", "cfp", "right", 0, 0, "inadequate"),
    ("regular/353_l1", "regular/353", "test", "cfp", "left", 2, 1, "adequate"),
    ("regular/353_r1", "regular/353", "test", "cfp", "right", 3, 1, "adequate"),
    ("uwf/1_r1", "uwf/1", "train", "uwf", "right", 0, 0, None),
    ("uwf/1_l2", "uwf/1", "train", "uwf", "left", 0, 0, None),
    ("uwf/2_r1", "uwf/2", "train", "uwf", "right", 3, 1, None),
    ("uwf/2_l12", "uwf/2", "train", "uwf", "left", None, None, None),
    ("uwf/77_l1", "uwf/77", "val", "uwf", "left", 1, 1, None),
    ("uwf/77_r2", "uwf/77", "val", "uwf", "right", 2, 1, None),
    ("uwf/200_r1", "uwf/200", "test", "uwf", "right", 0, 0, None),
    ("uwf/200_l2", "uwf/200", "test", "uwf", "left", 4, 1, None),
]


rows = columns("image_id", "patient_id", "split", "modality", "laterality", "dr_grade", "dr", "quality")


@pytest.fixture
def folder(tmp_path):
    return raw_copy(raw_deepdrid, tmp_path / "deepdrid", seed=5, image=solid)


def test_row_by_row(folder):
    load = deepdrid.read(folder)
    assert rows(load) == EXPECTED
    assert load.skipped == []
    by_id = load.by_id()
    assert by_id["regular/4_r1"].relpath == "regular_fundus_images/regular-fundus-training/Images/4/4_r1.jpg"
    assert by_id["uwf/200_l2"].relpath == "ultra-widefield_images/Online-Challenge3-Evaluation/Images/200/200_l2.jpg"
    assert any("regular/4_r1" in w and "laterality left unknown" in w for w in load.warnings)


def test_uwf_pictures_are_wide_and_regular_ones_come_from_the_image_callable(folder):
    regular = Image.open(folder / "regular_fundus_images/regular-fundus-training/Images/1/1_l1.jpg")
    uwf = Image.open(folder / "ultra-widefield_images/ultra-widefield-training/Images/1/1_r1.jpg")
    assert regular.size == (32, 32)
    assert uwf.size[0] > uwf.size[1]


def test_evaluation_quality_is_optional(folder):
    (folder / "regular_fundus_images/Online-Challenge1&2-Evaluation/Challenge2_labels.xlsx").unlink()
    load = deepdrid.read(folder)
    assert {r.quality for r in load.split("test")} == {None}
    assert load.by_id()["regular/353_r1"].dr_grade == 3


def test_an_evaluation_folder_without_labels_is_not_read(folder):
    (folder / "regular_fundus_images/Online-Challenge1&2-Evaluation/Challenge1_labels.xlsx").unlink()
    load = deepdrid.read(folder)
    assert not any(r.image_id.startswith("regular/") and r.split == "test" for r in load.records)
    assert any("Online-Challenge1&2-Evaluation has no Challenge1_labels.xlsx" in w for w in load.warnings)


def test_a_grade_outside_icdr_is_an_error(folder):
    path = folder / "ultra-widefield_images/ultra-widefield-training/ultra-widefield-training.csv"
    path.write_text(path.read_text().replace(",3,right_eye", ",7,right_eye"))
    with pytest.raises(DataError, match="'7' is not a grade"):
        deepdrid.read(folder)


def test_no_label_file_names_the_expected_path(tmp_path):
    (tmp_path / "deepdrid").mkdir()
    with pytest.raises(DataError, match="regular-fundus-training.csv"):
        deepdrid.read(tmp_path / "deepdrid")


def test_load_dataset_keeps_the_official_split(folder):
    load = load_dataset("deepdrid", folder.parent)
    assert load.metadata["split_source"] == "official"
    assert {r.modality for r in load.split("test")} == {"cfp", "uwf"}

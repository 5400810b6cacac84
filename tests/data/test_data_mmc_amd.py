"""MMC-AMD reader on a miniature copy of its collection and split folders: category -> conditions and
abnormal, modality per list, the eye as group id, the published patient-disjoint split, both annotation line
forms, and the checks on the lists."""

import pytest

from focus_eval.data.readers import mmc_amd
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_mmc_amd

# (image_id, split, modality, eye, condition, abnormal), in the order the lists give them
EXPECTED = [
    ("f-h-0101_1", "train", "cfp", "h-0101", "normal", 0), ("f-h-0102_1", "train", "cfp", "h-0102", "normal", 0),
    ("f-d-0103_1", "train", "cfp", "d-0103", "dry_amd", 1), ("f-d-0104_1", "train", "cfp", "d-0104", "dry_amd", 1),
    ("f-p-0105_1", "train", "cfp", "p-0105", "pcv", 1), ("f-p-0106_1", "train", "cfp", "p-0106", "pcv", 1),
    ("f-w-0107_1", "train", "cfp", "w-0107", "wet_amd", 1), ("f-w-0107_2", "train", "cfp", "w-0107", "wet_amd", 1),
    ("o-h-0101_1", "train", "oct", "h-0101", "normal", 0), ("o-d-0103_1", "train", "oct", "d-0103", "dry_amd", 1),
    ("o-p-0105_1", "train", "oct", "p-0105", "pcv", 1), ("o-p-0105_2", "train", "oct", "p-0105", "pcv", 1),
    ("o-w-0107_1", "train", "oct", "w-0107", "wet_amd", 1),
    ("f-h-0201_1", "val", "cfp", "h-0201", "normal", 0), ("f-d-0202_1", "val", "cfp", "d-0202", "dry_amd", 1),
    ("f-p-0203_1", "val", "cfp", "p-0203", "pcv", 1), ("f-w-0204_1", "val", "cfp", "w-0204", "wet_amd", 1),
    ("o-h-0201_1", "val", "oct", "h-0201", "normal", 0), ("o-w-0204_1", "val", "oct", "w-0204", "wet_amd", 1),
    ("f-h-0301_1", "test", "cfp", "h-0301", "normal", 0), ("f-h-0302_1", "test", "cfp", "h-0302", "normal", 0),
    ("f-d-0303_1", "test", "cfp", "d-0303", "dry_amd", 1), ("f-p-0304_1", "test", "cfp", "p-0304", "pcv", 1),
    ("f-w-0305_1", "test", "cfp", "w-0305", "wet_amd", 1), ("f-w-0306_1", "test", "cfp", "w-0306", "wet_amd", 1),
    ("o-h-0301_1", "test", "oct", "h-0301", "normal", 0), ("o-d-0303_1", "test", "oct", "d-0303", "dry_amd", 1),
    ("o-d-0303_2", "test", "oct", "d-0303", "dry_amd", 1), ("o-p-0304_1", "test", "oct", "p-0304", "pcv", 1),
    ("o-w-0305_1", "test", "oct", "w-0305", "wet_amd", 1),
]


@pytest.fixture
def folder(tmp_path):
    raw_mmc_amd.write(tmp_path / "mmc_amd", seed=3, image=lambda labels: _picture())
    return tmp_path / "mmc_amd"


def _picture():
    from PIL import Image

    return Image.new("RGB", (32, 32), (120, 40, 20))


def test_row_by_row(folder):
    load = mmc_amd.read(folder)
    rows = [(r.image_id, r.split, r.modality, r.patient_id, *r.conditions, r.abnormal) for r in load.records]
    assert rows == EXPECTED
    for r in load.records:
        sub = "cfp-clahe-448x448" if r.modality == "cfp" else "oct-median3x3-448x448"
        assert r.relpath == f"mmc-amd/ImageData/{sub}/{r.image_id}.jpg"
    assert [(s.image_id, s.reason) for s in load.skipped] == [("o-w-0307_1", "image file o-w-0307_1.jpg not found")]
    assert load.metadata["split_version"] == "mmc-amd-splitAP" and not load.warnings
    assert load.metadata["label_files"]["test/oct"] == "mmc-amd-splitAP-test/annotations/oct.txt"


def test_the_published_split_is_used_and_keeps_eyes_apart(folder):
    load = load_dataset("mmc_amd", folder.parent)
    assert load.metadata["split_source"] == "official"
    splits = {}
    for r in load.records:
        splits.setdefault(r.patient_id, set()).add(r.split)
    assert all(len(s) == 1 for s in splits.values())


def test_split_a_is_read_with_a_warning_when_split_ap_is_absent(folder):
    for split in ("train", "val", "test"):
        (folder / f"mmc-amd-splitAP-{split}").rename(folder / f"mmc-amd-splitA-{split}")
    load = mmc_amd.read(folder)
    assert len(load.records) == len(EXPECTED) and load.metadata["split_version"] == "mmc-amd-splitA"
    assert "keeps eyes but not patients apart" in load.warnings[0]


def test_an_annotation_that_disagrees_with_the_image_id_is_an_error(folder):
    path = folder / "mmc-amd-splitAP-test" / "annotations" / "cfp.txt"
    path.write_text(path.read_text().replace("f-d-0303_1 1", "f-d-0303_1 2"))
    with pytest.raises(DataError, match="category 2 but its id says 'd'"):
        mmc_amd.read(folder)


def test_annotation_and_list_lengths_must_agree(folder):
    path = folder / "mmc-amd-splitAP-val" / "annotations" / "oct.txt"
    path.write_text("0\n")
    with pytest.raises(DataError, match="1 annotation lines for 2 listed images"):
        mmc_amd.read(folder)


def test_split_folders_are_required(tmp_path):
    (tmp_path / "mmc_amd").mkdir()
    with pytest.raises(DataError, match="mmc-amd-splitAP-test"):
        mmc_amd.read(tmp_path / "mmc_amd")

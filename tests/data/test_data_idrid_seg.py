"""IDRiD part A (Segmentation) reader on a miniature copy of its raw layout: per image the findings, sectors
around the optic disc centre, size and count bins computed by hand from the miniature's boxes, the release's
left-out masks, and the idrid folder it shares with part B."""

from functools import partial

import pytest
from helpers import raw_layouts
from helpers.raw_layouts import raw_copy

from focus_eval.data.readers import idrid_seg
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_idrid, raw_idrid_seg

LESIONS = ("microaneurysm", "hemorrhage", "hard_exudate", "cotton_wool_spot")
NO = ("not_observed",)


solid = partial(raw_layouts.solid, green_blue=(0, 0))


# Per image (split; MA, HE, EX, SE each as (present, sectors, size bin, count bin)). Masks are 90 x 60 = 5400
# pixels: small < 5.4 pixels, medium < 54. The disc box of 8 x 8 pixels at (70, 30) gives the centre
# (69.5, 29.5), nasal to the right (away from the image centre x = 45); at (20, 30) nasal is to the left.
# Sectors: by each lesion's centroid, horizontal when |dx| >= |dy|.
EXPECTED = {
    "train/IDRiD_01": ("train", (1, ("temporal", "inferior"), "small", "1-5"), (1, ("temporal",), "medium", "1-5"),
                       (0, NO, "none", "none"), (0, NO, "none", "none")),
    "train/IDRiD_02": ("train", (1, ("superior",), "medium", "6-20"), (1, ("temporal",), "large", "1-5"),
                       (1, ("inferior",), "small", "1-5"), (1, ("nasal",), "medium", "1-5")),
    "train/IDRiD_03": ("train", (1, ("temporal", "superior"), "medium", "over_20"), (0, NO, "none", "none"),
                       (1, ("superior",), "large", "1-5"), (0, NO, "none", "none")),
    "train/IDRiD_04": ("train", (1, None, "small", "1-5"), (1, None, "medium", "1-5"),  # no optic disc mask
                       (0, None, "none", "none"), (0, None, "none", "none")),
    "train/IDRiD_05": ("train", (0, NO, "none", "none"), (1, ("temporal",), "medium", "1-5"),
                       (0, NO, "none", "none"), (1, ("superior",), "small", "1-5")),
    "train/IDRiD_06": ("train", (1, ("nasal", "inferior"), "small", "1-5"), (0, NO, "none", "none"),
                       (0, NO, "none", "none"), (0, NO, "none", "none")),
    "test/IDRiD_55": ("test", (1, ("temporal",), "small", "1-5"), (1, ("temporal",), "large", "1-5"),
                      (0, NO, "none", "none"), (1, ("inferior",), "medium", "1-5")),
    "test/IDRiD_56": ("test", (0, NO, "none", "none"), (0, NO, "none", "none"),
                      (1, ("temporal",), "medium", "1-5"), (0, NO, "none", "none")),
    "test/IDRiD_57": ("test", (1, ("temporal", "inferior"), "medium", "6-20"), (0, NO, "none", "none"),
                      (0, NO, "none", "none"), (0, NO, "none", "none")),
    "test/IDRiD_58": ("test", (1, ("nasal",), "small", "1-5"), (1, ("superior",), "medium", "1-5"),
                      (0, NO, "none", "none"), (0, NO, "none", "none")),
}


def row(record):
    per_lesion = tuple((record.findings[n], record.lesion_quadrants.get(n), record.lesion_size[n],
                        record.lesion_count[n]) for n in LESIONS)
    return (record.split, *per_lesion)


@pytest.fixture
def folder(tmp_path):
    return raw_copy(raw_idrid_seg, tmp_path / "idrid", seed=7, image=solid)


def test_records_row_by_row(folder):
    load = idrid_seg.read(folder)
    assert [r.image_id for r in load.records] == list(EXPECTED)
    for record in load.records:
        assert row(record) == EXPECTED[record.image_id], record.image_id
        assert record.relpath == f"A. Segmentation/1. Original Images/{raw_idrid_seg.SPLIT_DIRS[record.split]}/" \
                                 f"{record.image_id.split('/')[1]}.jpg"
        assert record.modality == "cfp" and record.dr is None
    assert load.by_id()["train/IDRiD_01"].extra == {"disc_centre": (69.5, 29.5)}
    assert load.skipped == [] and load.warnings == []


def test_a_missing_lesion_folder_leaves_the_lesion_unannotated(folder):
    soft = folder / "A. Segmentation/2. All Segmentation Groundtruths/b. Testing Set/4. Soft Exudates"
    for path in soft.iterdir():
        path.unlink()
    soft.rmdir()
    load = idrid_seg.read(folder)
    test = [r for r in load.records if r.split == "test"]
    assert all("cotton_wool_spot" not in r.findings and "cotton_wool_spot" not in r.lesion_size for r in test)
    assert load.by_id()["train/IDRiD_02"].findings["cotton_wool_spot"] == 1
    assert any("no '4. Soft Exudates' folder" in w for w in load.warnings)


def test_stray_mask_and_empty_image(folder):
    masks = folder / "A. Segmentation/2. All Segmentation Groundtruths/a. Training Set/1. Microaneurysms"
    raw_idrid_seg.draw_mask([]).save(masks / "IDRiD_99_MA.tif")
    (folder / "A. Segmentation/1. Original Images/b. Testing Set/IDRiD_56.jpg").write_bytes(b"")
    load = idrid_seg.read(folder)
    assert "test/IDRiD_56" not in load.by_id() and [s.image_id for s in load.skipped] == ["test/IDRiD_56"]
    assert any("1 mask name(s) have no image" in w and "idrid_99" in w for w in load.warnings)


def test_unreadable_mask_names_the_file(folder):
    bad = folder / "A. Segmentation/2. All Segmentation Groundtruths/b. Testing Set/2. Haemorrhages/IDRiD_58_HE.tif"
    bad.write_bytes(b"not a tiff")
    with pytest.raises(DataError) as info:
        idrid_seg.read(folder)
    assert info.value.file == str(bad)


def test_absent_part_names_what_it_expects(tmp_path):
    raw_idrid.write(tmp_path / "idrid", seed=7, image=solid)
    with pytest.raises(DataError, match="A. Segmentation/2. All Segmentation Groundtruths"):
        idrid_seg.read(tmp_path / "idrid")


def test_load_through_the_shared_idrid_folder(tmp_path):
    raw_idrid.write(tmp_path / "idrid", seed=7, image=solid)
    raw_idrid_seg.write(tmp_path / "idrid", seed=7, image=solid)
    load = load_dataset("idrid_seg", tmp_path)
    assert len(load.records) == 10 and load.metadata["split_source"] == "official+carved_val"
    assert {r.image_id for r in load.records if r.split == "test"} == {i for i in EXPECTED if i.startswith("test/")}
    assert len(load_dataset("idrid", tmp_path).records) == 25  # part B unchanged beside it

"""DDR reader on a miniature copy of its raw layout: the grading part row by row (grade 5 kept as the
ungradable class), the lesion part image by image (findings, size and count bins computed by hand from the
miniature's boxes), the release's quirks and clear errors."""

from functools import partial

import pytest
from helpers import raw_layouts
from helpers.raw_layouts import raw_copy

from focus_eval.data.readers import ddr
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_ddr

LESIONS = ("microaneurysm", "hemorrhage", "hard_exudate", "cotton_wool_spot")


solid = partial(raw_layouts.solid, green_blue=(9, 9))


# (image_id, split, dr_grade, dr, referable_dr, quality): referable without an edema grade is 1 from grade 2
# and undefined below; grade 5 is ungradable (dr, referable_dr undefined, quality inadequate).
GRADING = [
    ("grading/train/007-0004-000", "train", 0, 0, None, "adequate"),
    ("grading/train/007-0025-000", "train", 1, 1, None, "adequate"),
    ("grading/train/007-0061-100", "train", 2, 1, 1, "adequate"),  # tab-separated line
    ("grading/train/007-0120-200", "train", 3, 1, 1, "adequate"),
    ("grading/train/007-0188-300", "train", 4, 1, 1, "adequate"),
    ("grading/train/007-0207-000", "train", 5, None, None, "inadequate"),
    ("grading/train/20170323093305605", "train", 0, 0, None, "adequate"),
    ("grading/train/20170323100552811", "train", 2, 1, 1, "adequate"),
    ("grading/train/007-0301-100", "train", 1, 1, None, "adequate"),
    ("grading/train/007-0355-000", "train", 0, 0, None, "adequate"),
    ("grading/train/007-0412-400", "train", 4, 1, 1, "adequate"),
    ("grading/train/007-0466-200", "train", 2, 1, 1, "adequate"),
    ("grading/valid/007-1002-000", "val", 0, 0, None, "adequate"),
    ("grading/valid/007-1017-100", "val", 1, 1, None, "adequate"),
    ("grading/valid/007-1050-200", "val", 2, 1, 1, "adequate"),
    ("grading/valid/007-1098-300", "val", 3, 1, 1, "adequate"),
    ("grading/valid/007-1133-400", "val", 4, 1, 1, "adequate"),
    ("grading/valid/20170411155036120", "val", 5, None, None, "inadequate"),
    ("grading/test/007-2001-000", "test", 0, 0, None, "adequate"),
    ("grading/test/007-2040-100", "test", 1, 1, None, "adequate"),
    ("grading/test/007-2052-200", "test", 2, 1, 1, "adequate"),
    ("grading/test/007-2076-300", "test", 3, 1, 1, "adequate"),
    ("grading/test/007-2105-400", "test", 4, 1, 1, "adequate"),  # trailing spaces
    ("grading/test/007-2119-000", "test", 5, None, None, "inadequate"),
    ("grading/test/20170517101431502", "test", 2, 1, 1, "adequate"),
    ("grading/test/007-2230-000", "test", 0, 0, None, "adequate"),
]
# Lesion images: per lesion (present, size bin, count bin); masks are 80 x 60 = 4800 pixels, so small is
# under 4.8 pixels and medium under 48. Images come in file-name order.
A = (0, "none", "none")
LESION_ROWS = {
    "lesion/train/007-1789-100": ("train", (1, "small", "1-5"), (1, "large", "1-5"), A, A),  # EX file left out
    "lesion/train/007-1812-100": ("train", (1, "medium", "6-20"), A, (1, "medium", "1-5"), (1, "small", "1-5")),
    "lesion/train/007-2843-200": ("train", A, A, A, A),
    "lesion/train/20170413102628830": ("train", (1, "medium", "over_20"), (1, "medium", "1-5"), A, A),
    "lesion/valid/007-3050-200": ("val", (1, "small", "1-5"), (1, "large", "1-5"), A, A),
    "lesion/valid/007-3111-300": ("val", A, (1, "small", "1-5"), (1, "medium", "6-20"), (1, "medium", "1-5")),
    "lesion/test/007-3500-300": ("test", (1, "small", "1-5"), A, (1, "large", "1-5"), A),  # SE file left out
    "lesion/test/007-3677-400": ("test", (1, "medium", "over_20"), A, (1, "small", "1-5"), A),
    "lesion/test/20170627163217393": ("test", A, (1, "medium", "1-5"), A, (1, "small", "1-5")),
}


def grading_rows(load):
    return [(r.image_id, r.split, r.dr_grade, r.dr, r.referable_dr, r.quality) for r in load.records
            if r.image_id.startswith("grading/")]


def lesion_row(record):
    return (record.split, *((record.findings[n], record.lesion_size[n], record.lesion_count[n]) for n in LESIONS))


@pytest.fixture
def folder(tmp_path):
    return raw_copy(raw_ddr, tmp_path / "ddr", seed=7, image=solid)


def test_grading_records_row_by_row(folder):
    load = ddr.read(folder)
    assert grading_rows(load) == GRADING
    graded = [r for r in load.records if r.image_id.startswith("grading/")]
    assert all(r.relpath == f"DDR-dataset/DR_grading/{r.image_id.split('/')[1]}/{r.image_id.split('/')[2]}.jpg"
               and not r.findings and r.modality == "cfp" for r in graded)
    assert load.skipped == [] and load.warnings == []


def test_lesion_records_image_by_image(folder):
    load = ddr.read(folder)
    lesions = [r for r in load.records if r.image_id.startswith("lesion/")]
    assert [r.image_id for r in lesions] == list(LESION_ROWS)
    for record in lesions:
        assert lesion_row(record) == LESION_ROWS[record.image_id], record.image_id
        assert record.lesion_quadrants == {} and record.dr_grade is None  # no optic disc, no grade in this part
    assert lesions[4].relpath == "DDR-dataset/lesion_segmentation/valid/image/007-3050-200.jpg"


def test_missing_image_and_missing_lesion_folder(folder):
    (folder / "DDR-dataset/DR_grading/test/007-2076-300.jpg").unlink()
    soft = folder / "DDR-dataset/lesion_segmentation/test/label/SE"
    for path in soft.iterdir():
        path.unlink()
    soft.rmdir()
    load = ddr.read(folder)
    assert [r[0] for r in grading_rows(load)] == [g[0] for g in GRADING if g[0] != "grading/test/007-2076-300"]
    [skip] = load.skipped
    assert (skip.image_id, skip.row) == ("grading/test/007-2076-300", 4) and skip.file.endswith("test.txt")
    test_lesions = [r for r in load.records if r.image_id.startswith("lesion/test/")]
    assert all("cotton_wool_spot" not in r.findings for r in test_lesions)
    assert any("no SE/ folder" in w for w in load.warnings)


@pytest.mark.parametrize("line, message", [("007-0025-000.jpg 7", "'7' is not a grade"),
                                           ("007-0025-000.jpg", "expected '<image name> <grade>'")])
def test_bad_grading_line_names_file_and_row(folder, line, message):
    label = folder / "DDR-dataset/DR_grading/train.txt"
    label.write_text(label.read_text().replace("007-0025-000.jpg 1", line))
    with pytest.raises(DataError, match=message) as info:
        ddr.read(folder)
    assert (info.value.file, info.value.row) == (str(label), 2)


def test_one_part_alone_is_read_with_a_warning(folder):
    import shutil

    shutil.rmtree(folder / "DDR-dataset/lesion_segmentation")
    load = ddr.read(folder)
    assert len(load.records) == len(GRADING)
    assert any("no lesion_segmentation/ folder" in w for w in load.warnings)


def test_absent_dataset_names_what_it_expects(tmp_path):
    (tmp_path / "ddr").mkdir()
    with pytest.raises(DataError, match="DDR-dataset/DR_grading/"):
        ddr.read(tmp_path / "ddr")


def test_official_split_through_the_registry(folder, tmp_path):
    load = load_dataset("ddr", tmp_path)
    assert load.metadata["split_source"] == "official"
    assert {r.image_id: r.split for r in load.records} == {
        **{g[0]: g[1] for g in GRADING}, **{i: row[0] for i, row in LESION_ROWS.items()}}

"""Messidor-2 reader on miniature copies of the ADCIS release (with the Krause grades and the exam pairing)
and of the Kaggle preprocessed copy (no pairing)."""

import csv

import pytest
from helpers.raw_layouts import columns, raw_copy, solid

from focus_eval.data.readers import messidor2
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_messidor2


# (image_id, patient_id (exam), dr, referable_dr, relpath); the ungradable and the missing image are absent
ADCIS = [
    ("20051020_43808_0100_PP.png", "20051020_43808_0100_PP", 0, 0, "IMAGES/20051020_43808_0100_PP.png"),
    ("20051020_43832_0100_PP.png", "20051020_43808_0100_PP", 1, 0, "IMAGES/20051020_43832_0100_PP.png"),
    ("20051020_44261_0100_PP.png", "20051020_44261_0100_PP", 1, 1, "IMAGES/20051020_44261_0100_PP.png"),
    ("20051020_45050_0100_PP.png", "20051020_45050_0100_PP", 1, 1, "IMAGES/20051020_45050_0100_PP.png"),
    ("20051020_45068_0100_PP.png", "20051020_45050_0100_PP", 0, 0, "IMAGES/20051020_45068_0100_PP.png"),
    ("IM000001.jpg", "IM000001", 1, 1, "IMAGES/IM000001.JPG"),
    ("IM000002.jpg", "IM000001", 1, 1, "IMAGES/IM000002.JPG"),
    ("IM000013.jpg", "IM000012", 0, 0, "IMAGES/IM000013.JPG"),
    ("IM000057.jpg", "IM000057.jpg", 0, 0, "IMAGES/IM000057.JPG"),
    ("20051020_44400_0100_PP.png", "20051020_44400_0100_PP", 0, 0, "IMAGES/20051020_44400_0100_PP.png"),
    ("20051020_44431_0100_PP.png", "20051020_44400_0100_PP", 0, 0, "IMAGES/20051020_44431_0100_PP.png"),
    ("20051020_44692_0100_PP.png", "20051020_44692_0100_PP", 0, 0, "IMAGES/20051020_44692_0100_PP.png"),
    ("20051020_44714_0100_PP.png", "20051020_44692_0100_PP", 0, 0, "IMAGES/20051020_44714_0100_PP.png"),
    ("20051020_45110_0100_PP.png", "20051020_45110_0100_PP", 1, 1, "IMAGES/20051020_45110_0100_PP.png"),
    ("20051020_45137_0100_PP.png", "20051020_45110_0100_PP", 1, 1, "IMAGES/20051020_45137_0100_PP.png"),
]
PREPROCESS = "messidor-2/messidor-2/preprocess"
KAGGLE = [
    ("20051020_43808_0100_PP.png", "20051020_43808_0100_PP.png", 0, 0, f"{PREPROCESS}/20051020_43808_0100_PP.png"),
    ("20051020_43832_0100_PP.png", "20051020_43832_0100_PP.png", 1, 0, f"{PREPROCESS}/20051020_43832_0100_PP.png"),
    ("20051020_44261_0100_PP.png", "20051020_44261_0100_PP.png", 1, 1, f"{PREPROCESS}/20051020_44261_0100_PP.png"),
    ("20051020_45050_0100_PP.png", "20051020_45050_0100_PP.png", 1, 1, f"{PREPROCESS}/20051020_45050_0100_PP.png"),
    ("20051020_45068_0100_PP.png", "20051020_45068_0100_PP.png", 0, 0, f"{PREPROCESS}/20051020_45068_0100_PP.png"),
    ("IM000001.JPG", "IM000001.JPG", 1, 1, f"{PREPROCESS}/IM000001.JPG"),
    ("IM000002.JPG", "IM000002.JPG", 1, 1, f"{PREPROCESS}/IM000002.JPG"),
    ("IM000013.JPG", "IM000013.JPG", 0, 0, f"{PREPROCESS}/IM000013.JPG"),
    ("IM000057.JPG", "IM000057.JPG", 0, 0, f"{PREPROCESS}/IM000057.JPG"),
    ("20051020_44400_0100_PP.png", "20051020_44400_0100_PP.png", 0, 0, f"{PREPROCESS}/20051020_44400_0100_PP.png"),
    ("20051020_44431_0100_PP.png", "20051020_44431_0100_PP.png", 0, 0, f"{PREPROCESS}/20051020_44431_0100_PP.png"),
    ("20051020_44692_0100_PP.png", "20051020_44692_0100_PP.png", 0, 0, f"{PREPROCESS}/20051020_44692_0100_PP.png"),
    ("20051020_44714_0100_PP.png", "20051020_44714_0100_PP.png", 0, 0, f"{PREPROCESS}/20051020_44714_0100_PP.png"),
    ("20051020_45110_0100_PP.png", "20051020_45110_0100_PP.png", 1, 1, f"{PREPROCESS}/20051020_45110_0100_PP.png"),
    ("20051020_45137_0100_PP.png", "20051020_45137_0100_PP.png", 1, 1, f"{PREPROCESS}/20051020_45137_0100_PP.png"),
]


rows = columns("image_id", "patient_id", "dr", "referable_dr", "relpath")


@pytest.fixture
def adcis(tmp_path):
    return raw_copy(raw_messidor2, tmp_path / "messidor2", seed=5, image=solid)


@pytest.fixture
def kaggle(tmp_path):
    return raw_copy(raw_messidor2, tmp_path / "messidor2", seed=5, image=solid, layout="kaggle")


def rewrite_labels(folder, change):
    path = folder / "messidor_data.csv"
    with open(path, newline="") as handle:
        table = list(csv.reader(handle))
    change(table)
    with open(path, "w", newline="") as handle:
        csv.writer(handle).writerows(table)


def test_adcis_layout_row_by_row(adcis):
    load = messidor2.read(adcis)
    assert rows(load) == ADCIS
    assert all(r.glaucoma is None and r.age is None and r.sex is None and r.quality is None for r in load.records)
    assert load.metadata["layout"] == "adcis"


def test_ungradable_row_is_dropped_first_and_missing_image_is_skipped(adcis):
    skipped = [(s.row, s.image_id, s.reason) for s in messidor2.read(adcis).skipped]
    assert skipped[0] == (5, "20051020_44284_0100_PP.png", "adjudicated_gradable == 0 (ungradable)")
    assert skipped[1][:2] == (11, "IM000012.jpg")
    assert "missing" in skipped[1][2]
    # the ungradable image file exists: it is dropped for its label, not for a missing file
    assert (adcis / "IMAGES" / "20051020_44284_0100_PP.png").is_file()


def test_grades_and_edema_are_kept_in_extra(adcis):
    by_id = messidor2.read(adcis).by_id()
    assert by_id["20051020_44261_0100_PP.png"].extra["adjudicated_dr_grade"] == 2  # written as '2.0'
    assert by_id["IM000001.jpg"].extra == {"adjudicated_dr_grade": 1, "adjudicated_dme": 1, "exam": "IM000001"}


def test_image_not_in_any_exam_is_its_own_group_with_a_warning(adcis):
    load = messidor2.read(adcis)
    assert any("1 image(s) are in no exam" in w for w in load.warnings)


def test_kaggle_layout_row_by_row_with_image_level_groups(kaggle):
    load = messidor2.read(kaggle)
    assert rows(load) == KAGGLE
    assert [(s.row, s.image_id) for s in load.skipped] == [(10, "IM000012.JPG")]
    assert any("no messidor-2.csv" in w for w in load.warnings)
    assert any("preprocessed" in w for w in load.warnings)


def test_load_dataset_keeps_both_eyes_of_an_exam_in_one_split(adcis):
    load = load_dataset("messidor2", adcis.parent)
    assert len(load.records) == 15
    for exam in {r.patient_id for r in load.records}:
        assert len({r.split for r in load.records if r.patient_id == exam}) == 1
    assert load.metadata["group_key"] == messidor2.SPEC.group_key
    for split in ("train", "val", "test"):
        for target in ("dr", "referable_dr"):
            assert {r.label(target) for r in load.split(split)} == {0, 1}, (split, target)


def test_load_dataset_reads_the_kaggle_copy(kaggle):
    load = load_dataset("messidor2", kaggle.parent)
    assert sorted(r.image_id for r in load.records) == sorted(row[0] for row in KAGGLE)


def test_unknown_grade_is_an_error_naming_file_and_row(adcis):
    rewrite_labels(adcis, lambda t: t[2].__setitem__(1, "5"))
    with pytest.raises(DataError, match=r"messidor_data.csv, row 3: .*'5' is not a grade"):
        messidor2.read(adcis)


def test_unknown_gradable_code_is_an_error(adcis):
    rewrite_labels(adcis, lambda t: t[1].__setitem__(3, "2"))
    with pytest.raises(DataError, match=r"row 2: column 'adjudicated_gradable': unknown code '2'"):
        messidor2.read(adcis)


def test_edema_as_text_is_an_error(adcis):
    rewrite_labels(adcis, lambda t: t[1].__setitem__(2, "yes"))
    with pytest.raises(DataError, match=r"row 2: column 'adjudicated_dme': unknown code 'yes'"):
        messidor2.read(adcis)


def test_empty_grade_of_a_gradable_image_excludes_dr_only_where_undecided(adcis):
    # grade empty, DME 1: referable by the DME arm; DR undefined
    rewrite_labels(adcis, lambda t: t[7].__setitem__(1, ""))
    record = messidor2.read(adcis).by_id()["IM000001.jpg"]
    assert (record.dr, record.referable_dr) == (None, 1)


def test_duplicate_image_is_an_error(adcis):
    rewrite_labels(adcis, lambda t: t.append(list(t[1])))
    with pytest.raises(DataError, match="listed twice"):
        messidor2.read(adcis)


def test_malformed_pairing_row_is_an_error(adcis):
    path = adcis / "messidor-2.csv"
    path.write_text(path.read_text() + "IM000099.JPG\n")
    with pytest.raises(DataError, match=r"messidor-2.csv, row 10: expected two image names"):
        messidor2.read(adcis)


def test_missing_label_file_names_the_expected_file(tmp_path):
    (tmp_path / "messidor2" / "IMAGES").mkdir(parents=True)
    with pytest.raises(DataError, match="messidor_data.csv"):
        messidor2.read(tmp_path / "messidor2")


def test_missing_image_folder_names_the_expected_paths(adcis):
    for p in (adcis / "IMAGES").iterdir():
        p.unlink()
    (adcis / "IMAGES").rmdir()
    with pytest.raises(DataError, match="IMAGES"):
        messidor2.read(adcis)

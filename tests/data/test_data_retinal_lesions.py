"""Retinal-Lesions reader on a miniature copy of its raw layout: grades, patient and eye row by row, lesion
findings with size and count bins computed by hand from the miniature's boxes, the release's left-out masks
and grey 127, lesion positions from the release's disc and fovea localisation file (worked out by hand, and its
hostile rows refused with the file and row), and the patient-grouped split."""

from functools import partial

import pytest
from helpers import raw_layouts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from helpers.raw_layouts import raw_copy

from focus_eval.data.readers import retinal_lesions
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_retinal_lesions

MAIN = ("microaneurysm", "hemorrhage", "hard_exudate", "cotton_wool_spot")
EXTRA = ("vitreous_hemorrhage", "preretinal_hemorrhage", "new_vessels", "fibrous_proliferation")


solid = partial(raw_layouts.solid, green_blue=(3, 3))


# (image_id, patient, eye, dr_grade (our label), dr, referable_dr, kaggle grade)
GRADES = [
    ("10009_left", "10009", "left", 0, 0, None, 0), ("10009_right", "10009", "right", 1, 1, None, 1),
    ("10015_left", "10015", "left", 2, 1, 1, 2), ("10015_right", "10015", "right", 2, 1, 1, 3),
    ("10028_left", "10028", "left", 3, 1, 1, 3), ("1003_right", "1003", "right", 4, 1, 1, 4),
    ("10045_left", "10045", "left", 0, 0, None, 0), ("10045_right", "10045", "right", 2, 1, 1, 2),
    ("10067_right", "10067", "right", 1, 1, None, 1), ("1010_left", "1010", "left", 2, 1, 1, 2),
    ("10110_left", "10110", "left", 0, 0, None, 0), ("10110_right", "10110", "right", 3, 1, 1, 2),
]
# Per image, MA / HE / EX / CWS as (present, size, count); masks are 64 x 64 = 4096 pixels, so small is up to
# 4 pixels and medium up to 40. Images without a mask folder, or with an empty one, have every lesion absent.
A = (0, "none", "none")
LESIONS = {
    "10009_left": (A, A, A, A),
    "10009_right": ((1, "small", "1-5"), A, A, A),
    "10015_left": ((1, "small", "1-5"), (1, "medium", "1-5"), (1, "large", "1-5"), A),
    "10015_right": (A, (1, "medium", "1-5"), A, (1, "small", "1-5")),  # the haemorrhage is grey 127
    "10028_left": ((1, "medium", "over_20"), (1, "medium", "6-20"), A, A),
    "1003_right": (A, (1, "small", "1-5"), A, A),
    "10045_left": (A, A, A, A),
    "10045_right": (A, A, (1, "medium", "6-20"), A),
    "10067_right": ((1, "small", "1-5"), A, A, A),
    "1010_left": (A, (1, "medium", "1-5"), (1, "small", "1-5"), (1, "medium", "1-5")),
    "10110_left": (A, A, A, A),
    "10110_right": ((1, "small", "1-5"), (1, "medium", "over_20"), A, A),
}


def rows(load):
    return [(r.image_id, r.patient_id, r.laterality, r.dr_grade, r.dr, r.referable_dr, r.extra["kaggle_grade"])
            for r in load.records]


@pytest.fixture
def folder(tmp_path):
    return raw_copy(raw_retinal_lesions, tmp_path / "retinal_lesions", seed=7, image=solid)


def test_records_row_by_row(folder):
    load = retinal_lesions.read(folder)
    assert rows(load) == GRADES
    for record in load.records:
        got = tuple((record.findings[n], record.lesion_size[n], record.lesion_count[n]) for n in MAIN)
        assert got == LESIONS[record.image_id], record.image_id
        assert record.relpath == f"retinal-lesions-v20191227/images_896x896/{record.image_id}.jpg"
        located = record.image_id != raw_retinal_lesions.UNLOCATED
        assert set(record.lesion_quadrants) == (set(MAIN + EXTRA) if located else set())
        assert record.modality == "cfp" and record.split is None
    assert load.skipped == []
    assert [w for w in load.warnings if "99999_left" in w and "no row in dr_grades.csv" in w]


def test_the_proliferative_lesions_under_project_names(folder):
    record = retinal_lesions.read(folder).by_id()["1003_right"]
    assert {n: (record.findings[n], record.lesion_size[n]) for n in EXTRA} == {
        "vitreous_hemorrhage": (1, "large"), "preretinal_hemorrhage": (1, "large"), "new_vessels": (1, "medium"),
        "fibrous_proliferation": (1, "medium")}
    assert all(sum(r.findings[n] for n in EXTRA) == 0 for r in retinal_lesions.read(folder).records
               if r.image_id != "1003_right")


def test_missing_image_is_skipped_and_unknown_mask_reported(folder):
    root = folder / "retinal-lesions-v20191227"
    (root / "images_896x896/10045_right.jpg").unlink()
    (root / "lesion_segs_896x896/10015_left/optic_disc.png").write_bytes(b"x")
    load = retinal_lesions.read(folder)
    assert [r[0] for r in rows(load)] == [g[0] for g in GRADES if g[0] != "10045_right"]
    [skip] = load.skipped
    assert (skip.image_id, skip.row) == ("10045_right", 9)
    assert any("no known lesion mask" in w and "optic_disc.png" in w for w in load.warnings)
    assert not any("10045_right" in w and "no row" in w for w in load.warnings)


def test_bad_grade_and_missing_column_name_the_file(folder):
    label = folder / "retinal-lesions-v20191227/dr_grades.csv"
    text = label.read_text()
    label.write_text(text.replace("10028_left,3,3", "10028_left,3,6"))
    with pytest.raises(DataError, match="'6' is not a grade") as info:
        retinal_lesions.read(folder)
    assert (info.value.file, info.value.row) == (str(label), 6)
    label.write_text(text.replace("our label", "grade"))
    with pytest.raises(DataError, match="our label"):
        retinal_lesions.read(folder)


def test_absent_dataset_names_the_expected_file(tmp_path):
    (tmp_path / "retinal_lesions").mkdir()
    with pytest.raises(DataError, match="retinal-lesions-v20191227/dr_grades.csv"):
        retinal_lesions.read(tmp_path / "retinal_lesions")


def test_split_keeps_both_eyes_of_a_patient_together(folder, tmp_path):
    load = load_dataset("retinal_lesions", tmp_path)
    assert load.metadata["split_source"] == "grouped_stratified"
    by_patient: dict[str, set] = {}
    for record in load.records:
        by_patient.setdefault(record.patient_id, set()).add(record.split)
    assert all(len(s) == 1 for s in by_patient.values()) and len(by_patient) == 8
    assert {r.split for r in load.records} == {"train", "val", "test"}


LOCALISATION = "od_fovea_autoloc.txt"


def test_positions_from_the_release_localisation(folder):
    """Right eye: disc box (44, 28)-(52, 36), centre (48, 32), fovea centre (24, 34), so nasal is to the right.
    10009_right's microaneurysm dots sit near (10.5, 10.5) (dx -37.5 beats dy -21.5: temporal) and (50.5, 50.5)
    (dy 18.5 beats dx 2.5: inferior). 1003_right's preretinal haemorrhage box (0, 0)-(10, 10) is temporal and its
    fibrous proliferation (40, 5)-(43, 8) superior (dy -25.5). A left eye is mirrored: 10015_left's haemorrhage
    box (30, 30)-(35, 35) lies at dx +17 of the disc centre (16, 32), towards its fovea at x 40: temporal."""
    load = retinal_lesions.read(folder)
    by_id = load.by_id()
    assert by_id["10009_right"].lesion_quadrants["microaneurysm"] == ("temporal", "inferior")
    assert by_id["10009_right"].lesion_quadrants["hemorrhage"] == ("not_observed",)
    assert by_id["1003_right"].lesion_quadrants["preretinal_hemorrhage"] == ("temporal",)
    assert by_id["1003_right"].lesion_quadrants["fibrous_proliferation"] == ("superior",)
    assert by_id["10015_left"].lesion_quadrants["hemorrhage"] == ("temporal",)
    assert by_id["10009_right"].extra["disc_centre"] == (48.0, 32.0)
    assert by_id["10009_right"].extra["localisation"] == "automatic"
    assert by_id[raw_retinal_lesions.UNLOCATED].lesion_quadrants == {}
    assert any("1 image(s) not in od_fovea_autoloc.txt" in w for w in load.warnings)
    assert any("99999_left" in w and LOCALISATION in w for w in load.warnings)
    assert "od_fovea_autoloc.txt" in load.metadata["label_file"]


def test_without_the_localisation_file_no_positions_and_a_warning(folder):
    (folder / LOCALISATION).unlink()
    load = retinal_lesions.read(folder)
    assert all(r.lesion_quadrants == {} for r in load.records)
    assert any(f"no {LOCALISATION}" in w for w in load.warnings)


def test_a_centre_outside_the_image_gives_no_positions(folder):
    path = folder / LOCALISATION
    path.write_text(path.read_text().replace("10009_right.jpg 44 28 52 36", "10009_right.jpg 440 28 520 36"))
    load = retinal_lesions.read(folder)
    assert load.by_id()["10009_right"].lesion_quadrants == {}
    assert any("outside the image" in w and "10009_right" in w for w in load.warnings)


@pytest.mark.parametrize("line, message", [
    ("10009_right.jpg 44 28 52 36 21 31 27", "expected 9 fields"),
    ("10009_right.jpg 44 28 52 36 21 31 27 nan", "fy_1 must be a number"),
    ("10009_right.jpg 44 28 52 x 21 31 27 37", "ody_1 must be a number"),
    ("77777_right.jpg 52 28 44 36 21 31 27 37", "second corner"),
    ("10009_left.jpg 44 28 52 36 21 31 27 37", "listed twice"),
])
def test_a_bad_localisation_row_names_the_file_and_row(folder, line, message):
    path = folder / LOCALISATION
    rows = path.read_text().splitlines()
    path.write_text("\n".join([*rows, line]) + "\n")
    with pytest.raises(DataError, match=message) as info:
        retinal_lesions.read(folder)
    assert (info.value.file, info.value.row) == (str(path), len(rows) + 1)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x0b\x0c\x1c\x1d"
                                      "\x1e\x85\u2028\u2029"), max_size=80))
def test_any_extra_localisation_line_reads_or_fails_with_its_row(folder, line):
    path = folder / LOCALISATION
    original = path.read_text()
    rows = original.splitlines()
    path.write_text("\n".join([*rows, line]) + "\n")
    try:
        load = retinal_lesions.read(folder)
    except DataError as error:
        assert (error.file, error.row) == (str(path), len(rows) + 1)
    else:
        assert len(load.records) == len(GRADES)
    finally:
        path.write_text(original)

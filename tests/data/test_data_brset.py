"""BRSET reader on its miniature raw layout: the harmonized manifest row by row, versions, cohorts, pitfalls
and bad-input messages."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest
from helpers.raw_layouts import plain

from focus_eval.cli import main
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_brset

NESTED = "physionet.org/files/brazilian-ophthalmological/{version}/"

# image_id, patient_id, dr, referable_dr, glaucoma, age, sex, quality -- written by hand from the rules:
# dr = ICDR >= 1; referable = ICDR >= 2 or edema; glaucoma = increased_cup_disc; sex 1 male / 2 female.
EXPECTED = """\
img00001,1,0,0,0,48,male,adequate
img00002,1,0,0,0,48,male,adequate
img00003,2,0,0,0,61,female,adequate
img00004,2,0,0,0,61,female,inadequate
img00005,3,0,0,0,55,female,adequate
img00006,3,0,0,0,55,female,adequate
img00007,4,0,0,0,70,male,adequate
img00008,4,0,0,0,70,male,adequate
img00009,5,0,0,0,66,female,adequate
img00010,5,0,0,0,66,female,adequate
img00011,6,1,1,0,59,male,adequate
img00012,6,1,0,0,59,male,adequate
img00013,7,1,1,0,72,female,adequate
img00014,7,1,1,0,72,female,inadequate
img00015,8,1,1,0,64,female,adequate
img00016,8,0,0,0,64,female,adequate
img00017,9,0,1,0,50,male,adequate
img00018,9,1,1,0,50,male,adequate
img00019,10,1,1,0,68,female,adequate
img00020,10,1,1,0,68,female,adequate
img00021,11,0,0,1,74,male,adequate
img00022,11,0,0,1,74,male,adequate
img00023,12,0,0,1,63,female,adequate
img00024,12,0,0,0,63,female,adequate
img00025,13,0,0,0,58,male,adequate
img00026,13,0,0,1,58,male,adequate
img00027,14,0,0,1,77,female,adequate
img00028,14,0,0,1,77,female,adequate
img00029,15,0,0,1,69,male,adequate
img00030,15,0,0,1,69,male,inadequate
img00031,16,1,0,0,52,female,adequate
img00032,16,1,0,0,52,female,adequate
img00033,17,1,1,1,81,male,adequate
img00034,18,0,0,0,,female,adequate
img00035,18,0,0,0,,female,adequate
img00036,19,1,1,0,45,male,adequate
img00038,20,0,0,1,,female,adequate
"""
DIABETIC = 33  # the first 33 rows; patients 18-20 are not diabetic


blank = plain(64, (120, 60, 30))


def expected_rows(prefix: str) -> list[dict[str, str]]:
    keys = ("image_id", "patient_id", "dr", "referable_dr", "glaucoma", "age", "sex", "quality")
    rows = [dict(zip(keys, line.split(","))) for line in EXPECTED.splitlines()]
    for row in rows:
        suffix = ".JPG" if row["image_id"] == "img00005" else ".jpg"
        row["path"] = f"{prefix}fundus_photos/{row['image_id']}{suffix}"
    return rows


def export(root: Path, out: Path, *extra: str) -> list[dict[str, str]]:
    assert main(["datasets", "export", "brset", "--data-root", str(root), "-o", str(out), *extra]) == 0
    with out.open(newline="") as handle:
        return list(csv.DictReader(handle))


FOCUS_COLUMNS = ("image_id", "patient_id", "dr", "referable_dr", "glaucoma", "age", "sex", "quality", "path")


def without_split(rows):
    """The FOCUS columns of each exported row (the FunBench columns that follow are checked apart)."""
    return [{k: row[k] for k in FOCUS_COLUMNS} for row in rows]


@pytest.fixture
def brset_root(tmp_path: Path) -> Path:
    raw_brset.write(tmp_path / "brset", seed=0, image=blank)
    return tmp_path


def test_export_all_images_row_by_row(brset_root, tmp_path):
    rows = export(brset_root, tmp_path / "all.csv", "--cohort", "all")
    assert list(rows[0])[:10] == ["image_id", "patient_id", "split", "dr", "referable_dr", "glaucoma", "age", "sex",
                                  "quality", "path"]
    assert {"laterality", "dr_grade"} <= set(rows[0])  # the FunBench fields BRSET carries follow
    assert without_split(rows) == expected_rows(NESTED.format(version="1.0.0"))


def test_default_cohort_is_diabetic(brset_root, tmp_path):
    rows = export(brset_root, tmp_path / "diabetic.csv")
    assert without_split(rows) == expected_rows(NESTED.format(version="1.0.0"))[:DIABETIC]


def test_missing_image_and_stray_files(brset_root):
    load = load_dataset("brset", brset_root, cohort="all")
    assert [(s.image_id, s.row) for s in load.skipped] == [("img00037", 38)]
    assert "image file not found" in load.skipped[0].reason
    assert load.metadata["label_file"] == NESTED.format(version="1.0.0") + "labels.csv"
    assert load.metadata["version"] == "1.0.0"
    assert load.metadata["cohort"] == "all"
    assert all(not r.relpath.endswith("index.html") for r in load.records)


@pytest.mark.parametrize("version, nested, label", [("1.0.1", False, "labels_brset.csv"),
                                                    ("1.0.2", True, "label_brset.csv")])
def test_other_versions_give_the_same_records(tmp_path, version, nested, label):
    raw_brset.write(tmp_path / "brset", seed=1, image=blank, version=version, nested=nested)
    prefix = NESTED.format(version=version) if nested else ""
    load = load_dataset("brset", tmp_path)
    assert load.metadata["version"] == version
    assert load.metadata["label_file"] == prefix + label
    rows = export(tmp_path, tmp_path / "out.csv")
    # v1.0.1 writes diabetes as yes/No: the cohort must still be the 33 diabetic images
    assert without_split(rows) == expected_rows(prefix)[:DIABETIC]
    illumination = {r.extra["illumination"] for r in load.records}
    assert illumination == {"1"}


def test_every_target_has_both_classes_in_every_split(brset_root):
    load = load_dataset("brset", brset_root)
    for split in ("train", "val", "test"):
        for target in ("dr", "referable_dr", "glaucoma"):
            assert {r.label(target) for r in load.split(split)} == {0, 1}, (split, target)


def test_the_diabetes_flag_is_not_the_dr_label(brset_root):
    # img00012 has DR_ICDR 1 but diabetic_retinopathy 0 in the label file; the grade decides
    record = load_dataset("brset", brset_root).by_id()["img00012"]
    assert record.extra["diabetic_retinopathy"] == "0"
    assert record.dr == 1


def _label_file(root: Path) -> Path:
    return root / "brset" / NESTED.format(version="1.0.0") / "labels.csv"


def _edit(path: Path, image_id: str, column: str, value: str) -> None:
    with path.open(newline="", encoding="utf-8-sig") as handle:
        rows = list(csv.reader(handle))
    col = rows[0].index(column)
    for row in rows[1:]:
        if row[0] == image_id:
            row[col] = value
    with path.open("w", newline="", encoding="utf-8-sig") as handle:
        csv.writer(handle).writerows(rows)


def test_bom_is_present_and_handled(brset_root):
    assert _label_file(brset_root).read_bytes().startswith(b"\xef\xbb\xbf")
    assert load_dataset("brset", brset_root).records[0].image_id == "img00001"


def test_missing_folder_names_the_expected_path(tmp_path):
    with pytest.raises(DataError) as info:
        load_dataset("brset", tmp_path)
    assert str(tmp_path / "brset") in str(info.value)


def test_missing_label_file_names_the_candidates(tmp_path):
    (tmp_path / "brset" / "fundus_photos").mkdir(parents=True)
    with pytest.raises(DataError, match="labels.csv or labels_brset.csv or label_brset.csv"):
        load_dataset("brset", tmp_path)


def test_renamed_column(brset_root):
    path = _label_file(brset_root)
    text = path.read_text(encoding="utf-8-sig").replace("DR_ICDR", "DR_GRADE", 1)
    path.write_text(text, encoding="utf-8-sig")
    with pytest.raises(DataError, match="DR_ICDR") as info:
        load_dataset("brset", brset_root)
    assert str(path) in str(info.value)


def test_unknown_sex_code_is_an_error_naming_file_and_row(brset_root):
    _edit(_label_file(brset_root), "img00003", "patient_sex", "0")
    with pytest.raises(DataError) as info:
        load_dataset("brset", brset_root)
    message = str(info.value)
    assert "labels.csv, row 4" in message and "patient_sex" in message and "'0'" in message


def test_sex_code_written_as_float_is_accepted(brset_root):
    _edit(_label_file(brset_root), "img00003", "patient_sex", "2.0")
    assert load_dataset("brset", brset_root).by_id()["img00003"].sex == "female"


def test_unknown_grade_is_an_error(brset_root):
    _edit(_label_file(brset_root), "img00011", "DR_ICDR", "5")
    with pytest.raises(DataError, match="row 12.*DR_ICDR"):
        load_dataset("brset", brset_root)


def test_empty_grade_excludes_the_grade_targets_only(brset_root):
    _edit(_label_file(brset_root), "img00021", "DR_ICDR", "")
    record = load_dataset("brset", brset_root).by_id()["img00021"]
    assert (record.dr, record.referable_dr, record.glaucoma) == (None, None, 1)


def test_image_id_escaping_the_folder_is_rejected(brset_root):
    _edit(_label_file(brset_root), "img00002", "image_id", "../" * 8 + "outside")
    with pytest.raises(DataError, match="escapes the dataset folder"):
        load_dataset("brset", brset_root)


def test_symlink_escaping_the_folder_is_rejected(brset_root, tmp_path):
    outside = tmp_path / "outside.jpg"
    blank({}).save(outside)
    photo = _label_file(brset_root).parent / "fundus_photos" / "img00002.jpg"
    photo.unlink()
    os.symlink(outside, photo)
    with pytest.raises(DataError, match="escapes the dataset folder"):
        load_dataset("brset", brset_root)


def test_duplicate_image_id_is_an_error(brset_root):
    _edit(_label_file(brset_root), "img00002", "image_id", "img00001")
    with pytest.raises(DataError, match="already listed"):
        load_dataset("brset", brset_root)


REAL_LABELS = os.environ.get("FOCUS_REAL_BRSET_LABELS")


@pytest.mark.skipif(not REAL_LABELS, reason="set FOCUS_REAL_BRSET_LABELS to a real BRSET v1.0.0 labels.csv")
def test_real_label_file_counts(tmp_path):
    folder = tmp_path / "brset"
    photos = folder / "fundus_photos"
    photos.mkdir(parents=True)
    (folder / "labels.csv").write_bytes(Path(REAL_LABELS).read_bytes())
    tiny = tmp_path / "tiny.jpg"
    blank({}).resize((8, 8)).save(tiny)
    data = tiny.read_bytes()
    with (folder / "labels.csv").open(newline="", encoding="utf-8-sig") as handle:
        for row in csv.DictReader(handle):
            (photos / f"{row['image_id'].strip()}.jpg").write_bytes(data)

    def positives(load):
        return tuple(sum(1 for r in load.records if r.label(t) == 1) for t in ("dr", "referable_dr", "glaucoma"))

    everything = load_dataset("brset", tmp_path, cohort="all")
    assert len(everything.records) == 16266
    assert positives(everything) == (1056, 952, 3202)
    diabetic = load_dataset("brset", tmp_path)
    assert len(diabetic.records) == 2579
    assert positives(diabetic) == (657, 588, 508)

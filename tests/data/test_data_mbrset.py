"""mBRSET reader on its miniature raw layout: manifest row by row for each copy of the label file, the view
cohort, missing-grade and missing-edema rules, sex coding and bad input."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers.raw_layouts import plain

from focus_eval.cli import main
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_mbrset

PHYSIONET = "physionet.org/files/mbrset/1.0/"

# image_id, patient_id, dr, referable_dr, age, sex, quality -- written by hand from the rules:
# dr = final_icdr >= 1, referable = final_icdr >= 2 or edema yes; no grade -> both excluded; grade < 2 with
# no edema value -> referable excluded; sex 1 male / 0 female; final_quality yes/no; '>= 90' -> 90.
EXPECTED = """\
1.1,1,0,0,63,female,adequate
1.2,1,0,0,63,female,adequate
1.3,1,0,0,63,female,adequate
1.4,1,0,0,63,female,adequate
2.1,2,0,0,57,male,adequate
2.2,2,,,57,male,inadequate
2.3,2,0,0,57,male,adequate
2.4,2,0,0,57,male,adequate
3.1,3,0,0,90,female,adequate
3.2,3,0,0,90,female,adequate
3.3,3,0,0,90,female,adequate
3.4,3,,,90,female,inadequate
4.1,4,0,0,8,male,adequate
4.2,4,0,0,8,male,adequate
4.3,4,0,0,8,male,adequate
4.4,4,0,0,8,male,adequate
5.1,5,1,1,66,female,adequate
5.2,5,1,1,66,female,adequate
5.3,5,1,0,66,female,adequate
5.4,5,1,0,66,female,adequate
6.1,6,1,,70,male,adequate
6.2,6,1,1,70,male,adequate
6.3,6,1,1,70,male,adequate
6.4,6,1,1,70,male,adequate
7.1,7,1,1,59,female,adequate
7.2,7,1,1,59,female,adequate
7.3,7,1,1,59,female,adequate
7.4,7,1,1,59,female,inadequate
8.1,8,0,1,61,female,adequate
8.2,8,0,0,61,female,adequate
8.3,8,1,1,61,female,adequate
8.4,8,0,0,61,female,adequate
9.2,9,1,0,52,male,adequate
9.3,9,1,0,52,male,adequate
9.4,9,1,0,52,male,adequate
"""


blank = plain(64, (90, 40, 20))


def expected_rows(prefix: str, age_of_patient_3: str = "90") -> list[dict[str, str]]:
    keys = ("image_id", "patient_id", "dr", "referable_dr", "age", "sex", "quality")
    rows = []
    for line in EXPECTED.splitlines():
        row = dict(zip(keys, line.split(",")))
        row["glaucoma"] = ""
        if row["patient_id"] == "3":
            row["age"] = age_of_patient_3
        row["path"] = f"{prefix}images/{row['image_id']}.jpg"
        rows.append(row)
    return rows


def export(root: Path, out: Path, *extra: str) -> list[dict[str, str]]:
    assert main(["datasets", "export", "mbrset", "--data-root", str(root), "-o", str(out), *extra]) == 0
    with out.open(newline="") as handle:
        return [{k: v for k, v in row.items() if k != "split"} for row in csv.DictReader(handle)]


def same(rows, expected):
    key = ("image_id", "patient_id", "dr", "referable_dr", "glaucoma", "age", "sex", "quality", "path")
    return [tuple(r[k] for k in key) for r in rows] == [tuple(r[k] for k in key) for r in expected]


@pytest.mark.parametrize("variant, prefix, age", [("physionet", PHYSIONET, "90"), ("github", "", "94"),
                                                  ("hulmanlab", "", "90")])
def test_export_all_views_row_by_row(tmp_path, variant, prefix, age):
    raw_mbrset.write(tmp_path / "mbrset", seed=0, image=blank, variant=variant)
    rows = export(tmp_path, tmp_path / "all.csv", "--cohort", "all_views")
    assert same(rows, expected_rows(prefix, age))


def test_default_cohort_keeps_views_1_and_3(tmp_path):
    raw_mbrset.write(tmp_path / "mbrset", seed=0, image=blank)
    rows = export(tmp_path, tmp_path / "default.csv")
    expected = [r for r in expected_rows(PHYSIONET) if r["image_id"].endswith((".1", ".3"))]
    assert len(expected) == 17
    assert same(rows, expected)


def test_load_reports_missing_image_and_implausible_age(tmp_path):
    raw_mbrset.write(tmp_path / "mbrset", seed=0, image=blank)
    load = load_dataset("mbrset", tmp_path, cohort="all_views")
    assert [(s.image_id, s.row) for s in load.skipped] == [("9.1", 34)]
    assert any("patient 4" in w and "implausible age 8" in w for w in load.warnings)
    assert load.metadata["label_file"] == PHYSIONET + "labels_mbrset.csv"
    assert load.metadata["group_key"] == "patient"
    assert {r.glaucoma for r in load.records} == {None}


def test_both_targets_have_both_classes_in_every_split(tmp_path):
    raw_mbrset.write(tmp_path / "mbrset", seed=3, image=blank)
    load = load_dataset("mbrset", tmp_path)
    for split in ("train", "val", "test"):
        for target in ("dr", "referable_dr"):
            assert {r.label(target) for r in load.split(split)} >= {0, 1}, (split, target)


def _rewrite(path: Path, image_file: str, column: str, value: str) -> None:
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    file_col, col = rows[0].index("file"), rows[0].index(column)
    for row in rows[1:]:
        if row[file_col].strip() == image_file:
            row[col] = value
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)


def test_brset_sex_code_2_is_not_accepted_for_mbrset(tmp_path):
    raw_mbrset.write(tmp_path / "mbrset", seed=0, image=blank)
    label = tmp_path / "mbrset" / PHYSIONET / "labels_mbrset.csv"
    _rewrite(label, "1.3.jpg", "sex", "2")
    with pytest.raises(DataError) as info:
        load_dataset("mbrset", tmp_path)
    assert "labels_mbrset.csv, row 4" in str(info.value) and "'sex'" in str(info.value)


def test_unknown_edema_value_is_an_error(tmp_path):
    raw_mbrset.write(tmp_path / "mbrset", seed=0, image=blank)
    label = tmp_path / "mbrset" / PHYSIONET / "labels_mbrset.csv"
    _rewrite(label, "2.1.jpg", "final_edema", "maybe")
    with pytest.raises(DataError, match="final_edema"):
        load_dataset("mbrset", tmp_path)


def test_missing_label_file_names_both_names(tmp_path):
    (tmp_path / "mbrset").mkdir()
    with pytest.raises(DataError, match="labels_mbrset.csv or dataframe_brsetmobile.csv"):
        load_dataset("mbrset", tmp_path)


def test_renamed_column(tmp_path):
    raw_mbrset.write(tmp_path / "mbrset", seed=0, image=blank, variant="github")
    label = tmp_path / "mbrset" / "dataframe_brsetmobile.csv"
    label.write_text(label.read_text().replace("final_icdr", "icdr", 1))
    with pytest.raises(DataError, match="final_icdr") as info:
        load_dataset("mbrset", tmp_path)
    assert str(label) in str(info.value)

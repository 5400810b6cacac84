"""PAPILA reader on its miniature raw layout: staggered xlsx header, id mapping, Gender 0 male / 1 female,
suspects excluded, verify-on-load warnings and bad input."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from openpyxl import load_workbook
from helpers.raw_layouts import plain

from focus_eval.cli import main
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_papila

ARCHIVE = "PapilaDB-PAPILA-17f8fa7746adb20275b5b6a0d99dc9dfe3007e9f"

# image_id, patient_id, glaucoma, age, sex -- by hand: Diagnosis 1 -> 1, 0 -> 0, 2 (suspect) -> excluded;
# Gender 0 male / 1 female. OD file first, then OS.
EXPECTED = """\
RET002OD,2,0,39,male
RET004OD,4,0,52,female
RET005OD,5,0,47,female
RET006OD,6,0,61,male
RET008OD,8,0,33,female
RET009OD,9,1,70,male
RET011OD,11,1,66,female
RET012OD,12,0,74,female
RET013OD,13,1,58,male
RET015OD,15,1,81,male
RET017OD,17,,55,female
RET018OD,18,,63,male
RET002OS,2,0,39,male
RET004OS,4,0,52,female
RET005OS,5,0,47,female
RET006OS,6,0,61,male
RET008OS,8,0,33,female
RET009OS,9,1,70,male
RET011OS,11,1,66,female
RET012OS,12,1,74,female
RET013OS,13,0,58,male
RET015OS,15,1,81,male
RET017OS,17,,55,female
RET018OS,18,,63,male
"""


blank = plain(64, (150, 70, 30))


@pytest.fixture
def papila_root(tmp_path: Path) -> Path:
    raw_papila.write(tmp_path / "papila", seed=0, image=blank)
    return tmp_path


def clinical(root: Path, eye: str) -> Path:
    return root / "papila" / ARCHIVE / "ClinicalData" / f"patient_data_{eye}.xlsx"


def set_cell(path: Path, cell: str, value) -> None:
    book = load_workbook(path)
    book.active[cell] = value
    book.save(path)


def test_export_row_by_row(papila_root, tmp_path):
    out = tmp_path / "papila.csv"
    assert main(["datasets", "export", "papila", "--data-root", str(papila_root), "-o", str(out)]) == 0
    with out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    got = [(r["image_id"], r["patient_id"], r["glaucoma"], r["age"], r["sex"], r["dr"], r["referable_dr"],
            r["quality"], r["path"]) for r in rows]
    expected = [(*line.split(","), "", "", "", f"{ARCHIVE}/FundusImages/{line.split(',')[0]}.jpg")
                for line in EXPECTED.splitlines()]
    assert got == expected


def test_files_with_a_space_are_ignored_and_load_is_clean(papila_root):
    assert (papila_root / "papila" / ARCHIVE / "FundusImages" / "RET004OS 2.jpg").is_file()
    load = load_dataset("papila", papila_root)
    assert len(load.records) == 24 and not load.skipped
    # the only warning: the miniature's counts are not the documented 488 images / 333 healthy eyes
    assert load.warnings == ["papila: counts differ from the documented release: all images n 24 (documented 488), "
                             "all images glaucoma_neg 12 (documented 333)"]
    assert all(" " not in r.relpath for r in load.records)
    assert load.metadata["version"] == ARCHIVE.split("-")[-1]


def test_patients_never_straddle_splits_and_glaucoma_has_both_classes(papila_root):
    load = load_dataset("papila", papila_root)
    by_patient = {}
    for r in load.records:
        by_patient.setdefault(r.patient_id, set()).add(r.split)
    assert all(len(s) == 1 for s in by_patient.values())
    for split in ("train", "val", "test"):
        assert {r.glaucoma for r in load.split(split)} >= {0, 1}


def test_one_sided_suspect_is_warned(papila_root):
    # patient #002 is the first data row (row 4); make its OS eye a suspect while OD stays healthy
    set_cell(clinical(papila_root, "os"), "D4", 2)
    load = load_dataset("papila", papila_root)
    assert any("not bilateral" in w and "2" in w.split("patient(s)")[1] for w in load.warnings)
    assert load.by_id()["RET002OS"].glaucoma is None


def test_unknown_gender_code_is_an_error_naming_file_and_row(papila_root):
    set_cell(clinical(papila_root, "od"), "C5", 2)
    with pytest.raises(DataError) as info:
        load_dataset("papila", papila_root)
    message = str(info.value)
    assert "patient_data_od.xlsx, row 5" in message and "Gender" in message


def test_unknown_diagnosis_code_is_an_error(papila_root):
    set_cell(clinical(papila_root, "os"), "D6", 3)
    with pytest.raises(DataError, match="patient_data_os.xlsx, row 6.*Diagnosis"):
        load_dataset("papila", papila_root)


def test_moved_columns_are_detected(papila_root):
    set_cell(clinical(papila_root, "od"), "C1", "Diagnosis")
    set_cell(clinical(papila_root, "od"), "D1", "Gender")
    with pytest.raises(DataError, match="expected column 'gender' in column C"):
        load_dataset("papila", papila_root)


def test_missing_id_row(papila_root):
    set_cell(clinical(papila_root, "od"), "A3", None)
    with pytest.raises(DataError, match="first cell is 'ID'"):
        load_dataset("papila", papila_root)


def test_missing_os_file_names_the_expected_path(papila_root):
    clinical(papila_root, "os").unlink()
    with pytest.raises(DataError) as info:
        load_dataset("papila", papila_root)
    assert str(clinical(papila_root, "os")) in str(info.value)

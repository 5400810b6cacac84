"""OCTID reader on a miniature copy of its class folders: class -> condition and abnormal, one group per image,
modality "oct", the seeded split, and the folder checks."""

import pytest

from focus_eval.data.readers import octid
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_octid

# (image_id, condition, abnormal), in the order the reader gives them (class folders sorted, then file names)
EXPECTED = [(f"AMRD/AMRD{n}", "AMD", 1) for n in range(1, 5)] + [(f"CSR/CSR{n}", "CSR", 1) for n in range(1, 5)] \
    + [(f"DR/DR{n}", "DR", 1) for n in range(1, 5)] + [(f"MH/MH{n}", "MH", 1) for n in range(1, 5)] \
    + [(f"NORMAL/NORMAL{n}", "normal", 0) for n in range(1, 7)]


@pytest.fixture
def folder(tmp_path):
    raw_octid.write(tmp_path / "octid", seed=4, image=None)
    return tmp_path / "octid"


def test_row_by_row(folder):
    load = octid.read(folder)
    assert [(r.image_id, *r.conditions, r.abnormal) for r in load.records] == EXPECTED
    for r in load.records:
        assert r.modality == "oct" and r.patient_id == r.image_id and r.split is None
        assert r.relpath == f"OCTID/{r.image_id}.jpeg"
    assert not load.skipped and not load.warnings  # Thumbs.db is not an image


def test_folder_names_in_any_case_and_amd_for_amrd(folder):
    (folder / "OCTID" / "AMRD").rename(folder / "OCTID" / "amd")
    (folder / "OCTID" / "MH").rename(folder / "OCTID" / "Mh")
    load = octid.read(folder)
    assert [(r.image_id, *r.conditions) for r in load.records][:4] == [(f"AMRD/AMRD{n}", "AMD") for n in range(1, 5)]
    assert len(load.records) == len(EXPECTED)


def test_a_nested_second_copy_is_not_read(folder):
    copy = folder / "OCTID" / "copy" / "DR"
    copy.mkdir(parents=True)
    (copy / "DR9.jpeg").write_bytes((folder / "OCTID" / "DR" / "DR1.jpeg").read_bytes())
    load = octid.read(folder)
    assert "DR/DR9" not in load.by_id()
    assert load.warnings == ["class folder OCTID/copy/DR is a second copy and is not read"]


def test_no_class_folder_is_an_error(tmp_path):
    (tmp_path / "octid" / "other").mkdir(parents=True)
    with pytest.raises(DataError, match="no OCTID class folders"):
        octid.read(tmp_path / "octid")


def test_seeded_split_puts_normal_and_abnormal_scans_in_every_split(folder):
    load = load_dataset("octid", folder.parent)
    assert load.metadata["split_source"] == "grouped_stratified"
    again = load_dataset("octid", folder.parent)
    assert [(r.image_id, r.split) for r in load.records] == [(r.image_id, r.split) for r in again.records]
    for split in ("train", "val", "test"):
        assert {r.abnormal for r in load.records if r.split == split} == {0, 1}

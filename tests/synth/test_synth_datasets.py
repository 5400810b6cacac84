"""The synthetic datasets: sampled labels, the raw layout they are written in, and their reader."""

import csv
import json
import statistics
from collections import Counter

import pytest

from focus_eval.cli import main
from focus_eval.data.readers import synth
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth.datasets import sample_images, write_dataset, write_synthetic

HEADER = "image,patient,eye,icdr,dme,cdr,glaucoma,age,sex,quality,device\n"


def test_label_rows_meet_the_shares_exactly():
    rows = sample_images("synth_desktop", 40, seed=0)
    assert len(rows) == 40 and [r.eye for r in rows[:4]] == ["OD", "OS", "OD", "OS"]
    patients = Counter(r.patient for r in rows)
    assert len(patients) == 20 and set(patients.values()) == {2}
    worse_eye = {p: max(r.icdr for r in rows if r.patient == p) for p in patients}
    # 20 patients x (0.66, 0.13, 0.11, 0.06, 0.04), largest remainder
    assert Counter(worse_eye.values()) == {0: 13, 1: 3, 2: 2, 3: 1, 4: 1}
    assert len({r.patient for r in rows if r.glaucoma}) == 4  # 22 % of 20 patients
    assert sum(r.quality == "inadequate" for r in rows) == 7  # 17 % of 40 images
    assert sum(r.sex == "female" for r in rows) == 20
    assert all(r.cdr >= 0.55 for r in rows if r.glaucoma) and all(r.cdr <= 0.68 for r in rows if not r.glaucoma)
    assert {r.device for r in rows} == {"desktop"} and all(r.image == f"{r.patient}_{r.eye}.jpg" for r in rows)


def test_odd_count_gives_the_last_patient_one_eye():
    rows = sample_images("synth_mobile", 11, seed=3)
    assert len(rows) == 11 and rows[-1].patient == "m0006" and rows[-1].eye == "OD"
    assert rows[-2].patient == "m0005"


def test_sampling_is_deterministic_and_seeded():
    assert sample_images("synth_mobile", 30, 1) == sample_images("synth_mobile", 30, 1)
    assert sample_images("synth_mobile", 30, 1) != sample_images("synth_mobile", 30, 2)


def test_written_dataset_reads_back_row_by_row(tmp_path):
    folder = write_dataset(tmp_path / "synth_desktop", "synth_desktop", n=16, seed=4)
    assert json.loads((folder / "synth.json").read_text()) == {
        "dataset": "synth_desktop", "device": "desktop", "n": 16, "seed": 4, "version": 2}
    with open(folder / "labels.csv", newline="") as handle:
        table = list(csv.DictReader(handle))
    load = synth.read(folder)
    assert load.name == "synth_desktop" and len(load.records) == 16 and not load.skipped
    for row, record in zip(table, load.records):
        grade, dme = int(row["icdr"]), int(row["dme"])
        assert record.image_id == row["image"][:-4] and record.patient_id == row["patient"]
        assert record.dr == (grade >= 1) and record.referable_dr == (grade >= 2 or dme == 1)
        assert record.glaucoma == int(row["glaucoma"]) and record.age == float(row["age"])
        assert (record.sex, record.quality) == (row["sex"], row["quality"])
        assert record.relpath == f"images/{row['image']}" and record.path.is_file()
    assert load.records[0].extra["device"] == "desktop"


def test_rewriting_with_the_same_arguments_keeps_the_files(tmp_path):
    folder = write_dataset(tmp_path / "synth_mobile", "synth_mobile", n=12, seed=0)
    stamp = (folder / "images" / "m0001_OD.jpg").stat().st_mtime_ns
    write_dataset(folder, "synth_mobile", n=12, seed=0)
    assert (folder / "images" / "m0001_OD.jpg").stat().st_mtime_ns == stamp


def layout(folder, rows, name="synth_desktop", missing=()):
    (folder / "images").mkdir(parents=True)
    (folder / "synth.json").write_text(json.dumps({"dataset": name}))
    (folder / "labels.csv").write_text(HEADER + "".join(r + "\n" for r in rows))
    for r in rows:
        image = r.split(",")[0]
        if image not in missing:
            (folder / "images" / image).write_bytes(b"")
    return folder


ROWS = [
    "d0001_OD.jpg,d0001,OD,0,0,0.3,0,61,female,adequate,desktop",
    "d0001_OS.jpg,d0001,OS,1,1,0.7,1,61,female,inadequate,desktop",
    "d0002_OD.jpg,d0002,OD,2,0,0.2,0,45,male,adequate,desktop",
    "d0002_OS.jpg,d0002,OS,,0,0.2,0,45,male,adequate,desktop",
    "d0003_OD.jpg,d0003,OD,,1,,,,,,desktop",
    "d0003_OS.jpg,d0003,OS,4,1,0.5,0,70,male,adequate,desktop",
]
# (image_id, patient_id, dr, referable_dr, glaucoma, age, sex, quality)
EXPECTED = [
    ("d0001_OD", "d0001", 0, 0, 0, 61.0, "female", "adequate"),
    ("d0001_OS", "d0001", 1, 1, 1, 61.0, "female", "inadequate"),
    ("d0002_OD", "d0002", 1, 1, 0, 45.0, "male", "adequate"),
    ("d0002_OS", "d0002", None, None, 0, 45.0, "male", "adequate"),
    ("d0003_OD", "d0003", None, 1, None, None, None, None),
]


def test_reader_on_a_hand_written_layout(tmp_path):
    load = synth.read(layout(tmp_path / "synth_desktop", ROWS, missing={"d0003_OS.jpg"}))
    assert [(r.image_id, r.patient_id, r.dr, r.referable_dr, r.glaucoma, r.age, r.sex, r.quality)
            for r in load.records] == EXPECTED
    assert [(s.row, s.image_id) for s in load.skipped] == [(7, "d0003_OS.jpg")]


def test_unknown_code_is_an_error_naming_file_and_row(tmp_path):
    rows = ROWS[:2] + [ROWS[2].replace(",male,", ",M,")]
    with pytest.raises(DataError, match=r"labels.csv, row 4: column 'sex': unknown code 'M'"):
        synth.read(layout(tmp_path / "synth_desktop", rows))


def test_manifest_names_the_dataset_and_must_match_the_folder(tmp_path):
    assert synth.read(layout(tmp_path / "elsewhere", ROWS, name="synth_mobile")).name == "synth_mobile"
    with pytest.raises(DataError, match="holds 'synth_mobile'"):
        synth.read(layout(tmp_path / "synth_desktop", ROWS, name="synth_mobile"))
    with pytest.raises(DataError, match="expected one of"):
        synth.read(layout(tmp_path / "x", ROWS, name="brset"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="synth.json"):
        synth.read(tmp_path / "empty")


@pytest.mark.parametrize("name", ["synth_desktop", "synth_mobile"])
def test_default_size_has_both_classes_of_every_target_in_every_split(tmp_path, name):
    rows = [",".join(str(v) for v in vars(r).values()) for r in sample_images(name, 200, seed=0)]
    layout(tmp_path / name, rows, name=name)
    load = load_dataset(name, tmp_path)
    assert len(load.records) == 200 and load.metadata["split_source"] == "grouped_stratified"
    for split in ("train", "val", "test"):
        records = load.split(split)
        least = 5 if split == "test" else 4
        for target in ("dr", "referable_dr", "glaucoma"):
            labels = [r.label(target) for r in records]
            assert labels.count(1) >= least and labels.count(0) >= least, (split, target)
        # the quality-robustness metrics need 5 images per quality group in the test split
        assert sum(r.quality == "inadequate" for r in records) >= (5 if split == "test" else 3)
        ages = [r.age for r in records]
        median = statistics.median(ages)
        assert sum(a <= median for a in ages) >= 10 and sum(a > median for a in ages) >= 10
        assert {r.sex for r in records} == {"male", "female"}


def test_synth_command_writes_both_datasets(tmp_path, capsys):
    assert main(["synth", "--out", str(tmp_path), "--n", "12", "--seed", "2"]) == 0
    assert "--data-root" in capsys.readouterr().out
    for name in ("synth_desktop", "synth_mobile"):
        assert len(load_dataset(name, tmp_path).records) == 12


def test_write_synthetic_writes_both_datasets(tmp_path):
    folders = write_synthetic(tmp_path, n=10, seed=0)
    assert sorted(folders) == ["synth_desktop", "synth_mobile"]
    assert (folders["synth_mobile"] / "images" / "m0005_OS.jpg").is_file()


def test_label_rows_follow_the_reader_columns():
    from dataclasses import fields

    from focus_eval.synth.datasets import SynthImage

    assert tuple(f.name for f in fields(SynthImage)) == (
        synth.COLUMNS + tuple(synth.LESION_COLUMNS.values()) + (synth.CONTRAST_COLUMN,))


def test_too_few_images_or_a_negative_seed_is_an_error():
    from focus_eval.errors import FocusError

    with pytest.raises(FocusError, match="at least 10 images"):
        sample_images("synth_desktop", 4, 0)
    with pytest.raises(FocusError, match="non-negative"):
        sample_images("synth_desktop", 20, -1)


def test_worker_processes_write_the_same_pictures(tmp_path):
    one = write_dataset(tmp_path / "one" / "synth_mobile", "synth_mobile", n=10, seed=5)
    two = write_dataset(tmp_path / "two" / "synth_mobile", "synth_mobile", n=10, seed=5, workers=2)
    for image in sorted((one / "images").iterdir()):
        assert image.read_bytes() == (two / "images" / image.name).read_bytes()

"""A user's own data: a manifest (CSV or JSONL) with a dataset card is read like a built-in dataset, checked by
'focus-eval datasets check' (leakage check, bad rows naming file and line), exported, and given generated
<target>_<name> tasks with no task file."""

import json

import pytest

from focus_eval.cli import main
from focus_eval.data.cards import read_card
from focus_eval.data.manifests import register_manifests
from focus_eval.data.registry import load_dataset
from focus_eval.errors import FocusError
from focus_eval.task import TaskIndex
from helpers.open_fixtures import CARD, PATIENT_PREFIX, clean_cards, manifest_rows, write_clinic  # noqa: F401

pytestmark = pytest.mark.usefixtures("clean_cards")


@pytest.fixture
def clinic(tmp_path):
    return write_clinic(tmp_path / "clinic-data")


def test_manifest_dataset_reads_with_the_cards_codings(tmp_path, clinic):
    rows = manifest_rows()
    register_manifests(None, [f"clinic={clinic}"])
    load = load_dataset("clinic", tmp_path / "elsewhere")
    assert len(load.records) == len(rows) and not load.skipped
    by_id = {r.image_id: r for r in load.records}
    first = by_id["images/CLINICIMG000_R"]
    assert first.patient_id == f"{PATIENT_PREFIX}000" and first.sex == "female" and first.extra["eye"] == "OD"
    assert first.dr == int(rows[0]["dr_grade"] >= 1) and first.referable_dr == int(rows[0]["dr_grade"] >= 2)
    assert first.glaucoma == rows[0]["glaucoma"] and first.age == 40.0
    assert first.extra["diabetic"] == "no" and first.path == clinic / rows[0]["image"]
    # no split column: the patient-grouped 60/20/20 split, with both eyes of a patient in one split
    assert load.metadata["split_source"] == "grouped_stratified"
    assert load.metadata["splits"] == {"train": 38, "val": 10, "test": 12}
    splits_of = {}
    for r in load.records:
        splits_of.setdefault(r.patient_id, set()).add(r.split)
    assert all(len(s) == 1 for s in splits_of.values())
    assert load.metadata["label_rules"]["dr"].startswith("column dr_grade: 1, 2, 3, 4 -> 1; 0 -> 0")


def test_jsonl_manifest_with_a_split_column_and_excluded_codes(tmp_path):
    rows = manifest_rows(n_patients=10)
    for i, row in enumerate(rows):
        row["split"] = ("train", "val", "test")[int(row["patient"][-3:]) % 3]
        row["dr_grade"] = "ungradable" if i == 0 else row["dr_grade"]
    folder = write_clinic(tmp_path / "jsonl", rows, manifest="labels.jsonl")
    register_manifests(None, [f"jclinic={folder}"])
    load = load_dataset("jclinic", tmp_path)
    assert load.metadata["split_source"] == "official"
    assert {r.image_id: r.split for r in load.records}["images/CLINICIMG004_R"] == "val"
    excluded = next(r for r in load.records if r.image_id == "images/CLINICIMG000_R")
    assert excluded.dr is None and excluded.referable_dr is None and excluded.glaucoma is not None


def test_datasets_check_reports_a_manifest_dataset_like_a_builtin_one(tmp_path, clinic, capsys):
    root = tmp_path / "root"
    root.mkdir()
    assert main(["datasets", "check", "--data-root", str(root), "--dataset-path", f"clinic={clinic}"]) == 0
    out = capsys.readouterr().out
    assert f"clinic: ok ({clinic})" in out
    assert "splits (grouped_stratified, seed 42, grouped by patient (manifest column 'patient')): train 38, val 10, " \
           "test 12; split check: ok" in out
    assert "metadata present: age 60/60, sex 60/60, quality 0/60" in out
    assert main(["datasets", "check", "clinic", "--data-root", str(root), "--dataset-path", f"clinic={clinic}",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["datasets"][0]
    assert report["usable"] and report["images"]["read"] == 60 and report["split_check"] == "ok"
    assert set(report["positives"]) == {"dr", "referable_dr", "glaucoma"}


def test_bad_rows_are_errors_naming_file_and_line(tmp_path, capsys):
    rows = manifest_rows(n_patients=5)
    rows[3]["dr_grade"] = "7"
    folder = write_clinic(tmp_path / "bad", rows)
    assert main(["datasets", "check", "--data-root", str(tmp_path), "--dataset-path", f"bad={folder}"]) == 1
    out = capsys.readouterr().out
    # the header is line 1, so the fourth data row is line 5
    assert f"bad: UNUSABLE: {folder / 'manifest.csv'}, row 5: column 'dr_grade': unknown code '7'" in out
    rows[3]["dr_grade"] = 2
    rows[1]["age"] = "forty"
    write_clinic(folder, rows)
    with pytest.raises(FocusError, match=r"manifest.csv, row 3: column 'age': age 'forty' is not a number"):
        load_dataset("bad", tmp_path)


def test_leakage_check_and_missing_images(tmp_path, capsys):
    rows = manifest_rows(n_patients=6)
    for row in rows:
        # both eyes of each patient in different splits: leakage
        row["split"] = "train" if row["eye"] == "R" else "test"
    folder = write_clinic(tmp_path / "leaky", rows)
    (folder / rows[0]["image"]).unlink()
    assert main(["datasets", "check", "--data-root", str(tmp_path), "--dataset-path", f"leaky={folder}"]) == 1
    out = capsys.readouterr().out
    assert "leaky: UNUSABLE" in out and "patient(s) in more than one split" in out
    assert "skipped 1 row(s): image file not found" in out and "CLINICIMG000_R.png" in out


def test_export_and_cohort_filter(tmp_path, capsys):
    card = CARD.format(manifest="manifest.csv") + "cohort: {column: diabetic, values: [yes]}\n"
    folder = write_clinic(tmp_path / "cohort", card=card)
    out_csv = tmp_path / "export.csv"
    assert main(["datasets", "export", "cohorted", "--data-root", str(tmp_path), "--dataset-path",
                 f"cohorted={folder}", "-o", str(out_csv)]) == 0
    exported = out_csv.read_text().splitlines()
    diabetic = [r for r in manifest_rows() if r["diabetic"] == "yes"]
    assert len(exported) == 1 + len(diabetic)
    assert exported[0].startswith("image_id,patient_id,split,dr,referable_dr,glaucoma,age,sex")
    assert "cohort card" in capsys.readouterr().err
    load = load_dataset("cohorted", tmp_path, cohort="all")
    assert len(load.records) == 60


def test_cards_in_the_data_root_and_folders_of_cards(tmp_path):
    root = tmp_path / "root"
    write_clinic(root / "siteb")
    cards_dir = tmp_path / "cards"
    cards_dir.mkdir()
    write_clinic(tmp_path / "sitec-data")
    (cards_dir / "sitec.yaml").write_text(CARD.format(manifest="../sitec-data/manifest.csv"))
    names = [c.name for c in register_manifests(root, [str(cards_dir)])]
    assert names == ["sitec", "siteb"]
    assert len(load_dataset("siteb", root).records) == len(load_dataset("sitec", root).records) == 60


def test_card_mistakes_are_errors_naming_the_card(tmp_path):
    folder = write_clinic(tmp_path / "c")
    card = folder / "dataset.yaml"
    card.write_text(CARD.format(manifest="manifest.csv").replace("glaucoma: {", "glaucomma: {"))
    with pytest.raises(FocusError, match=r"dataset.yaml: unknown target 'glaucomma'; did you mean glaucoma\?"):
        read_card(card)
    card.write_text("name: other\n" + CARD.format(manifest="manifest.csv"))
    with pytest.raises(FocusError, match="the card names the dataset 'other', --dataset-path calls it 'c'"):
        read_card(card, "c")
    card.write_text(CARD.format(manifest="manifest.csv").replace("sex: {male: [M], female: [F]}", "sex: {man: [M]}"))
    with pytest.raises(FocusError, match="dataset.yaml: 'sex' maps each of female, male to the codes"):
        read_card(card)
    card.write_text(CARD.format(manifest="manifest.csv").replace("column: glaucoma", "column: glc"))
    register_manifests(None, [f"c={folder}"])
    with pytest.raises(FocusError, match=r"manifest.csv: missing column for 'glc'"):
        load_dataset("c", tmp_path)
    with pytest.raises(FocusError, match="dataset name 'brset' is taken"):
        register_manifests(None, [f"brset={folder}"])


def test_generated_tasks_and_group(tmp_path, clinic):
    register_manifests(None, [f"clinic={clinic}"])
    custom = tmp_path / "custom"
    custom.mkdir()
    (custom / "glaucoma_clinic.yaml").write_text(
        "task: glaucoma_clinic\ninclude: _base_glaucoma.yaml\ndataset: clinic\nmetadata:\n  version: 2\n"
        "  label_rule: my own rule\n")
    index = TaskIndex([custom])
    dr = index.get("dr_clinic")
    assert (dr.dataset, dr.target, dr.path) == ("clinic", "dr", clinic / "dataset.yaml")
    assert dr.label_rule.startswith("column dr_grade: 1, 2, 3, 4 -> 1") and "excluded" in dr.label_rule
    assert dr.prompt == index.get("dr_brset").prompt and dr.tags == ()
    assert index.get("glaucoma_clinic").label_rule == "my own rule"  # a task file of the same name wins
    assert index.expand("clinic") == ["dr_clinic", "referable_dr_clinic", "glaucoma_clinic"]
    assert index.expand("*_clinic") == ["dr_clinic", "glaucoma_clinic", "referable_dr_clinic"]
    assert "dr_clinic" not in index.expand("dr_*")  # benchmark patterns stay on the benchmark's datasets


def test_generated_tasks_count_with_the_tasks_command(tmp_path, clinic, capsys):
    assert main(["tasks", "clinic", "--data-root", str(tmp_path), "--dataset-path", f"clinic={clinic}"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header, rows = lines[0].split(), {line.split()[0]: line.split() for line in lines[1:4]}
    assert header[:8] == ["task", "dataset", "target", "cohort", "proxy", "version", "test", "test_pos"]
    dr_test = int(rows["dr_clinic"][6])
    assert dr_test == 12 and 0 < int(rows["dr_clinic"][7]) <= dr_test

"""``focus-eval datasets check|export|prepare`` through the real command line."""

from __future__ import annotations

import csv
import json
from functools import partial
from pathlib import Path

import pytest
from helpers.raw_layouts import solid

from focus_eval.cli import main
from focus_eval.data.prepare import prepared_path
from focus_eval.data.registry import load_dataset
from focus_eval.synth import raw_brset, raw_papila


# one flat colour per picture (each its own: datasets check reports byte-identical images filed apart)
blank = partial(solid, size=64)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    raw_brset.write(tmp_path / "brset", seed=0, image=blank)
    raw_papila.write(tmp_path / "papila", seed=0, image=blank)
    return tmp_path


def check_json(capsys, *argv: str) -> tuple[int, dict]:
    status = main(["datasets", "check", *argv, "--json"])
    return status, json.loads(capsys.readouterr().out)


def test_check_json_reports_counts_positives_coverage_and_skips(root, capsys):
    status, report = check_json(capsys, "brset", "--data-root", str(root))
    assert status == 0
    (brset,) = report["datasets"]
    assert brset["found"] and brset["usable"] and brset["split_check"] == "ok"
    assert brset["cohort"] == "diabetic" and brset["seed"] == 42
    assert brset["images"] == {"read": 37, "cohort": 33, "train": 21, "val": 6, "test": 6}
    assert brset["positives"]["dr"] == {"train": {"labelled": 21, "positive": 8},
                                        "val": {"labelled": 6, "positive": 1},
                                        "test": {"labelled": 6, "positive": 2}}
    assert sum(c["positive"] for c in brset["positives"]["glaucoma"].values()) == 9
    assert brset["metadata_present"] == {"age": 33, "sex": 33, "quality": 33}
    assert brset["skipped"]["count"] == 1
    assert brset["skipped"]["reasons"] == {"image file not found": 1}
    assert "img00037" in brset["skipped"]["rows"][0]


def test_check_without_names_checks_existing_folders_only(root, capsys):
    status, report = check_json(capsys, "--data-root", str(root))
    assert status == 0
    assert [d["name"] for d in report["datasets"]] == ["brset", "papila"]
    assert report["datasets"][1]["metadata_present"] == {"age": 24, "sex": 24, "quality": 0}


def test_check_missing_dataset_prints_the_expected_path_and_fails(root, capsys):
    status, report = check_json(capsys, "papila", "mbrset", "--data-root", str(root))
    assert status == 1
    papila, mbrset = report["datasets"]
    assert papila["usable"]
    assert not mbrset["found"] and mbrset["expected"] == str(root / "mbrset")


def test_check_text_output_and_malformed_dataset(root, capsys):
    (root / "mbrset").mkdir()
    assert main(["datasets", "check", "--data-root", str(root)]) == 1
    out = capsys.readouterr().out
    assert "brset: ok" in out and "papila: ok" in out
    assert "mbrset: UNUSABLE" in out and "labels_mbrset.csv" in out


def test_check_with_no_dataset_folder_is_an_error(tmp_path, capsys):
    assert main(["datasets", "check", "--data-root", str(tmp_path)]) == 2
    assert "no dataset folders" in capsys.readouterr().err


def test_export_matches_the_loaded_records(root, tmp_path):
    out = tmp_path / "out" / "brset.csv"
    assert main(["datasets", "export", "brset", "--data-root", str(root), "-o", str(out), "--seed", "5"]) == 0
    with out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    load = load_dataset("brset", root, seed=5)
    assert [(r["image_id"], r["split"]) for r in rows] == [(r.image_id, r.split) for r in load.records]
    assert rows[0]["path"].endswith("fundus_photos/img00001.jpg") and not rows[0]["path"].startswith("/")


def test_export_with_split_file(root, tmp_path):
    split_file = tmp_path / "split.csv"
    split_file.write_text("image_id,split\nimg00001,train\nimg00002,train\nimg00003,test\nimg09999,val\n")
    out = tmp_path / "brset.csv"
    argv = ["datasets", "export", "brset", "--data-root", str(root), "-o", str(out), "--split-file", str(split_file)]
    assert main(argv) == 0
    with out.open(newline="") as handle:
        assert [(r["image_id"], r["split"]) for r in csv.DictReader(handle)] == [
            ("img00001", "train"), ("img00002", "train"), ("img00003", "test")]


def test_prepare_through_the_cli(root, capsys):
    argv = ["datasets", "prepare", "papila", "--data-root", str(root), "--size", "24", "--workers", "1"]
    assert main(argv) == 0
    assert "24 written" in capsys.readouterr().out
    load = load_dataset("papila", root)
    assert all(prepared_path(root, "papila", 24, r).is_file() for r in load.records)
    assert main(argv) == 0
    assert "24 already prepared" in capsys.readouterr().out

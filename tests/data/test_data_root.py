"""A relative --data-root (or FOCUS_DATA) works for every command that reads the datasets: check, export,
prepare, tasks and sft see the same images as an absolute root would."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from focus_eval.cli import main
from focus_eval.data.files import is_image_name
from focus_eval.data.registry import REAL_DATASETS, data_root, load_dataset, read_dataset


@pytest.fixture(scope="module")
def layouts(tmp_path_factory) -> Path:
    """A folder holding data/, a miniature raw copy of each of the ten real datasets."""
    base = tmp_path_factory.mktemp("relative-root")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(base)
        assert main(["synth", "--out", "data", "--layout", "real"]) == 0
    return base


@pytest.fixture
def here(layouts, tmp_path, monkeypatch) -> Path:
    """A private copy of the layouts as the working folder, so that ``data`` is a relative root."""
    shutil.copytree(layouts / "data", tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FOCUS_DATA", raising=False)
    return tmp_path


def check_report(capsys, *argv: str) -> dict:
    assert main(["datasets", "check", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_check_finds_every_real_dataset_through_a_relative_root(here, capsys, monkeypatch, how):
    if how == "environment":
        monkeypatch.setenv("FOCUS_DATA", "data")
    report = check_report(capsys, *(["--data-root", "data"] if how == "flag" else []))
    assert report["data_root"] == str(here / "data")
    by_name = {d["name"]: d for d in report["datasets"]}
    assert sorted(by_name) == sorted(REAL_DATASETS)
    for name, entry in by_name.items():
        assert entry["usable"], (name, entry["error"])
        assert entry["images"]["read"] > 0 and entry["skipped"]["reasons"].get("image file not found", 0) <= 1


def test_a_relative_root_reads_what_the_absolute_root_reads(here):
    for name in REAL_DATASETS:
        relative, absolute = load_dataset(name, "data"), load_dataset(name, here / "data")
        assert [r.image_id for r in relative.records] == [r.image_id for r in absolute.records], name
        assert all(Path(r.path).is_absolute() and Path(r.path).is_file() for r in relative.records), name


def test_data_root_is_absolute_whatever_it_is_given(here, monkeypatch):
    assert data_root("data") == here / "data"
    assert data_root("./data/../data") == here / "data"
    monkeypatch.setenv("FOCUS_DATA", "data")
    assert data_root() == here / "data"


def test_export_through_a_relative_root_writes_every_image(here, capsys):
    assert main(["datasets", "export", "brset", "--data-root", "data", "-o", "brset.csv"]) == 0
    with open("brset.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(load_dataset("brset", here / "data").records) > 0
    assert all((here / "data" / "brset" / row["path"]).is_file() for row in rows)


def test_export_of_a_dataset_without_images_is_an_error_and_writes_nothing(here, capsys):
    for image in (here / "data" / "brset").rglob("*"):
        if image.is_file() and is_image_name(image.name):
            image.unlink()
    assert main(["datasets", "export", "brset", "--data-root", "data", "-o", "brset.csv"]) == 2
    err = capsys.readouterr().err
    assert "brset: no images to export" in err and "image file not found" in err
    assert not Path("brset.csv").exists()


def test_prepare_through_a_relative_root_writes_every_image(here, capsys):
    assert main(["datasets", "prepare", "--data-root", "data", "--size", "16", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    for name in REAL_DATASETS:
        load = read_dataset(name, "data")
        line = next(line for line in out.splitlines() if line.startswith(f"{name} 16px:"))
        assert f"{len(load.records)} images, {len(load.records)} written, 0 already prepared, 0 corrupt" in line
        prepared = here / "data" / ".prepared"
        assert len([p for p in prepared.rglob("*.jpg") if f"/{name}/16/" in p.as_posix()]) == len(load.records)


def test_tasks_counts_the_test_split_through_a_relative_root(here, capsys):
    assert main(["tasks", "glaucoma_*,dr_*", "--data-root", "data"]) == 0
    out = capsys.readouterr().out
    # rows of the table; a label rule wider than the table wraps onto lines that start with spaces
    rows = [line.split() for line in out.splitlines()[1:] if line and not line.startswith((" ", "synth_"))]
    real = [row for row in rows if row[1] in REAL_DATASETS]
    assert len(real) >= 10
    for row in real:
        assert row[6].isdigit() and int(row[6]) > 0, row


@pytest.mark.slow
def test_sft_trains_on_a_relative_root(here, capsys):
    argv = ["sft", "--model", "tiny-medgemma", "--dataset", "brset", "--target", "dr", "--data-root", "data",
            "--output", "adapter", "--device", "cpu", "--num-workers", "0", "--no-progress", "--max-steps", "1",
            "--batch-size", "2", "--grad-accum", "1", "--save-steps", "100", "--max-val-images", "2"]
    assert main(argv) == 0
    assert "1 steps" in capsys.readouterr().out
    record = json.loads((here / "adapter" / "focus_eval_adapter.json").read_text())
    train = load_dataset("brset", here / "data", cohort="diabetic").split("train")
    assert record["data"]["n_train"] == sum(1 for r in train if r.dr is not None) > 0

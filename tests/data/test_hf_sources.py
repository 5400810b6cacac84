"""Hugging Face datasets as a user's data: a dataset saved with save_to_disk, parquet files with an image column
and an image folder, named by a dataset card (``format:``), give the records a CSV manifest of the same rows
gives; a saved dataset runs its generated task end to end."""

import json
from pathlib import Path

import pytest

from focus_eval.cli import main
from focus_eval.data.manifests import register_manifests
from focus_eval.data.registry import load_dataset
from focus_eval.errors import FocusError
from helpers.open_fixtures import CARD, clean_cards, manifest_rows, write_clinic  # noqa: F401

datasets = pytest.importorskip("datasets", reason="the datasets package (test extra) is not installed")
pytestmark = pytest.mark.usefixtures("clean_cards")

FIELDS = ("patient_id", "split", "age", "sex", "laterality", "dr", "referable_dr", "glaucoma")


def _fields(load):
    return [(Path(r.image_id).name, *(getattr(r, f) for f in FIELDS)) for r in load.records]


def _card(folder: Path, manifest: str, fmt: str, columns: str = "{patient_id: patient, laterality: eye}") -> None:
    card = CARD.format(manifest=manifest).replace("columns: {patient_id: patient, laterality: eye}",
                                                  f"columns: {columns}")
    (folder / "dataset.yaml").write_text(card + f"format: {fmt}\n", encoding="utf-8")


@pytest.fixture
def clinic(tmp_path):
    return write_clinic(tmp_path / "csv", manifest_rows(n_patients=20))


def _records(clinic: Path) -> list[dict]:
    rows = manifest_rows(n_patients=20)
    for row in rows:
        row["image"] = {"bytes": (clinic / row["image"]).read_bytes(), "path": Path(row["image"]).name}
    return rows


def test_saved_dataset_and_parquet_give_the_manifests_records(tmp_path, clinic):
    register_manifests(None, [f"ref={clinic}"])
    reference = _fields(load_dataset("ref", tmp_path))
    rows = _records(clinic)
    disk, parquet = tmp_path / "disk", tmp_path / "pq"
    features = datasets.Features({**{k: datasets.Value("string") for k in ("patient", "sex", "eye", "diabetic")},
                                  **{k: datasets.Value("int64") for k in ("dr_grade", "glaucoma", "age")},
                                  "image": datasets.Image()})
    datasets.Dataset.from_list(rows, features=features).save_to_disk(str(disk / "saved"))
    _card(disk, "saved", "hf_disk")
    parquet.mkdir()
    datasets.Dataset.from_list(rows, features=features).to_parquet(str(parquet / "clinic.parquet"))
    _card(parquet, "clinic.parquet", "parquet")
    register_manifests(None, [f"hfdisk={disk}", f"hfpq={parquet}"])
    for name, folder, stored in (("hfdisk", disk, "saved.images"), ("hfpq", parquet, "clinic.parquet.images")):
        load = load_dataset(name, tmp_path)
        assert _fields(load) == reference and not load.skipped
        first = load.records[0]
        assert first.path == folder / stored / "CLINICIMG000_R.png"
        assert first.path.read_bytes() == (clinic / "images" / "CLINICIMG000_R.png").read_bytes()
        assert set(first.extra) == set(load_dataset("ref", tmp_path).records[0].extra)


def test_imagefolder_labels_splits_and_metadata(tmp_path, clinic):
    folder = tmp_path / "if"
    rows = manifest_rows(n_patients=20)
    meta = []
    for i, row in enumerate(rows):
        split = ("train", "validation", "test")[int(row["patient"][-3:]) % 3]
        target = folder / "images" / split / str(row["glaucoma"]) / Path(row["image"]).name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((clinic / row["image"]).read_bytes())
        meta.append({"file_name": target.relative_to(folder / "images").as_posix(), "patient": row["patient"],
                     "dr_grade": row["dr_grade"], "sex": row["sex"], "eye": row["eye"], "age": row["age"]})
    (folder / "images" / "metadata.jsonl").write_text("".join(json.dumps(m) + "\n" for m in meta))
    _card(folder, "images", "imagefolder")
    card = (folder / "dataset.yaml").read_text()
    (folder / "dataset.yaml").write_text(card.replace("column: glaucoma", "column: label"))
    register_manifests(None, [f"hfif={folder}"])
    load = load_dataset("hfif", tmp_path)
    assert load.metadata["split_source"] == "official" and len(load.records) == len(rows)
    by_name = {Path(r.image_id).name: r for r in load.records}
    for row in rows:
        record = by_name[Path(row["image"]).stem]
        assert record.glaucoma == row["glaucoma"] and record.dr == int(row["dr_grade"] >= 1)
        assert record.patient_id == row["patient"] and record.age == row["age"]
        assert record.split == ("train", "val", "test")[int(row["patient"][-3:]) % 3]


def test_an_unknown_format_and_a_missing_image_column_are_named(tmp_path, clinic):
    _card(clinic, "manifest.csv", "arrow")
    with pytest.raises(FocusError, match="format must be one of"):
        register_manifests(None, [f"bad={clinic}"])
    folder = tmp_path / "noimg"
    datasets.Dataset.from_list([{"x": 1}]).save_to_disk(str(folder / "saved"))
    _card(folder, "saved", "hf_disk")
    with pytest.raises(FocusError, match="no image column 'image'"):
        register_manifests(None, [f"noimg={folder}"])


def test_a_saved_dataset_of_40_images_runs_its_task(tmp_path, clinic, private_cache):
    rows = _records(clinic)
    disk = tmp_path / "disk"
    datasets.Dataset.from_list(rows).cast_column("image", datasets.Image()).save_to_disk(str(disk / "saved"))
    _card(disk, "saved", "hf_disk")
    out = tmp_path / "out"
    assert main(["--model", "tiny-vit", "--tasks", "dr_hfclinic", "--data-root", str(tmp_path),
                 "--dataset-path", f"hfclinic={disk}", "--output-path", str(out), "--n-boot", "20",
                 "--num-workers", "0", "--no-progress", "--device", "cpu"]) == 0
    [line] = [json.loads(x) for x in (out / "tiny-vit" / "results.jsonl").read_text().splitlines()]
    assert line["task"] == "dr_hfclinic" and line["dataset"] == "hfclinic" and line["n"] > 0
    assert line["metrics"]["auroc"] is not None


def test_a_label_changed_inside_parquet_changes_the_data_fingerprint(tmp_path, clinic):
    from focus_eval.runner.provenance import data_fingerprint

    rows = _records(clinic)
    folder = tmp_path / "pq"
    folder.mkdir()
    datasets.Dataset.from_list(rows).to_parquet(str(folder / "clinic.parquet"))
    _card(folder, "clinic.parquet", "parquet")
    register_manifests(None, [f"fp={folder}"])
    before = data_fingerprint(load_dataset("fp", tmp_path))
    rows[0]["glaucoma"] = 1 - rows[0]["glaucoma"]
    datasets.Dataset.from_list(rows).to_parquet(str(folder / "clinic.parquet"))
    assert data_fingerprint(load_dataset("fp", tmp_path)) != before


def test_parquet_image_paths_are_read_where_they_are(tmp_path, clinic):
    rows = manifest_rows(n_patients=20)
    datasets.Dataset.from_list(rows).to_parquet(str(clinic / "paths.parquet"))
    _card(clinic, "paths.parquet", "parquet")
    register_manifests(None, [f"paths={clinic}"])
    load = load_dataset("paths", tmp_path)
    assert [r.path for r in load.records] == [clinic / row["image"] for row in rows]

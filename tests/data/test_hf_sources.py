"""Hugging Face datasets as a user's data, read as Hugging Face reads them: a dataset saved with save_to_disk,
parquet files with an image column and an image folder, named by a dataset card (``format:``), give the records a
CSV manifest of the same rows gives; their splits are those ``datasets.load_dataset`` reads (file and folder
names, the card's data_files, a DatasetDict), an image folder's per-split metadata is joined in, a dataset without
splits is split by focus-eval and says so; a missing package names the extra; image paths stay inside the card's
folder; a saved dataset runs its generated task end to end."""

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from focus_eval.cli import main
from focus_eval.data.hf_sources import NO_SPLITS
from focus_eval.data.manifests import register_manifests
from focus_eval.data.registry import load_dataset
from focus_eval.errors import FocusError
from helpers.open_fixtures import CARD, clean_cards, manifest_rows, write_clinic, write_images  # noqa: F401

datasets = pytest.importorskip("datasets", reason="the datasets package (hf extra) is not installed")
pytestmark = pytest.mark.usefixtures("clean_cards")

FIELDS = ("patient_id", "split", "age", "sex", "laterality", "dr", "referable_dr", "glaucoma")
HF_SPLITS = {"train": "train", "validation": "val", "test": "test"}


def _fields(load):
    return [(Path(r.image_id).name, *(getattr(r, f) for f in FIELDS)) for r in load.records]


def _card(folder: Path, manifest: str, fmt: str, columns: str = "{patient_id: patient, laterality: eye}",
          extra: str = "") -> None:
    card = CARD.format(manifest=manifest).replace("columns: {patient_id: patient, laterality: eye}",
                                                  f"columns: {columns}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dataset.yaml").write_text(card + f"format: {fmt}\n" + extra, encoding="utf-8")


@pytest.fixture
def clinic(tmp_path):
    return write_clinic(tmp_path / "csv", manifest_rows(n_patients=20))


def _records(clinic: Path, rows: list[dict] | None = None) -> list[dict]:
    rows = manifest_rows(n_patients=20) if rows is None else rows
    for row in rows:
        row["image"] = {"bytes": (clinic / row["image"]).read_bytes(), "path": Path(row["image"]).name}
    return rows


def _by_split(load) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for record in load.records:
        found.setdefault(record.split, set()).add(Path(record.image_id).name)
    return found


def _hf_split_names(folder_or_file: str, **kwargs) -> dict[str, set[str]]:
    """focus-eval's split -> image names, as datasets.load_dataset itself reads the dataset."""
    loaded = datasets.load_dataset(folder_or_file, streaming=True, **kwargs)
    out = {}
    for split, part in loaded.items():
        part = part.cast_column("image", datasets.Image(decode=False))
        out[HF_SPLITS[split]] = {Path(r["image"]["path"]).stem for r in part}
    return out


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


def _split_rows(clinic: Path, assignment: list[str]) -> dict[str, list[dict]]:
    """The clinic's rows grouped by the HF split of each patient."""
    rows = _records(clinic)
    parts: dict[str, list[dict]] = {}
    for row in rows:
        parts.setdefault(assignment[int(row["patient"][-3:])], []).append(row)
    return parts


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(assignment=st.lists(st.sampled_from(["train", "validation", "test"]), min_size=20, max_size=20)
       .filter(lambda a: {"train", "test"} <= set(a)),
       layout=st.sampled_from(["files", "hub", "folders"]))
def test_parquet_splits_are_the_ones_load_dataset_reads(tmp_path_factory, assignment, layout):
    clinic = write_clinic(tmp_path_factory.mktemp("csv"), manifest_rows(n_patients=20))
    folder = tmp_path_factory.mktemp("pqsplits")
    for split, rows in _split_rows(clinic, assignment).items():
        target = {"files": folder / "data" / f"{split}.parquet",
                  "hub": folder / "data" / f"{split}-00000-of-00001.parquet",
                  "folders": folder / "data" / split / "part0.parquet"}[layout]
        target.parent.mkdir(parents=True, exist_ok=True)
        datasets.Dataset.from_list(rows).cast_column("image", datasets.Image()).to_parquet(str(target))
    _card(folder, "data", "parquet")
    register_manifests(None, [f"pqsplit={folder}"])
    load = load_dataset("pqsplit", folder)
    hf = _hf_split_names(str(folder / "data"))
    found = _by_split(load)
    assert found["test"] == hf["test"]  # the test split exactly as datasets reads it
    if "val" in hf:
        assert load.metadata["split_source"] == "official" and found == hf
    else:  # no validation split: focus-eval carves one out of train, as for every official split without one
        assert load.metadata["split_source"] == "official+carved_val"
        assert found["train"] | found["val"] == hf["train"]
    assert not any(NO_SPLITS in w for w in load.warnings)


def test_the_cards_data_files_name_the_splits(tmp_path, clinic):
    folder = tmp_path / "df"
    parts = _split_rows(clinic, ["train", "validation", "test", "train"] * 5)
    for split, name in (("train", "a"), ("validation", "b"), ("test", "c")):
        (folder / "files").mkdir(parents=True, exist_ok=True)
        datasets.Dataset.from_list(parts[split]).cast_column("image", datasets.Image()).to_parquet(
            str(folder / "files" / f"{name}.parquet"))
    data_files = {"train": "a.parquet", "validation": ["b.parquet"], "test": "c.parquet"}
    _card(folder, "files", "parquet", extra=f"data_files: {json.dumps(data_files)}\n")
    register_manifests(None, [f"pqdf={folder}"])
    load = load_dataset("pqdf", tmp_path)
    assert _by_split(load) == _hf_split_names(str(folder / "files"), data_files=data_files)
    assert load.metadata["split_source"] == "official"
    # without data_files, the same folder has no split names: one train split, so focus-eval splits it
    _card(folder, "files", "parquet")
    register_manifests(None, [f"pqdf={folder}"])
    load = load_dataset("pqdf", tmp_path)
    assert load.metadata["split_source"] == "grouped_stratified"
    assert [w for w in load.warnings if NO_SPLITS in w] == [f"files: {NO_SPLITS}"]


@pytest.mark.parametrize("bad, message", [
    ({"train": "../elsewhere/*.parquet"}, "must stay inside the dataset folder"),
    ("/etc/*.parquet", "must stay inside the dataset folder"),
    ({"train": []}, "expected a file pattern"),
    ({"train split": "a.parquet"}, "a mapping of split names"),
])
def test_bad_data_files_are_named(tmp_path, clinic, bad, message):
    _card(tmp_path / "bad", "files", "parquet", extra=f"data_files: {json.dumps(bad)}\n")
    with pytest.raises(FocusError, match=message):
        register_manifests(None, [f"bad={tmp_path / 'bad'}"])


def test_data_files_beside_a_single_file_are_refused(tmp_path, clinic):
    folder = tmp_path / "one"
    folder.mkdir()
    datasets.Dataset.from_list(_records(clinic)).to_parquet(str(folder / "clinic.parquet"))
    _card(folder, "clinic.parquet", "parquet", extra="data_files: {test: clinic.parquet}\n")
    with pytest.raises(FocusError, match=r"dataset\.yaml: data_files picks files inside a folder"):
        register_manifests(None, [f"one={folder}"])


def test_imagefolder_reads_each_splits_metadata_as_datasets_does(tmp_path, clinic):
    folder = tmp_path / "if"
    rows = manifest_rows(n_patients=20)
    assignment = ["train", "validation", "test"]
    for split in assignment:
        meta = [row for row in rows if assignment[int(row["patient"][-3:]) % 3] == split]
        for row in meta:
            target = folder / "images" / split / "eyes" / Path(row["image"]).name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((clinic / row["image"]).read_bytes())
        # HF's per-split layout: file_name relative to the metadata file's folder
        lines = ["file_name,patient,dr_grade,glaucoma,sex,eye,age"] + [
            f"eyes/{Path(r['image']).name},{r['patient']},{r['dr_grade']},{r['glaucoma']},{r['sex']},{r['eye']},"
            f"{r['age']}" for r in meta]
        (folder / "images" / split / "metadata.csv").write_text("\n".join(lines) + "\n")
    _card(folder, "images", "imagefolder")
    register_manifests(None, [f"hfif={folder}"])
    load = load_dataset("hfif", tmp_path)
    assert load.metadata["split_source"] == "official" and len(load.records) == len(rows)
    assert not any("patient_id" in w for w in load.warnings)  # patient ids came from the metadata
    assert _by_split(load) == _hf_split_names(str(folder / "images"))
    by_name = {Path(r.image_id).name: r for r in load.records}
    for row in rows:
        record = by_name[Path(row["image"]).stem]
        assert record.glaucoma == row["glaucoma"] and record.dr == int(row["dr_grade"] >= 1)
        assert record.patient_id == row["patient"] and record.age == row["age"]
        assert record.split == HF_SPLITS[assignment[int(row["patient"][-3:]) % 3]]
        assert record.path == folder / "images" / record.split.replace("val", "validation") / "eyes" / \
            f"{Path(row['image']).name}"


def test_imagefolder_labels_come_from_class_folders_without_metadata(tmp_path, clinic):
    folder = tmp_path / "classes"
    rows = manifest_rows(n_patients=20)
    for row in rows:
        split = "test" if int(row["patient"][-3:]) % 4 == 0 else "train"
        target = folder / "images" / split / ("glaucoma" if row["glaucoma"] else "healthy") / Path(row["image"]).name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((clinic / row["image"]).read_bytes())
    card = ("manifest: images\nformat: imagefolder\n"
            "targets:\n  glaucoma: {column: label, positive: [glaucoma], negative: [healthy]}\n")
    (folder / "dataset.yaml").write_text(card)
    register_manifests(None, [f"hfcls={folder}"])
    load = load_dataset("hfcls", tmp_path)
    assert _by_split(load)["test"] == _hf_split_names(str(folder / "images"))["test"]
    truth = {Path(r["image"]).stem: r["glaucoma"] for r in rows}
    assert all(r.glaucoma == truth[Path(r.image_id).name] for r in load.records)


def test_a_dataset_without_splits_is_split_by_focus_eval_and_says_so(tmp_path, clinic):
    rows = _records(clinic)
    disk = tmp_path / "one"
    datasets.Dataset.from_list(rows).cast_column("image", datasets.Image()).save_to_disk(str(disk / "saved"))
    _card(disk, "saved", "hf_disk")
    register_manifests(None, [f"nosplit={disk}"])
    load = load_dataset("nosplit", tmp_path)
    assert load.metadata["split_source"] == "grouped_stratified"
    assert f"saved: {NO_SPLITS}" in load.warnings
    assert set(_by_split(load)) == {"train", "val", "test"}


def test_a_datasetdict_keeps_its_splits(tmp_path, clinic):
    parts = _split_rows(clinic, ["train", "test"] * 10)
    saved = datasets.DatasetDict({split: datasets.Dataset.from_list(rows).cast_column("image", datasets.Image())
                                  for split, rows in parts.items()})
    saved.save_to_disk(str(tmp_path / "dd" / "saved"))
    _card(tmp_path / "dd", "saved", "hf_disk")
    register_manifests(None, [f"dd={tmp_path / 'dd'}"])
    load = load_dataset("dd", tmp_path)
    found = _by_split(load)
    assert found["test"] == {Path(r["image"]["path"]).stem for r in parts["test"]}
    assert load.metadata["split_source"] == "official+carved_val"


def test_an_unknown_format_and_a_missing_image_column_are_named(tmp_path, clinic):
    _card(clinic, "manifest.csv", "arrow")
    with pytest.raises(FocusError, match="format must be one of"):
        register_manifests(None, [f"bad={clinic}"])
    folder = tmp_path / "noimg"
    datasets.Dataset.from_list([{"x": 1, "dr_grade": 0, "glaucoma": 0}]).save_to_disk(str(folder / "saved"))
    _card(folder, "saved", "hf_disk")
    register_manifests(None, [f"noimg={folder}"])
    with pytest.raises(FocusError, match="no image column 'image'"):
        load_dataset("noimg", tmp_path)


@pytest.mark.parametrize("package", ["datasets", "pyarrow"])
def test_a_missing_package_names_the_extra_exits_2_and_writes_nothing(tmp_path, clinic, capsys, monkeypatch,
                                                                      package):
    rows = _records(clinic)
    datasets.Dataset.from_list(rows).cast_column("image", datasets.Image()).save_to_disk(str(tmp_path / "d" / "s"))
    _card(tmp_path / "d", "s", "hf_disk")
    monkeypatch.setitem(sys.modules, package, None)  # as if it were not installed: importing it fails
    capsys.readouterr()
    out = tmp_path / "out"
    assert main(["--model", "tiny-vit", "--tasks", "dr_nohf", "--data-root", str(tmp_path), "--dataset-path",
                 f"nohf={tmp_path / 'd'}", "--output-path", str(out), "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert f"format hf_disk is read with Hugging Face {package}, which is not installed: " \
           "pip install 'focus-eval[hf]'" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists() and not (tmp_path / "d" / "s.images").exists()


@pytest.mark.parametrize("fmt, where", [("hf_disk", "absolute"), ("hf_disk", "relative"), ("parquet", "absolute")])
def test_image_paths_outside_the_cards_folder_name_the_card_and_row(tmp_path, clinic, fmt, where):
    """A saved dataset whose image column holds paths (text), or a parquet file whose image cells hold a path
    and no bytes: a path outside the card's folder is refused, naming the card and the row, and nothing is read
    or copied from there."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    outside = tmp_path / "elsewhere" / "secret.png"
    outside.parent.mkdir()
    outside.write_bytes((clinic / "images" / "CLINICIMG000_R.png").read_bytes())
    rows = [{k: str(v) for k, v in row.items()} for row in manifest_rows(n_patients=3)]
    folder = tmp_path / "paths"
    write_images(folder, rows)
    rows[2]["image"] = str(outside) if where == "absolute" else "../elsewhere/secret.png"
    if fmt == "hf_disk":
        datasets.Dataset.from_list(rows).save_to_disk(str(folder / "saved"))
    else:
        images = pa.array([{"bytes": None, "path": str(folder / r["image"]) if r is not rows[2] else r["image"]}
                           for r in rows], type=pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
        table = pa.table({"image": images, **{k: [r[k] for r in rows] for k in rows[0] if k != "image"}})
        pq.write_table(table, folder / "saved")
    _card(folder, "saved", fmt)
    register_manifests(None, [f"paths={folder}"])
    with pytest.raises(FocusError) as caught:
        load_dataset("paths", tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{folder / 'dataset.yaml'}, row 3: image path ") and "escapes the dataset folder" \
        in message
    assert not list(folder.glob("*.images"))  # nothing copied from outside


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


def test_a_damaged_parquet_file_is_one_line(tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "clinic.parquet").write_bytes(b"PAR1 this is not a parquet file")
    _card(folder, "clinic.parquet", "parquet")
    with pytest.raises(FocusError, match=r"clinic\.parquet"):
        register_manifests(None, [f"broken={folder}"])
        load_dataset("broken", tmp_path)

"""What ReaderSpec and the registry do for every reader: the dataset-folder check (the registry's, before a
reader runs) and the metadata tail (``finish_load``: label files, label rules, the reader's own fields)."""

from pathlib import Path

import pytest

from focus_eval.data import registry
from focus_eval.data.records import ImageRecord
from focus_eval.data.spec import ReaderSpec
from focus_eval.errors import DataError

RULES = {"dr": "grade >= 1"}
SPEC = ReaderSpec(name="spec_clinic", targets=("dr",), group_key="image", label_rules=RULES)
PLAIN = ReaderSpec(name="spec_plain", targets=("dr",), group_key="image")


def test_new_load_is_an_empty_load_of_the_dataset(tmp_path):
    load = SPEC.new_load(str(tmp_path), ["one warning"])
    assert (load.name, load.root, load.records, load.warnings) == ("spec_clinic", tmp_path, [], ["one warning"])
    assert load.metadata == {} and SPEC.new_load(tmp_path).warnings == []


@pytest.mark.parametrize("label_files, label_file", [
    ("labels.csv", "labels.csv"),
    (["od.xlsx", "os.xlsx"], "od.xlsx, os.xlsx"),
    ({"train": "a.csv", "test": "b.csv"}, "a.csv, b.csv"),
    ({"train": {"disc": "d.csv", "fovea": "f.csv"}, "test": {"disc": "t.csv"}}, "d.csv, f.csv, t.csv"),
    ({"train": "a.csv", "val": None, "test": "b.csv"}, "a.csv, b.csv"),
])
def test_finish_load_joins_the_label_files(tmp_path, label_files, label_file):
    load = PLAIN.finish_load(PLAIN.new_load(tmp_path), label_files, layout="official")
    expected = {"label_file": label_file, "layout": "official"}
    if isinstance(label_files, dict):
        expected["label_files"] = label_files
    assert load.metadata == expected


def test_finish_load_records_the_specs_label_rules(tmp_path):
    load = SPEC.finish_load(SPEC.new_load(tmp_path), "labels.csv", version="1.0")
    assert load.metadata == {"label_file": "labels.csv", "label_rules": RULES, "version": "1.0"}


def test_finish_load_without_label_files_keeps_one_already_recorded(tmp_path):
    load = PLAIN.new_load(tmp_path)
    assert PLAIN.finish_load(load).metadata == {"label_file": None}
    load.metadata["label_file"] = "index.json"
    assert PLAIN.finish_load(load, image_folder="images").metadata == {"label_file": "index.json",
                                                                      "image_folder": "images"}


class _Reader:
    """A reader with no folder check of its own: it lists the folder it is given."""

    SPEC = SPEC
    calls: list = []

    @staticmethod
    def read(folder: Path):
        _Reader.calls.append(folder)
        load = SPEC.new_load(folder)
        load.records.append(ImageRecord(dataset="spec_clinic", image_id="a", patient_id="a", path=folder / "a.png",
                                        relpath="a.png", dr=1))
        return SPEC.finish_load(load, "labels.csv")


@pytest.fixture
def registered():
    registry.register_dataset("spec_clinic", _Reader, replace=True)
    _Reader.calls.clear()
    yield
    registry.READERS.unregister("spec_clinic")


def test_the_registry_checks_the_folder_before_the_reader_runs(tmp_path, registered):
    with pytest.raises(DataError, match="dataset folder not found; extract the spec_clinic archive into"):
        registry.read_dataset("spec_clinic", tmp_path)
    assert _Reader.calls == []
    (tmp_path / "spec_clinic").mkdir()
    load = registry.read_dataset("spec_clinic", tmp_path)
    assert _Reader.calls == [tmp_path.resolve() / "spec_clinic"]
    assert load.metadata["label_file"] == "labels.csv" and load.metadata["label_rules"] == RULES


def test_every_builtin_reader_leaves_the_folder_check_to_the_registry():
    import inspect

    for name in registry.REAL_DATASETS:
        source = inspect.getsource(inspect.getmodule(registry.reader(name).read))
        assert "dataset folder not found" not in source, name

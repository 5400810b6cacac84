"""One image id, one record: a reader that meets an image id a second time (two label rows, two files with the
same stem, two class folders) stops with an error naming both places, instead of counting the image twice."""

from __future__ import annotations

import csv
import shutil
from functools import partial
from pathlib import Path

import pytest
from PIL import Image
from helpers import raw_layouts

from focus_eval.cli import main
from focus_eval.data.readers import refuge, synth
from focus_eval.data.registry import read_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_refuge
from focus_eval.synth.datasets import write_synthetic


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("duplicates")
    write_synthetic(root, n=12, seed=1)
    return root


@pytest.fixture
def desktop(pristine, tmp_path) -> Path:
    shutil.copytree(pristine / "synth_desktop", tmp_path / "synth_desktop")
    return tmp_path / "synth_desktop"


def add_label_row(folder: Path, change) -> int:
    """Append a changed copy of the first label row; returns the new row's line number (header = 1)."""
    path = folder / synth.LABELS_FILE
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    rows.append(change(list(rows[1])))
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return len(rows)


def test_a_second_file_of_the_same_image_with_another_label_is_an_error(desktop, capsys):
    first = desktop / synth.IMAGES_DIR / "d0001_OD.jpg"
    Image.open(first).save(first.with_suffix(".png"))

    def conflicting(row):
        row[0], row[3] = "d0001_OD.png", "4" if row[3] == "0" else "0"
        return row

    line = add_label_row(desktop, conflicting)
    with pytest.raises(DataError) as error:
        synth.read(desktop)
    message = str(error.value)
    assert "image id 'd0001_OD' is given twice" in message
    assert "labels.csv, row 2 (images/d0001_OD.jpg)" in message
    assert f"labels.csv, row {line} (images/d0001_OD.png)" in message
    # through the command line: a one-line error, exit status 2, nothing exported
    out = desktop.parent / "export.csv"
    assert main(["datasets", "export", "synth_desktop", "--data-root", str(desktop.parent), "-o", str(out)]) == 2
    assert "is given twice" in capsys.readouterr().err and not out.exists()


def test_the_same_row_twice_is_an_error_naming_both_rows(desktop):
    line = add_label_row(desktop, lambda row: row)
    listed_twice = rf"row {line}: image 'd0001_OD.jpg' is listed twice \(already listed on row 2\)"
    with pytest.raises(DataError, match=listed_twice):
        read_dataset("synth_desktop", desktop.parent)


solid = partial(raw_layouts.solid, green_blue=(40, 40))


def test_one_image_in_two_class_folders_is_an_error_naming_both(tmp_path):
    folder = tmp_path / "refuge"
    raw_refuge.write(folder, seed=0, image=solid)
    train = folder / "Training400"
    shutil.copy(train / "Glaucoma" / "g0001.jpg", train / "Non-Glaucoma" / "g0001.jpg")
    with pytest.raises(DataError) as error:
        refuge.read(folder)
    message = str(error.value)
    assert "image id 'train/g0001' is given twice" in message
    assert "Training400/Glaucoma/g0001.jpg" in message and "Training400/Non-Glaucoma/g0001.jpg" in message


def test_a_registered_reader_that_repeats_an_id_is_stopped_by_the_registry(tmp_path):
    from focus_eval.data import registry
    from focus_eval.data.records import DatasetLoad, ImageRecord
    from focus_eval.data.spec import ReaderSpec

    def read(folder: Path) -> DatasetLoad:
        records = [ImageRecord("own", "eye1", "p1", folder / name, name, dr=dr)
                   for name, dr in (("a/eye1.png", 0), ("b/eye1.png", 1))]
        return DatasetLoad("own", folder, records)

    (tmp_path / "own").mkdir()
    registry.register_dataset("own", registry.Reader(ReaderSpec(name="own", targets=("dr",), group_key="p"), read))
    try:
        with pytest.raises(DataError, match=r"image id 'eye1' is given twice: by a/eye1.png and by b/eye1.png"):
            registry.read_dataset("own", tmp_path)
    finally:
        registry.READERS.unregister("own")

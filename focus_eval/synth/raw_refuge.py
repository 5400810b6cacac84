"""Miniature REFUGE (2018) in its raw layout: the official release (class folders for training,
ground-truth workbooks for validation and test) or the Kaggle bundle (index.json per split, whose test
index has no labels)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from openpyxl import Workbook
from PIL import Image

from focus_eval.synth.raw_common import image_labels, save_jpeg

# Image names and glaucoma labels per split (3 glaucoma and 7 non-glaucoma eyes each).
TRAIN = [(f"g{n:04d}", 1) for n in range(1, 4)] + [(f"n{n:04d}", 0) for n in range(1, 8)]
VAL = [(f"V{n:04d}", int(n in (2, 5, 9))) for n in range(1, 11)]
TEST = [(f"T{n:04d}", int(n in (1, 4, 8))) for n in range(1, 11)]
SPLITS = {"train": TRAIN, "val": VAL, "test": TEST}
TRAIN_CLASS_FOLDERS = {1: "Glaucoma", 0: "Non-Glaucoma"}
VAL_WORKBOOK = "REFUGE-Validation400-GT/Fovea_locations.xlsx"
TEST_WORKBOOK = "REFUGE-Test-GT/Glaucoma_label_and_Fovea_location.xlsx"
LAYOUTS = ("official", "kaggle")


def write(folder: Path, seed: int, image: Callable[[dict], Image.Image], layout: str = "official") -> None:
    """Write the miniature dataset into ``folder`` (the ``refuge`` folder of a data root)."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown REFUGE layout {layout!r}; expected one of {list(LAYOUTS)}")
    folder = Path(folder)
    if layout == "official":
        _write_official(folder, seed, image)
    else:
        _write_kaggle(folder, seed, image)


def write_test_workbook(path: Path) -> None:
    """The official test ground truth alone (users of the Kaggle bundle may add it)."""
    _workbook(path, ["ImgName", "Label(Glaucoma=1)", "Fovea_X", "Fovea_Y"],
              [[f"{name}.jpg", label, *_fovea(i)] for i, (name, label) in enumerate(TEST)])


def _write_official(folder: Path, seed: int, image: Callable[[dict], Image.Image]) -> None:
    for name, label in TRAIN:
        _image(image, seed, "train", name, label, folder / "Training400" / TRAIN_CLASS_FOLDERS[label] / f"{name}.jpg")
    # The training fovea workbook has no labels; its name differs from the validation one by one letter.
    _workbook(folder / "Annotation-Training400" / "Fovea_location.xlsx", ["ID", "ImgName", "Fovea_X", "Fovea_Y"],
              [[i + 1, f"{name}.jpg", *_fovea(i)] for i, (name, _) in enumerate(TRAIN)])
    for name, label in VAL:
        _image(image, seed, "val", name, label, folder / "REFUGE-Validation400" / f"{name}.jpg")
    _workbook(folder / VAL_WORKBOOK, ["ImgName", "Fovea_X", "Fovea_Y", "Glaucoma Label"],
              [[f"{name}.jpg", *_fovea(i), label] for i, (name, label) in enumerate(VAL)])
    for name, label in TEST:
        _image(image, seed, "test", name, label, folder / "Test400" / f"{name}.jpg")
    write_test_workbook(folder / TEST_WORKBOOK)


def _write_kaggle(folder: Path, seed: int, image: Callable[[dict], Image.Image]) -> None:
    for split, rows in SPLITS.items():
        split_dir = folder / "REFUGE" / split
        index = {}
        for i, (name, label) in enumerate(rows):
            _image(image, seed, split, name, label, split_dir / "Images" / f"{name}.jpg")
            _mask(split_dir / "Masks" / f"{name}.bmp")
            record = {"ImgName": f"{name}.jpg", "Fovea_X": _fovea(i)[0], "Fovea_Y": _fovea(i)[1]}
            if split != "test":  # the bundle's test index carries no labels
                record["Label"] = label
            index[str(i)] = record
        (split_dir / "index.json").write_text(json.dumps(index, indent=1), encoding="utf-8")


def _image(image: Callable[[dict], Image.Image], seed: int, split: str, name: str, label: int, path: Path) -> None:
    image_id = f"{split}/{name}"
    save_jpeg(image, image_labels("refuge", image_id, image_id, seed, split=split, glaucoma=label), path)


def _mask(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("L", (8, 8), 255).save(path)


def _fovea(i: int) -> tuple[float, float]:
    return 1000.0 + 3.5 * i, 1020.0 - 2.25 * i


def _workbook(path: Path, header: list, rows: list[list]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    book = Workbook()
    sheet = book.active
    sheet.append(header)
    for row in rows:
        sheet.append(row)
    book.save(path)

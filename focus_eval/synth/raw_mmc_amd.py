"""Miniature MMC-AMD in its raw layout: ``mmc-amd/ImageData/cfp-clahe-448x448/f-*.jpg`` and
``mmc-amd/ImageData/oct-median3x3-448x448/o-*.jpg``, and the patient-disjoint split folders
``mmc-amd-splitAP-<train|val|test>/`` with ``ImageSets``, ``annotations``, ``EyeSets`` and ``SubjectSets`` per
modality. The colour fundus annotations name each image before its category, the OCT ones give the category
alone (both forms are read); one listed B-scan has no image file. Every category has images of both
modalities in the test split.

Labels and file names are fixed (tests state them by hand); ``seed`` only varies the pictures.
"""

from __future__ import annotations

from pathlib import Path

from focus_eval.synth.modalities import oct_bscan
from focus_eval.synth.raw_common import ImageFn, image_labels, save_jpeg

VERSION = "mmc-amd-splitAP"
FOLDERS = {"cfp": "cfp-clahe-448x448", "oct": "oct-median3x3-448x448"}
CODES = {"h": 0, "d": 1, "p": 2, "w": 3}
# split -> modality -> image ids, in list order; the category is the letter after the modality
ROWS = {
    "train": {"cfp": ["f-h-0101_1", "f-h-0102_1", "f-d-0103_1", "f-d-0104_1", "f-p-0105_1", "f-p-0106_1",
                      "f-w-0107_1", "f-w-0107_2"],
              "oct": ["o-h-0101_1", "o-d-0103_1", "o-p-0105_1", "o-p-0105_2", "o-w-0107_1"]},
    "val": {"cfp": ["f-h-0201_1", "f-d-0202_1", "f-p-0203_1", "f-w-0204_1"],
            "oct": ["o-h-0201_1", "o-w-0204_1"]},
    "test": {"cfp": ["f-h-0301_1", "f-h-0302_1", "f-d-0303_1", "f-p-0304_1", "f-w-0305_1", "f-w-0306_1"],
             "oct": ["o-h-0301_1", "o-d-0303_1", "o-d-0303_2", "o-p-0304_1", "o-w-0305_1", "o-w-0307_1"]},
}
MISSING = {"o-w-0307_1"}  # listed, no image file


def category(image_id: str) -> int:
    return CODES[image_id.split("-")[1]]


def eye(image_id: str) -> str:
    return image_id[2:].split("_")[0]


def write(folder: Path, seed: int, image: ImageFn) -> None:
    root = Path(folder)
    for split, modalities in ROWS.items():
        sets = root / f"{VERSION}-{split}"
        for modality, ids in modalities.items():
            _write_lines(sets / "ImageSets" / f"{modality}.txt", ids)
            labels = [f"{i} {category(i)}" if modality == "cfp" else str(category(i)) for i in ids]
            _write_lines(sets / "annotations" / f"{modality}.txt", labels)
            _write_lines(sets / "EyeSets" / f"{modality}.txt", sorted({eye(i) for i in ids}))
            _write_lines(sets / "SubjectSets" / f"{modality}.txt", sorted({eye(i).split("-")[1] for i in ids}))
            for image_id in ids:
                if image_id not in MISSING:
                    _picture(root / "mmc-amd" / "ImageData" / FOLDERS[modality] / f"{image_id}.jpg", image_id,
                             modality, seed, image)


def _picture(path: Path, image_id: str, modality: str, seed: int, image: ImageFn) -> None:
    labels = image_labels("mmc_amd", image_id, eye(image_id), seed)
    if modality == "cfp":
        save_jpeg(image, labels, path)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    oct_bscan(labels["seed"]).save(path, format="JPEG", quality=90)


def _write_lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

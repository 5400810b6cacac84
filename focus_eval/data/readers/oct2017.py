"""Reader for the UCSD OCT2017 set (Kermany et al. 2018): OCT B-scans in ``OCT2017/train/<class>/`` and
``OCT2017/test/<class>/`` with classes CNV, DME, DRUSEN and NORMAL, each file named
``<CLASS>-<patient id>-<image number>.jpeg``. The release splits training and test by patient; that split is
used as published. Some copies (the Kaggle one) add a small ``val/`` folder drawn from the training pool and
nest a second copy of the tree (``oct2017/OCT2017 /...``): val images join train (the loader carves its own
patient-grouped validation part), and only the shallowest tree is read.

Labels: the class folder is the one condition of the image (``NORMAL`` -> normal, abnormal 0; every other
class -> abnormal 1, conditions the class name). There is no screening target; modality is "oct".
"""

from __future__ import annotations

from pathlib import Path

from focus_eval.data.files import find_dirs, image_files
from focus_eval.data.matching import add_image, usable_file
from focus_eval.data.records import NORMAL, DatasetLoad, Skipped
from focus_eval.data.spec import ReaderSpec
from focus_eval.errors import DataError

SPEC = ReaderSpec(
    name="oct2017",
    targets=(),
    group_key="patient (the number in the file name)",
    official_split=True,
    modality="oct",
    # the published figures of the release (Kermany et al. 2018): 108,312 training and 1,000 test B-scans
    documented_counts={"test": {"n": 1000}},
    label_rules={
        "abnormal": "class folder NORMAL -> 0; CNV, DME, DRUSEN -> 1",
        "conditions": "the class folder (one per image): CNV, DME, DRUSEN; NORMAL -> normal",
    },
)

CLASSES = ("CNV", "DME", "DRUSEN", "NORMAL")
# release folder -> split; val/ of some copies holds training-pool images
SPLIT_FOLDERS = {"train": "train", "val": "train", "test": "test"}


def condition_of(label: str) -> str:
    """The condition of an image of class folder ``label`` (upper case)."""
    return NORMAL if label == "NORMAL" else label


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    root, warnings = _root(folder)
    load = SPEC.new_load(folder, warnings)
    for entry in sorted(p for p in root.iterdir() if p.is_dir()):
        split = SPLIT_FOLDERS.get(entry.name.strip().lower())
        if split is None:
            continue
        for class_dir in sorted(p for p in entry.iterdir() if p.is_dir() and not p.name.startswith(".")):
            label = class_dir.name.strip().upper()
            if label not in CLASSES:
                raise DataError(f"unknown class folder {class_dir.name!r}; expected one of {', '.join(CLASSES)}",
                                file=str(class_dir))
            for path in sorted(image_files(class_dir)[0].values()):
                _add(load, folder, entry.name.strip().lower(), split, label, path)
    if not load.records and not load.skipped:
        raise DataError(f"no B-scans found under {root}; expected train/<class>/<CLASS>-<patient>-<n>.jpeg",
                        file=str(root))
    return SPEC.finish_load(load, None, image_folder=str(root),
                            label_rule="class folder; see focus_eval.data.readers.oct2017")


def _add(load: DatasetLoad, folder: Path, source: str, split: str, label: str, path: Path) -> None:
    image_id = f"{source}/{path.stem}"
    parts = path.stem.split("-")
    if len(parts) != 3 or parts[0].upper() != label or not parts[1].isdigit():
        load.skipped.append(Skipped(str(path.parent), None, image_id,
                                    f"file name {path.name} is not {label}-<patient id>-<n>"))
        return
    abnormal = 0 if label == "NORMAL" else 1
    fields = {"patient_id": parts[1], "split": split, "abnormal": abnormal, "conditions": (condition_of(label),),
              "modality": "oct", "extra": {"class_folder": label, "release_folder": source}}
    add_image(load, folder.resolve(), usable_file(folder, path, path.parent, None, image_id), image_id, fields)


def _root(folder: Path) -> tuple[Path, list[str]]:
    """The shallowest folder under ``folder`` that holds a ``train`` or ``test`` folder of class folders."""
    candidates = [d.parent for d in find_dirs(folder, ["train", "test"])
                  if any((d / c).is_dir() or (d / c.lower()).is_dir() for c in CLASSES)]
    if not candidates:
        raise DataError(f"no OCT2017 split folders found; expected {folder}/OCT2017/train/CNV/ and "
                        f"{folder}/OCT2017/test/CNV/", file=str(folder))
    root = candidates[0]
    others = sorted({str(c) for c in candidates if c != root})
    warnings = [f"nested copy {other} is not read" for other in others]
    return root, warnings


"""Reader for JSIEC1000 (Cen et al. 2021): ``1000images/<class folder>/<name>``, one label per image from its
folder (39 classes). File names may carry a double dot before the extension (``<uuid>..JPG``) and the
extensions vary in case (``.JPG``, ``.jpg``, ``.TIF``). The Kaggle zip can hold a nested duplicate
``1000images/1000images/``: only the shallowest ``1000images`` folder that holds class folders is read.

Targets come from the folder sets below (recorded here so task files can cite them): DR folders are positive,
ambiguous folders that may hold DR signs or treatment traces are excluded (None), every other folder is
negative. There is no glaucoma target and no patient id (each image is its own group).
"""

from __future__ import annotations

import os
from pathlib import Path

from focus_eval.data.files import admitted, find_dirs, is_image_name
from focus_eval.data.matching import add_image, usable_file
from focus_eval.data.records import DatasetLoad, Skipped
from focus_eval.data.spec import ALL_IMAGES, ReaderSpec
from focus_eval.errors import DataError

SPEC = ReaderSpec(
    name="jsiec",
    targets=("dr", "referable_dr"),
    group_key="image (JSIEC1000 has no patient id)",
    # counted from the image paths of the public release
    documented_counts={ALL_IMAGES: {"n": 1000, "dr_pos": 106, "dr_neg": 658, "referable_dr_pos": 88,
                                    "referable_dr_neg": 676}},
    label_rules={
        "abnormal": "0.0.Normal -> 0 (conditions: normal); every other class folder -> 1",
        "conditions": "the class folder (one per image), e.g. 1.0.DR2; 0.0.Normal -> normal",
    },
)

ROOT_DIR = "1000images"

DR_POSITIVE_FOLDERS = ("0.3.DR1", "1.0.DR2", "1.1.DR3")
REFERABLE_DR_POSITIVE_FOLDERS = ("1.0.DR2", "1.1.DR3")
# Folders that may contain DR (haemorrhages, exudates, cotton-wool spots, fibrosis, laser scars, suspected PDR
# behind a blurred image): neither a confirmed positive nor a safe negative, so excluded from both targets.
EXCLUDED_FOLDERS = (
    "18.Vitreous particles", "20.Massive hard exudates", "22.Cotton-wool spots", "25.Preretinal hemorrhage",
    "26.Fibrosis", "27.Laser Spots", "29.0.Blur fundus without PDR", "29.1.Blur fundus with suspected PDR",
)
NEGATIVE_FOLDERS = (
    "0.0.Normal", "0.1.Tessellated fundus", "0.2.Large optic cup", "2.0.BRVO", "2.1.CRVO", "3.RAO",
    "4.Rhegmatogenous RD", "5.0.CSCR", "5.1.VKH disease", "6.Maculopathy", "7.ERM", "8.MH",
    "9.Pathological myopia", "10.0.Possible glaucoma", "10.1.Optic atrophy", "11.Severe hypertensive retinopathy",
    "12.Disc swelling and elevation", "13.Dragged Disc", "14.Congenital disc abnormality",
    "15.0.Retinitis pigmentosa", "15.1.Bietti crystalline dystrophy", "16.Peripheral retinal degeneration and break",
    "17.Myelinated nerve fiber", "19.Fundus neoplasm", "21.Yellow-white spots-flecks", "23.Vessel tortuosity",
    "24.Chorioretinal atrophy-coloboma", "28.Silicon oil in eye",
)
CLASS_FOLDERS = DR_POSITIVE_FOLDERS + EXCLUDED_FOLDERS + NEGATIVE_FOLDERS
# The referable-DR negatives are the DR negatives plus mild DR.
REFERABLE_DR_NEGATIVE_FOLDERS = ("0.3.DR1",) + NEGATIVE_FOLDERS

_CANONICAL = {name.lower(): name for name in CLASS_FOLDERS}
NORMAL_FOLDER = "0.0.Normal"


def condition_of(class_folder: str) -> str:
    """The condition an image of ``class_folder`` shows: its folder name, or ``normal``."""
    return "normal" if class_folder == NORMAL_FOLDER else class_folder


def labels_for(class_folder: str) -> tuple[int | None, int | None]:
    """(dr, referable_dr) of an image in ``class_folder`` (a canonical folder name)."""
    if class_folder in EXCLUDED_FOLDERS:
        return None, None
    dr = int(class_folder in DR_POSITIVE_FOLDERS)
    return dr, int(class_folder in REFERABLE_DR_POSITIVE_FOLDERS)


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    root, warnings = _root(folder)
    load = SPEC.new_load(folder, warnings)
    for entry in sorted(root.iterdir()):
        if entry.is_file():
            if is_image_name(entry.name):
                load.skipped.append(Skipped(str(root), None, entry.name, "image outside any class folder"))
            continue
        if entry.name.lower() == ROOT_DIR.lower():
            load.warnings.append(f"nested duplicate folder {entry} is not read")
            continue
        if entry.name.startswith(".") or entry.name == "__MACOSX":
            continue
        class_folder = _CANONICAL.get(entry.name.strip().lower())
        if class_folder is None:
            raise DataError(f"unknown class folder {entry.name!r}; expected one of the 39 JSIEC1000 classes "
                            f"({CLASS_FOLDERS[0]!r} ... {CLASS_FOLDERS[-1]!r})", file=str(entry))
        _read_class(load, entry, class_folder)
    return SPEC.finish_load(load, None, image_folder=str(root),
                            label_rule="class folder; see DR_POSITIVE_FOLDERS, EXCLUDED_FOLDERS, NEGATIVE_FOLDERS "
                                       "in focus_eval.data.readers.jsiec")


def _read_class(load: DatasetLoad, directory: Path, class_folder: str) -> None:
    """The images of one class folder, labelled by the folder."""
    root = load.root.resolve()
    dr, referable = labels_for(class_folder)
    entries = sorted(directory.iterdir())
    for entry in [e for e in entries if e.is_dir()]:
        load.warnings.append(f"sub-folder {entry} inside a class folder is not read")
    for entry in admitted(e for e in entries if not e.is_dir() and is_image_name(e.name)):
        image_id = f"{directory.name}/{entry.name}"
        add_image(load, root, usable_file(root, entry, directory, None, image_id), image_id,
                  dict(dr=dr, referable_dr=referable, extra={"class_folder": class_folder},
                       abnormal=int(class_folder != NORMAL_FOLDER), conditions=(condition_of(class_folder),)))


def _root(folder: Path) -> tuple[Path, list[str]]:
    """The shallowest folder (``folder`` itself or a ``1000images`` below it) that holds class folders."""
    candidates = [d for d in [folder, *find_dirs(folder, [ROOT_DIR])] if _holds_classes(d)]
    if not candidates:
        raise DataError(f"no JSIEC1000 class folders found; expected {folder}/{ROOT_DIR}/0.0.Normal and the "
                        "other class folders", file=str(folder))
    root = candidates[0]
    others = [d for d in candidates[1:] if root not in d.parents]
    return root, [f"another {ROOT_DIR} folder at {d} is not read; using {root}" for d in others]


def _holds_classes(directory: Path) -> bool:
    try:
        return any(entry.is_dir() and entry.name.strip().lower() in _CANONICAL for entry in os.scandir(directory))
    except OSError:
        return False

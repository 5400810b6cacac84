"""Reader for OCTID (Gholami et al. 2020, "OCTID: Optical coherence tomography image database", University of
Waterloo): foveal OCT B-scans (Cirrus HD-OCT, 2 mm raster scans) published as one archive per class, each
extracting to a folder of the class's name: ``NORMAL``, ``AMRD`` (age-related macular degeneration), ``CSR``
(central serous retinopathy), ``DR`` (diabetic retinopathy) and ``MH`` (macular hole). The folders are found at
any depth and by name in any case (``AMD`` is read as ``AMRD``); every image file inside one is an image of its
class, whatever its file name. The release names no patients and no split: each image is its own group and
the loader's seeded 60/20/20 split applies. The 25 normal images with layer delineations of the segmentation
part are not read.

Labels: the class folder is the one condition of the image (``NORMAL`` -> normal, abnormal 0; every other
class -> abnormal 1, conditions the class code, ``AMRD`` as ``AMD``). There is no screening target; modality
is "oct".
"""

from __future__ import annotations

import os
from pathlib import Path

from focus_eval.data.files import image_files
from focus_eval.data.matching import add_image, usable_file
from focus_eval.data.records import NORMAL, DatasetLoad
from focus_eval.data.spec import ALL_IMAGES, ReaderSpec
from focus_eval.errors import DataError

SPEC = ReaderSpec(
    name="octid",
    targets=(),
    group_key="image (the release names no patients)",
    modality="oct",
    # the release's class folders: 206 normal, 55 AMD, 102 CSR, 107 DR and 102 MH B-scans
    documented_counts={ALL_IMAGES: {"n": 572}},
    label_rules={
        "abnormal": "class folder NORMAL -> 0; AMRD, CSR, DR, MH -> 1",
        "conditions": "the class folder (one per image): AMRD -> AMD, CSR, DR, MH; NORMAL -> normal",
    },
)

# class folder name (upper case) -> condition
FOLDERS = {"NORMAL": NORMAL, "AMRD": "AMD", "AMD": "AMD", "CSR": "CSR", "DR": "DR", "MH": "MH"}


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    load = SPEC.new_load(folder)
    found = _class_folders(folder)
    if not found:
        raise DataError(f"no OCTID class folders found under {folder}; expected NORMAL/, AMRD/, CSR/, DR/ and MH/",
                        file=str(folder))
    for class_dir in found:
        code = class_dir.name.strip().upper()
        condition = FOLDERS[code]
        for path in sorted(image_files(class_dir)[0].values()):
            image_id = f"{'AMRD' if code == 'AMD' else code}/{path.stem}"
            fields = {"abnormal": int(condition != NORMAL), "conditions": (condition,), "modality": "oct",
                      "extra": {"class_folder": class_dir.name}}
            add_image(load, folder.resolve(), usable_file(folder, path, class_dir, None, image_id), image_id, fields)
    others = sorted({str(d.relative_to(folder)) for d in _class_folders(folder, shallowest=False)} -
                    {str(d.relative_to(folder)) for d in found})
    load.warnings += [f"class folder {other} is a second copy and is not read" for other in others]
    return SPEC.finish_load(load, None, image_folders=[str(d.relative_to(folder)) for d in found])


def _class_folders(folder: Path, shallowest: bool = True) -> list[Path]:
    """The class folders below ``folder`` (hidden folders skipped); with ``shallowest``, one per class: the
    one nearest the top, in the order of the class codes."""
    out: dict[str, Path] = {}
    every = []
    for dirpath, dirnames, _ in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in dirnames:
            code = name.strip().upper()
            if code in FOLDERS:
                path = Path(dirpath) / name
                every.append(path)
                key = "AMRD" if code == "AMD" else code
                if key not in out or len(path.parts) < len(out[key].parts):
                    out[key] = path
    return [out[key] for key in sorted(out)] if shallowest else every

"""Reader for G1020 (Bajwa et al. 2020): ``G1020.csv`` (imageID with extension, binaryLabels 1 = glaucoma,
0 = normal) next to an ``Images/`` folder. The csv is searched at any depth, because the Kaggle bundle unzips
one level deeper (``G1020/G1020/``); the other image folders of the bundle (``Images_Square``,
``Images_Cropped``, masks) are not read. No patient id exists although patients contribute up to 12 images:
each image is its own group, a known limitation.
"""

from __future__ import annotations

from pathlib import Path

from focus_eval.data.common import (ImageMatcher, documented_count_warnings, find_label_file, map_code,
                                    read_csv_rows, resolve_columns)
from focus_eval.data.records import DatasetLoad, ImageRecord, Skipped
from focus_eval.errors import DataError

LABEL_FILES = ("G1020.csv",)
IMAGE_DIR = "Images"
ALIASES = {"image": ("imageID",), "glaucoma": ("binaryLabels",)}

TARGETS = ("glaucoma",)
COHORTS = {"all": lambda record: True}
DEFAULT_COHORT = "all"
OFFICIAL_SPLIT = False
GROUP_KEY = "image (G1020 has no patient id although patients contribute up to 12 images)"

_BINARY = {"0": 0, "1": 1}
DOCUMENTED_COUNTS = {"n": 1020, "glaucoma_pos": 296, "glaucoma_neg": 724}  # differences are warnings only


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    warnings: list[str] = []
    labels = find_label_file(folder, LABEL_FILES, "G1020 label file", warnings)
    image_dir = _image_dir(labels)
    images = ImageMatcher(folder, labels, image_dir)
    headers, rows = read_csv_rows(labels)
    columns = resolve_columns(headers, ALIASES, labels)
    records, skipped = [], []
    for row in rows:
        line = row["__row__"]
        name = images.claim_cell(row, columns["image"])
        glaucoma = map_code(row[columns["glaucoma"]], _BINARY, labels, line, columns["glaucoma"])
        path = images.find(name, line, name, f"image file missing under {image_dir}")
        if isinstance(path, Skipped):
            skipped.append(path)
            continue
        records.append(ImageRecord(dataset="g1020", image_id=name, patient_id=name, path=path,
                                   relpath=path.relative_to(folder.resolve()).as_posix(), glaucoma=glaucoma))
    warnings += documented_count_warnings("g1020", records, TARGETS, DOCUMENTED_COUNTS)
    warnings.append("G1020 has no patient id: images of one patient may fall into different splits")
    return DatasetLoad(name="g1020", root=folder, records=records, skipped=skipped, warnings=warnings,
                       metadata={"label_file": str(labels), "image_folder": str(image_dir)})


def _image_dir(labels: Path) -> Path:
    found = sorted(d for d in labels.parent.iterdir() if d.is_dir() and d.name.lower() == IMAGE_DIR.lower())
    if not found:
        raise DataError(f"no {IMAGE_DIR}/ folder next to the label file; expected {labels.parent / IMAGE_DIR}",
                        file=str(labels))
    return found[0]

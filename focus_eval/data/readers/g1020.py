"""Reader for G1020 (Bajwa et al. 2020): ``G1020.csv`` (imageID with extension, binaryLabels 1 = glaucoma,
0 = normal) next to an ``Images/`` folder. The csv is searched at any depth, because the Kaggle bundle unzips
one level deeper (``G1020/G1020/``); the other image folders of the bundle (``Images_Square``,
``Images_Cropped``, masks) are not read. No patient id exists although patients contribute up to 12 images:
each image is its own group, a known limitation.
"""

from __future__ import annotations

from pathlib import Path

from focus_eval.data.cells import clean_id, map_code
from focus_eval.data.files import find_label_file
from focus_eval.data.matching import ImageMatcher, Listed, read_rows
from focus_eval.data.records import DatasetLoad
from focus_eval.data.spec import ALL_IMAGES, ReaderSpec
from focus_eval.data.tables import read_csv_rows, resolve_columns
from focus_eval.errors import DataError

SPEC = ReaderSpec(
    name="g1020",
    targets=("glaucoma",),
    group_key="image (G1020 has no patient id although patients contribute up to 12 images)",
    documented_counts={ALL_IMAGES: {"n": 1020, "glaucoma_pos": 296, "glaucoma_neg": 724}},
)

LABEL_FILES = ("G1020.csv",)
IMAGE_DIR = "Images"
ALIASES = {"image": ("imageID",), "glaucoma": ("binaryLabels",)}
_BINARY = {"0": 0, "1": 1}


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    load = SPEC.new_load(folder)
    labels = find_label_file(folder, LABEL_FILES, "G1020 label file", load.warnings)
    image_dir = _image_dir(labels)
    headers, rows = read_csv_rows(labels)
    columns = resolve_columns(headers, ALIASES, labels)

    def listed(row: dict) -> Listed:
        line = row["__row__"]
        name = clean_id(row[columns["image"]], labels, line, columns["image"])
        glaucoma = map_code(row[columns["glaucoma"]], _BINARY, labels, line, columns["glaucoma"])
        return Listed(name, name, line, {"glaucoma": glaucoma})

    read_rows(load, ImageMatcher(folder, labels, image_dir), rows, listed)
    load.warnings.append("G1020 has no patient id: images of one patient may fall into different splits")
    return SPEC.finish_load(load, str(labels), image_folder=str(image_dir))


def _image_dir(labels: Path) -> Path:
    found = sorted(d for d in labels.parent.iterdir() if d.is_dir() and d.name.lower() == IMAGE_DIR.lower())
    if not found:
        raise DataError(f"no {IMAGE_DIR}/ folder next to the label file; expected {labels.parent / IMAGE_DIR}",
                        file=str(labels))
    return found[0]

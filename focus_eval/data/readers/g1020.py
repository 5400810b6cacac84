"""Reader for G1020 (Bajwa et al. 2020): ``G1020.csv`` (imageID with extension, binaryLabels 1 = glaucoma,
0 = normal) next to an ``Images/`` folder. The csv is searched at any depth, because the Kaggle bundle unzips
one level deeper (``G1020/G1020/``); the other image folders of the bundle (``Images_Square``,
``Images_Cropped``, masks) are not read. No patient id exists although patients contribute up to 12 images:
each image is its own group, a known limitation.
"""

from __future__ import annotations

from pathlib import Path

from focus_eval.data.common import (documented_count_warnings, file_index, find_files, find_one, map_code,
                                    read_csv_rows, resolve_columns, safe_path)
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
    labels = find_one(folder, LABEL_FILES, "G1020 label file")
    warnings = [f"another {p.name} at {p} is not read; using {labels}" for p in find_files(folder, LABEL_FILES)[1:]]
    image_dir = _image_dir(labels)
    images = file_index(image_dir)
    headers, rows = read_csv_rows(labels)
    columns = resolve_columns(headers, ALIASES, labels)
    records, skipped, seen = [], [], {}
    for row in rows:
        line = row["__row__"]
        name = row[columns["image"]]
        if name is None:
            raise DataError(f"empty {columns['image']!r} cell", file=str(labels), row=line)
        if name.lower() in seen:
            raise DataError(f"image {name!r} is listed twice (rows {seen[name.lower()]} and {line})",
                            file=str(labels), row=line)
        seen[name.lower()] = line
        glaucoma = map_code(row[columns["glaucoma"]], _BINARY, labels, line, columns["glaucoma"])
        path = images.get(name.lower())
        if path is None:
            skipped.append(Skipped(str(labels), line, name, f"image file missing under {image_dir}"))
            continue
        path = safe_path(folder, path, labels, line)
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

"""Reader for the NEH OCT set (Noor Eye Hospital, Tehran; Sotoudeh-Paima, Hajizadeh and Soltanian-Zadeh 2022,
"Labeled retinal optical coherence tomography dataset for classification of normal, drusen, and CNV cases",
Mendeley Data): B-scans of macular volumes in ``NORMAL/``, ``DRUSEN/`` and ``CNV/`` folders of patient folders,
and ``data_information.csv`` with one row per B-scan: ``Directory`` (the image's path below the dataset
folder, written with a leading separator and forward or backward slashes), ``Class`` (the patient's
class: the worst condition of the volume), ``Label`` (the B-scan's own label) and ``Patient ID`` (numbered
within a class). The table is found at any depth; image paths are resolved against its folder or, where the
images lie one level deeper, against the folder below it that holds the class folders. No split is published:
the loader's seeded, patient-grouped 60/20/20 split applies.

Labels: ``Label`` is the one condition of the B-scan (normal -> normal, abnormal 0; drusen -> drusen, CNV ->
CNV, abnormal 1); ``Class`` is kept in ``extra``. The patient is ``<Class>-<Patient ID>``. Modality "oct".
"""

from __future__ import annotations

from pathlib import Path

from focus_eval.data.cells import clean_id
from focus_eval.data.files import find_label_file, safe_path
from focus_eval.data.matching import add_image, usable_file
from focus_eval.data.records import NORMAL, DatasetLoad, Skipped
from focus_eval.data.spec import ALL_IMAGES, ReaderSpec
from focus_eval.data.tables import read_csv_rows, resolve_columns
from focus_eval.errors import DataError

SPEC = ReaderSpec(
    name="neh",
    targets=(),
    group_key="patient (the volume's class and its Patient ID)",
    modality="oct",
    # the release's table: 16,822 B-scans
    documented_counts={ALL_IMAGES: {"n": 16822}},
    label_rules={
        "abnormal": "Label normal -> 0; drusen, CNV -> 1",
        "conditions": "Label (one per B-scan): drusen -> drusen, CNV -> CNV; normal -> normal",
    },
)

LABEL_FILE = "data_information.csv"
COLUMNS = {"path": ("Directory",), "class": ("Class",), "label": ("Label",), "patient": ("Patient ID",)}
LABELS = {"normal": NORMAL, "drusen": "drusen", "cnv": "CNV"}
CLASS_FOLDERS = ("NORMAL", "DRUSEN", "CNV")


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    load = SPEC.new_load(folder)
    label_file = find_label_file(folder, [LABEL_FILE], "NEH table", load.warnings)
    headers, rows = read_csv_rows(label_file)
    found = resolve_columns(headers, COLUMNS, label_file)
    root = _image_root(label_file.parent)
    for row in rows:
        _add(load, folder, root, label_file, found, row)
    return SPEC.finish_load(load, label_file.relative_to(folder).as_posix(),
                            image_root=root.relative_to(folder).as_posix() or ".")


def _image_root(table_dir: Path) -> Path:
    """The folder the ``Directory`` paths start from: the table's own, or a folder below it that holds the
    class folders."""
    if any((table_dir / name).is_dir() for name in CLASS_FOLDERS):
        return table_dir
    below = [d for d in sorted(table_dir.iterdir()) if d.is_dir() and any((d / n).is_dir() for n in CLASS_FOLDERS)]
    return below[0] if below else table_dir


def _add(load: DatasetLoad, folder: Path, root: Path, label_file: Path, found: dict, row: dict) -> None:
    line = row["__row__"]
    relative = (row[found["path"]] or "").strip().replace("\\", "/").lstrip("/")
    if not relative:
        raise DataError(f"column {found['path']!r} is empty", file=str(label_file), row=line)
    label = (row[found["label"]] or "").strip().lower()
    if label not in LABELS:
        raise DataError(f"column {found['label']!r}: {row[found['label']]!r} is not normal, drusen or CNV",
                        file=str(label_file), row=line)
    volume_class = (row[found["class"]] or "").strip().upper()
    patient = clean_id(row[found["patient"]], label_file, line, found["patient"])
    image_id = relative.rsplit(".", 1)[0]
    path = safe_path(root, relative, label_file, line)
    if not path.is_file():
        load.skipped.append(Skipped(str(label_file), line, image_id, "image file not found"))
        return
    condition = LABELS[label]
    fields = {"patient_id": f"{volume_class}-{patient}", "abnormal": int(condition != NORMAL),
              "conditions": (condition,), "modality": "oct", "extra": {"volume_class": volume_class}}
    add_image(load, folder.resolve(), usable_file(folder, path, label_file, line, image_id), image_id, fields,
              origin=f"{label_file.name} row {line}")

"""Reader for REFUGE (2018): official train/val/test with the clinical glaucoma label, from the official
release (class folders + ground-truth workbooks) or the Kaggle bundle (index.json per split). The official
test set is read as test, never replaced by the validation set."""

from __future__ import annotations

from pathlib import Path

from focus_eval.data.cells import clean_id, parse_grade
from focus_eval.data.files import file_index, find_dirs, find_files, relative_to, with_extension
from focus_eval.data.matching import ImageMatcher, Listed, add_image, read_rows, usable_file
from focus_eval.data.records import DatasetLoad, Skipped
from focus_eval.data.spec import ReaderSpec
from focus_eval.data.tables import clean_cell, clean_header, read_xlsx_rows, resolve_columns
from focus_eval.errors import DataError
from focus_eval.files import load_json

SPEC = ReaderSpec(
    name="refuge",
    targets=("glaucoma",),
    official_split=True,
    group_key="image (no patient id; official train/val/test split)",
    documented_counts={split: {"n": 400, "glaucoma_pos": 40} for split in ("train", "val", "test")},
)

# Official release: training labels are the class folders; validation and test labels are workbooks.
TRAIN_FOLDERS = ("Training400", "REFUGE-Training400")
TRAIN_CLASSES = {"Glaucoma": 1, "Non-Glaucoma": 0}
GT_SPLITS = {
    "val": {"folders": ("REFUGE-Validation400", "Validation400"), "workbook": "Fovea_locations.xlsx",
            "gt_folder": "REFUGE-Validation400-GT", "label": ("Glaucoma Label",)},
    "test": {"folders": ("Test400", "REFUGE-Test400"), "workbook": "Glaucoma_label_and_Fovea_location.xlsx",
             "gt_folder": "REFUGE-Test-GT", "label": ("Label(Glaucoma=1)",)},
}
WORKBOOK_COLUMNS = {"image": ("ImgName",)}
# Kaggle bundle: REFUGE/{train,val,test}/{Images/, index.json}.
KAGGLE_SPLITS = {"train": "train", "val": "val", "test": "test"}
KAGGLE_FIELDS = {"image": "imgname", "label": "label"}


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    official = find_dirs(folder, TRAIN_FOLDERS)
    kaggle = _kaggle_indexes(folder)
    if not official and not kaggle:
        raise DataError("no REFUGE layout found; expected 'Training400/Glaucoma/', 'REFUGE-Validation400/' and "
                        "'Test400/' (official release) or 'REFUGE/{train,val,test}/index.json' (Kaggle bundle) "
                        f"somewhere under {folder}", file=str(folder))
    load = SPEC.new_load(folder)
    if official:
        if kaggle:
            load.warnings.append(f"both the official REFUGE release and the Kaggle bundle are under {folder}; "
                                 "reading the official release only")
        load.metadata["layout"] = "official"
        _read_official(folder, official[0], load)
    else:
        load.metadata["layout"] = "kaggle"
        _read_kaggle(folder, kaggle, load)
    return load


# ---- official release ----

def _read_official(folder: Path, train_dir: Path, load: DatasetLoad) -> None:
    label_files = {"train": relative_to(folder, train_dir) + "/<class folder>"}
    root = folder.resolve()
    for class_name, label in TRAIN_CLASSES.items():
        found = find_dirs(train_dir, [class_name])
        if not found:
            raise DataError(f"class folder {class_name!r} not found in {train_dir}", file=str(train_dir))
        for path in file_index(found[0]).values():
            image_id = f"train/{path.stem}"
            image = usable_file(folder, path, found[0], None, image_id)
            add_image(load, root, image, image_id, dict(split="train", glaucoma=label,
                                                        extra={"class_folder": class_name}))
    for split, spec in GT_SPLITS.items():
        image_dirs = find_dirs(folder, spec["folders"])
        if not image_dirs:
            raise DataError(f"{split} image folder {spec['folders'][0]!r} not found anywhere under {folder}",
                            file=str(folder))
        workbook = find_files(folder, [spec["workbook"]])
        if not workbook:
            _missing_labels(load, folder, split, file_index(image_dirs[0], recursive=True),
                            f"{spec['gt_folder']}/{spec['workbook']}")
            continue
        label_files[split] = relative_to(folder, workbook[0])
        images = ImageMatcher(folder, workbook[0], image_dirs[0], recursive=True)
        _read_workbook(load, split, spec["label"], images)
    SPEC.finish_load(load, label_files)


def _read_workbook(load: DatasetLoad, split: str, label_names: tuple[str, ...], images: ImageMatcher) -> None:
    """The rows of a ground-truth workbook (``images.label_file``) matched to the split's image files."""
    workbook = images.label_file
    headers, rows = read_xlsx_rows(workbook)
    columns = resolve_columns(headers, {**WORKBOOK_COLUMNS, "label": label_names}, workbook)

    def listed(row: dict) -> Listed:
        line = row["__row__"]
        name = with_extension(clean_id(row[columns["image"]], workbook, line, columns["image"]), ".jpg")
        label = parse_grade(row[columns["label"]], (0, 1), workbook, line, columns["label"])
        extra = {k: v for k, v in row.items() if k not in ("__row__", columns["label"]) and v is not None}
        return Listed(name, f"{split}/{Path(name).stem}", line, dict(split=split, glaucoma=label, extra=extra))

    read_rows(load, images, rows, listed)


def _missing_labels(load: DatasetLoad, folder: Path, split: str, images: dict[str, Path], expected: str) -> None:
    for path in images.values():
        load.skipped.append(Skipped(str(path), None, f"{split}/{path.stem}",
                                    f"no glaucoma label: {expected} not found under {folder}"))
    load.warnings.append(f"REFUGE {split}: {len(images)} images have no label because {expected} is missing; "
                         f"place it anywhere under {folder} to evaluate this split")


# ---- Kaggle bundle ----

def _kaggle_indexes(folder: Path) -> dict[str, Path]:
    """split -> index.json of the Kaggle bundle (its parent folder is named after the split)."""
    found: dict[str, Path] = {}
    for path in find_files(folder, ["index.json"]):
        split = KAGGLE_SPLITS.get(path.parent.name.lower())
        if split is not None and split not in found:
            found[split] = path
    return found


def _read_kaggle(folder: Path, indexes: dict[str, Path], load: DatasetLoad) -> None:
    label_files = {}
    for split in ("train", "val", "test"):
        if split not in indexes:
            raise DataError(f"Kaggle REFUGE bundle has no {split}/index.json under {folder}", file=str(folder))
        index = indexes[split]
        image_dirs = [p for p in index.parent.iterdir() if p.is_dir() and p.name.lower() == "images"]
        if not image_dirs:
            raise DataError(f"no Images/ folder next to {index.name}", file=str(index))
        entries = _index_entries(index)
        if split == "test" and not _has_labels(entries):
            label_files[split] = _kaggle_test_labels(load, folder, index, image_dirs[0])
            continue
        label_files[split] = relative_to(folder, index)
        _read_index(load, split, entries, ImageMatcher(folder, index, image_dirs[0]))
    SPEC.finish_load(load, label_files)


def _kaggle_test_labels(load: DatasetLoad, folder: Path, index: Path, image_dir: Path) -> str | None:
    """The bundle's test index has no labels; the official test ground truth has them, so read it when the
    user has placed it in the dataset folder, and otherwise skip the test images and say why."""
    spec = GT_SPLITS["test"]
    workbook = find_files(folder, [spec["workbook"]])
    if workbook:
        load.warnings.append(f"REFUGE test labels: {index} has none; reading the official {workbook[0].name}")
        _read_workbook(load, "test", spec["label"], ImageMatcher(folder, workbook[0], image_dir))
        return relative_to(folder, workbook[0])
    images = file_index(image_dir)
    for path in images.values():
        load.skipped.append(Skipped(str(index), None, f"test/{path.stem}",
                                    f"no glaucoma label: {index.name} of the Kaggle bundle has no Label field"))
    load.warnings.append(
        f"REFUGE test: {len(images)} images skipped because {index} has no labels. The official test labels "
        f"exist ({spec['gt_folder']}/{spec['workbook']}, from the REFUGE challenge site); place that file "
        f"anywhere under {folder} to evaluate the official test set")
    return None


def _index_entries(index: Path) -> list[tuple[int | None, dict]]:
    """Records of an index.json as (position, {lower-case field: value}); accepts a list of records, a
    mapping of records, or a column mapping ({"ImgName": {...}, "Label": {...}})."""
    try:
        data = load_json(index.read_text(encoding="utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise DataError(f"cannot read as JSON: {exc}", file=str(index)) from exc
    if isinstance(data, dict) and any(clean_header(k).lower() == KAGGLE_FIELDS["image"] for k in data):
        records = _column_records({clean_header(k).lower(): v for k, v in data.items()})
    elif isinstance(data, dict):
        records = list(data.values())
    elif isinstance(data, list):
        records = data
    else:
        raise DataError("expected a list or mapping of records with ImgName and Label", file=str(index))
    entries = []
    for position, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise DataError(f"record {position} is not an object with ImgName", file=str(index))
        entries.append((position, {clean_header(k).lower(): v for k, v in record.items()}))
    return entries


def _column_records(columns: dict) -> list[dict]:
    """Rows of a column mapping such as pandas writes ({"ImgName": {"0": ...}, "Label": {"0": ...}})."""
    names = columns[KAGGLE_FIELDS["image"]]
    keys = list(names) if isinstance(names, dict) else list(range(len(names)))

    def cell(values, key):
        if isinstance(values, dict):
            return values.get(key)
        return values[key] if isinstance(values, list) and key < len(values) else None

    return [{field: cell(values, key) for field, values in columns.items()} for key in keys]


def _has_labels(entries: list[tuple[int | None, dict]]) -> bool:
    return any(clean_cell(entry.get(KAGGLE_FIELDS["label"])) is not None for _, entry in entries)


def _read_index(load: DatasetLoad, split: str, entries: list[tuple[int | None, dict]], images: ImageMatcher) -> None:
    """The records of a Kaggle index.json (``images.label_file``) matched to the split's image files."""
    index = images.label_file

    def listed(item: tuple[int | None, dict]) -> Listed:
        position, entry = item
        source_name = clean_cell(entry.get(KAGGLE_FIELDS["image"]))
        if source_name is None:
            raise DataError(f"record {position} has no ImgName", file=str(index))
        name = with_extension(source_name, ".jpg")
        image_id = f"{split}/{Path(name).stem}"
        raw_label = clean_cell(entry.get(KAGGLE_FIELDS["label"]))
        if raw_label is None:
            return Listed(name, image_id, position, excluded="no glaucoma label (Label missing)")
        label = parse_grade(raw_label, (0, 1), index, position, "Label")
        extra = {k: v for k, v in entry.items() if k not in KAGGLE_FIELDS.values() and v is not None}
        return Listed(name, image_id, position, dict(split=split, glaucoma=label, extra=extra))

    read_rows(load, images, entries, listed)

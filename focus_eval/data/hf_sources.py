"""Datasets in Hugging Face's formats as manifest rows: a dataset saved with ``datasets``' ``save_to_disk``
(``format: hf_disk``), parquet files with an image column (``format: parquet``) and an image folder in
``imagefolder``'s layout (``format: imagefolder``). A card of such a dataset names it under ``manifest`` and maps
its columns as for a CSV manifest, so its records are made by the manifest reader, row for row as from a CSV.

Images stored inside the dataset (bytes in an arrow or parquet column) are written once, byte for byte, to
``<dataset>.images/`` beside it (named by their own file name or their row, checked against their sha256), so
that every later stage (content digests, the embedding cache, prepared copies, ``open_image``) sees plain files.
An image folder's files are used where they are: the label is the name of the folder holding the image, the
split the top folder's name (``train``, ``validation``/``val``, ``test``) when there is one, and the columns of a
``metadata.csv`` or ``metadata.jsonl`` (its ``file_name`` column) are joined in."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable

from focus_eval.data.tables import Row, clean_cell, clean_header, read_csv_rows
from focus_eval.errors import DataError
from focus_eval.files import atomic_write_bytes

FORMATS = ("manifest", "hf_disk", "imagefolder", "parquet")
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".tif", ".tiff", ".bmp", ".webp"}
SPLIT_FOLDERS = {"train": "train", "validation": "val", "valid": "val", "val": "val", "test": "test"}


def source_rows(path: Path, fmt: str, image_column: str) -> tuple[list[str], list[Row]]:
    """(headers, rows) of a dataset in one of the formats above; the image cell is a path relative to the
    dataset's parent folder."""
    if fmt == "imagefolder":
        return imagefolder_rows(path)
    if not path.exists():
        raise DataError(f"{fmt} dataset not found (the card's 'manifest' names it, relative to the card)",
                        file=str(path))
    records, features = (_disk_records(path) if fmt == "hf_disk" else _parquet_records(path))
    return _rows(records, features, path, image_column)


def _disk_records(path: Path) -> tuple[Iterable[dict], dict]:
    import datasets

    try:
        saved = datasets.load_from_disk(str(path))
    except (FileNotFoundError, ValueError) as exc:
        raise DataError(f"not a dataset saved with save_to_disk: {exc}", file=str(path)) from None
    parts = saved.items() if isinstance(saved, datasets.DatasetDict) else [(None, saved)]
    records, features = [], {}
    for split, part in parts:
        features.update(part.features)
        images = [k for k, f in part.features.items() if isinstance(f, datasets.Image)]
        for name in images:
            part = part.cast_column(name, datasets.Image(decode=False))
        for row in part:
            if split is not None and "split" not in row:
                row["split"] = split
            records.append(row)
    return records, features


def _parquet_records(path: Path) -> tuple[Iterable[dict], dict]:
    import pyarrow.parquet as pq

    files = sorted(path.rglob("*.parquet")) if path.is_dir() else [path]
    if not files:
        raise DataError("no .parquet files in the folder", file=str(path))
    records = []
    for file in files:
        try:
            records += pq.read_table(file).to_pylist()
        except Exception as exc:  # pyarrow raises its own error types for a damaged file
            raise DataError(f"cannot read parquet file: {exc}", file=str(file)) from None
    return records, {}


def _label_text(value: Any, feature: Any) -> Any:
    names = getattr(feature, "names", None)
    if names and isinstance(value, int) and 0 <= value < len(names):
        return names[value]
    return value


def _rows(records: Iterable[dict], features: dict, path: Path, image_column: str) -> tuple[list[str], list[Row]]:
    out_dir = path.parent / f"{path.name}.images"
    headers: dict[str, None] = {}
    rows: list[Row] = []
    for index, record in enumerate(records, start=1):
        if image_column not in record:
            raise DataError(f"no image column {image_column!r} (columns: {', '.join(record)})", file=str(path))
        row: Row = {"__row__": index}  # type: ignore[dict-item]
        for key, value in record.items():
            headers[clean_header(key)] = None
            if key == image_column:
                row[clean_header(key)] = _stored_image(value, out_dir, index, path).relative_to(path.parent).as_posix()
            else:
                row[clean_header(key)] = clean_cell(_label_text(value, features.get(key)))
        rows.append(row)
    return list(headers), rows


def _stored_image(value: Any, out_dir: Path, index: int, source: Path) -> Path:
    """The image of one row as a file: its bytes written once (a path to an existing file is used as it is)."""
    data, name = (value.get("bytes"), value.get("path")) if isinstance(value, dict) else (value, None)
    if isinstance(data, str):  # a path, relative to the dataset's folder: the file is used where it is
        return _existing(source.parent / data, source, index)
    if data is None and name and Path(name).is_file():
        data = Path(name).read_bytes()
    if not isinstance(data, (bytes, bytearray)):
        raise DataError("the image cell holds no image bytes", file=str(source), row=index)
    suffix = Path(name).suffix.lower() if name and Path(name).suffix.lower() in IMAGE_SUFFIXES else ".png"
    stem = Path(name).stem if name else f"row{index:06d}"
    target = out_dir / f"{stem}{suffix}"
    if not (target.is_file() and _sha(target.read_bytes()) == _sha(data)):
        if target.is_file():  # another image of the same name: keep both, told apart by row
            target = out_dir / f"{stem}-row{index:06d}{suffix}"
        if not (target.is_file() and _sha(target.read_bytes()) == _sha(data)):
            atomic_write_bytes(target, bytes(data))
    return target


def _existing(path: Path, source: Path, index: int) -> Path:
    if not path.is_file():
        raise DataError(f"image file not found: {path}", file=str(source), row=index)
    return path


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def imagefolder_rows(path: Path) -> tuple[list[str], list[Row]]:
    """Rows of an image folder: ``image`` (relative to its parent), ``label`` and ``split`` from the folders,
    and the metadata file's columns."""
    if not path.is_dir():
        raise DataError("image folder not found (the card's 'manifest' names it, relative to the card)",
                        file=str(path))
    metadata = _metadata(path)
    headers: dict[str, None] = {"image": None, "label": None}
    rows: list[Row] = []
    files = sorted(p for p in path.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
    for index, file in enumerate(files, start=1):
        parts = file.relative_to(path).parts
        row: Row = {"__row__": index, "image": file.relative_to(path.parent).as_posix()}  # type: ignore[dict-item]
        if len(parts) > 1 and parts[-2].lower() not in SPLIT_FOLDERS:
            row["label"] = parts[-2]
        if len(parts) > 1 and parts[0].lower() in SPLIT_FOLDERS:
            row["split"] = SPLIT_FOLDERS[parts[0].lower()]
            headers["split"] = None
        for key, value in metadata.get(file.relative_to(path).as_posix(), {}).items():
            headers[key] = None
            row[key] = value
        rows.append(row)
    return list(headers), rows


def _metadata(path: Path) -> dict[str, dict[str, str | None]]:
    """``file_name`` -> the other columns of ``metadata.csv`` or ``metadata.jsonl`` at the folder's top."""
    found: dict[str, dict[str, str | None]] = {}
    if (path / "metadata.csv").is_file():
        rows = read_csv_rows(path / "metadata.csv")[1]
    elif (path / "metadata.jsonl").is_file():
        lines = (path / "metadata.jsonl").read_text(encoding="utf-8").splitlines()
        rows = [{clean_header(k): clean_cell(v) for k, v in json.loads(line).items()} for line in lines if line.strip()]
    else:
        return found
    for row in rows:
        name = row.get("file_name")
        if name:
            found[name] = {k: v for k, v in row.items() if k not in ("file_name", "__row__")}
    return found

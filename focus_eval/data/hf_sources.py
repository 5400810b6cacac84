"""Datasets in Hugging Face's formats as manifest rows, read as Hugging Face reads them: a dataset saved with
``datasets``' ``save_to_disk`` (``format: hf_disk``, read with ``load_from_disk``), and parquet files or an image
folder (``format: parquet``, ``format: imagefolder``), read with ``datasets.load_dataset`` (streamed, so nothing is
cached): its splits (split names in file or folder names, the card's ``data_files``, a README's configs, the
parts of a ``DatasetDict``), an image folder's ``metadata.csv``/``metadata.jsonl`` files (one per split or one at
the top, ``file_name`` relative to the metadata file) and its labels from class folders (when it has no metadata),
and the names of ``ClassLabel`` columns. A card of such a dataset names it under ``manifest`` and maps its columns
as for a CSV manifest, so its records are made by the manifest reader, row for row as from a CSV.

A dataset's split becomes the ``split`` column (``validation`` is focus-eval's ``val``). A dataset with no split
besides ``train`` (one file, a ``Dataset`` rather than a ``DatasetDict``) has none: focus-eval then splits it by
patient, and its load says so (``NO_SPLITS``).

Images stored inside the dataset (bytes in an arrow or parquet column) are written once, byte for byte, to
``<dataset>.images/`` beside it (named by their own file name or their row, checked against their sha256), so
that every later stage (content digests, the embedding cache, prepared copies, ``open_image``) sees plain files.
Images given as paths are used where they are, and must lie inside the card's folder: a path outside it is an
error naming the card and the row. Reading these formats needs the ``hf`` extra (``datasets`` and ``pyarrow``)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any, Iterable

from focus_eval.data.cards import DatasetCard, require_hf
from focus_eval.data.files import safe_path
from focus_eval.data.tables import Row, clean_cell, clean_header
from focus_eval.errors import DataError
from focus_eval.files import atomic_write_bytes

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".tif", ".tiff", ".bmp", ".webp"}
NO_SPLITS = ("as datasets reads it, the dataset has no split besides 'train' (one file, or a Dataset rather than "
             "a DatasetDict): focus-eval splits it by patient, 60/20/20; name its splits (file or folder names, "
             "the card's data_files, a DatasetDict) to use them")
# datasets' and pyarrow's errors for a folder or file they cannot read as a dataset (pyarrow's ArrowInvalid is a
# ValueError, datasets' DatasetNotFoundError a FileNotFoundError): they become one-line DataErrors
_READ_ERRORS = (ValueError, OSError)


def source_rows(card: DatasetCard) -> tuple[list[str], list[Row]]:
    """(headers, rows) of the dataset a card names; the image cell is a path relative to the card's folder."""
    parts, features = _parts(card)
    return _rows(card, parts, features)


def source_headers(card: DatasetCard) -> list[str]:
    """The column names ``source_rows`` gives, from the dataset's features (no image is written)."""
    parts, features = _parts(card)
    if not features:  # a dataset that declares none: the first row's
        features = next(iter(_read(card, next(iter(parts.values())))), {})
    names = [clean_header(k) for k in features]
    return names + (["split"] if None not in parts and "split" not in names else [])


def _parts(card: DatasetCard) -> tuple[dict[str | None, Any], dict]:
    """Split name -> rows (an iterable of dicts; None: the dataset has no splits), and the dataset's features."""
    require_hf(f"{card.path}: format {card.format}")
    path = card.manifest
    if not path.exists():
        raise DataError(f"{card.format} dataset not found (the card's 'manifest' names it, relative to the card)",
                        file=str(path))
    try:
        parts = _disk(path) if card.format == "hf_disk" else _load(card)
    except _READ_ERRORS as exc:
        raise DataError(f"not readable as a {card.format} dataset by Hugging Face datasets: {exc}",
                        file=str(path)) from None
    if not parts:
        raise DataError(f"the {card.format} dataset holds no split", file=str(path))
    features: dict = {}
    for part in parts.values():
        features.update(part.features or {})
    if not any(name != "train" for name in parts):  # no split besides train: none (NO_SPLITS)
        parts = {None: parts["train"]}
    return {name: _undecoded(part) for name, part in parts.items()}, features


def _disk(path: Path) -> dict[str, Any]:
    import datasets

    saved = datasets.load_from_disk(str(path))
    return dict(saved) if isinstance(saved, datasets.DatasetDict) else {"train": saved}


def _load(card: DatasetCard) -> dict[str, Any]:
    """The splits ``datasets.load_dataset`` reads (streamed: no cache is written), as a user would call it: the
    folder itself (file and folder names, a README's configs) or one parquet file, with the card's data_files."""
    import datasets

    path = card.manifest
    spec = card.data_files  # datasets takes lists, the card holds tuples
    data_files = ({k: list(v) for k, v in spec.items()} if isinstance(spec, dict)
                  else list(spec) if isinstance(spec, tuple) else spec)
    if data_files is not None and not path.is_dir():
        raise DataError("data_files picks files inside a folder: the card's 'manifest' must name that folder",
                        file=str(card.path))
    if path.is_dir():
        loaded = datasets.load_dataset(str(path), data_files=data_files, streaming=True)
    elif card.format == "parquet":
        loaded = datasets.load_dataset("parquet", data_files=str(path), streaming=True)
    else:
        raise DataError("an image folder is a folder (the card's 'manifest' names it)", file=str(path))
    parts = dict(loaded)
    builder = next(iter(parts.values())).info.builder_name if parts else None
    if builder != card.format:
        raise DataError(f"datasets.load_dataset reads this as a {builder} dataset, the card says format: "
                        f"{card.format}", file=str(path))
    return parts


def _read(card: DatasetCard, records: Iterable[dict]) -> Iterable[dict]:
    """The rows of one split; a file that cannot be read while streaming is an error naming the dataset."""
    rows = iter(records)
    while True:
        try:
            row = next(rows)
        except StopIteration:
            return
        except _READ_ERRORS as exc:
            raise DataError(f"cannot read the {card.format} dataset: {exc}", file=str(card.manifest)) from None
        yield row


def _undecoded(part: Any) -> Any:
    """Image columns as ``{bytes, path}`` (never decoded to pictures here)."""
    import datasets

    for name, feature in (getattr(part, "features", None) or {}).items():
        if isinstance(feature, datasets.Image):
            part = part.cast_column(name, datasets.Image(decode=False))
    return part


def _label_text(value: Any, feature: Any) -> Any:
    names = getattr(feature, "names", None)
    if names and isinstance(value, int) and 0 <= value < len(names):
        return names[value]
    return value


def _rows(card: DatasetCard, parts: dict[str | None, Iterable[dict]], features: dict) -> tuple[list[str], list[Row]]:
    image_column = card.columns["image"]
    headers: dict[str, None] = {}
    rows: list[Row] = []
    for split, records in parts.items():
        for record in _read(card, records):
            index = len(rows) + 1
            if image_column not in record:
                raise DataError(f"no image column {image_column!r} (columns: {', '.join(record)})",
                                file=str(card.manifest))
            if split is not None and "split" not in record:
                record = {**record, "split": split}
            row: Row = {"__row__": index}  # type: ignore[dict-item]
            for key, value in record.items():
                headers[clean_header(key)] = None
                row[clean_header(key)] = (_image_cell(card, value, index) if key == image_column
                                          else clean_cell(_label_text(value, features.get(key))))
            rows.append(row)
    return list(headers), rows


def _image_cell(card: DatasetCard, value: Any, index: int) -> str:
    """The image of one row as a path relative to the card's folder: a path is used where it is (inside the
    folder only), bytes are written once to ``<dataset>.images/``."""
    data, name = (value.get("bytes"), value.get("path")) if isinstance(value, dict) else (value, None)
    if isinstance(data, str) or (data is None and name):
        where = data if isinstance(data, str) else name
        path = safe_path(card.folder, where, card.path, index)
        if not path.is_file():
            raise DataError(f"image file not found: {path}", file=str(card.manifest), row=index)
        return path.relative_to(Path(card.folder).resolve()).as_posix()
    if not isinstance(data, (bytes, bytearray)):
        raise DataError("the image cell holds no image bytes", file=str(card.manifest), row=index)
    target = _stored(bytes(data), name, card.manifest.parent / f"{card.manifest.name}.images", index)
    return target.relative_to(card.manifest.parent).as_posix()


def _stored(data: bytes, name: str | None, out_dir: Path, index: int) -> Path:
    suffix = Path(name).suffix.lower() if name and Path(name).suffix.lower() in IMAGE_SUFFIXES else ".png"
    stem = re.sub(r"[^\w.-]", "_", Path(name).stem)[:120].strip(".") if name else ""
    stem = stem or f"row{index:06d}"
    target = out_dir / f"{stem}{suffix}"
    if not (target.is_file() and _sha(target.read_bytes()) == _sha(data)):
        if target.is_file():  # another image of the same name: keep both, told apart by row
            target = out_dir / f"{stem}-row{index:06d}{suffix}"
        if not (target.is_file() and _sha(target.read_bytes()) == _sha(data)):
            atomic_write_bytes(target, data)
    return target


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()

"""What a unit's numbers were computed from: the fingerprint recorded with every unit and compared on resume.

The fingerprint holds the preset hash, the task hash (prompt text included), the options that change numbers,
the adapter's training record and weights digest, the split assignment digest and a data fingerprint: the
digests of the dataset folder's label files plus the list of (image id, file, content digest) it read (the
digests remembered per file identity, ``data/content.py``), the decoding rule's version and, with
``--verify-images``, the sha256 of every image's bytes read now."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from focus_eval.data import images
from focus_eval.data.content import file_digest, save_digests
from focus_eval.digests import file_sha256, json_digest
from focus_eval.options import EXPLAIN  # noqa: F401  (fingerprint key -> what a user changed)

# .parquet and .arrow: the tables of a Hugging Face dataset a card names (data/hf_sources.py), labels included
LABEL_SUFFIXES = frozenset({".csv", ".tsv", ".txt", ".xlsx", ".xls", ".json", ".jsonl", ".yaml", ".yml", ".parquet",
                            ".arrow"})

# compared only when the earlier run recorded them
OPTIONAL = frozenset({"images_sha256"})
# what a unit's sample file holds beyond the numbers (validation rows): no change of inputs; resume judges it
# (``resume.lacks_rows``: a file without rows this run wants is computed again, one with more is kept)
ROWS = frozenset({"val_rows"})


def label_files(root: Path) -> list[Path]:
    """Files under a dataset folder that may hold labels or splits (everything but images)."""
    return sorted(p for p in Path(root).rglob("*") if p.is_file() and p.suffix.lower() in LABEL_SUFFIXES)


def data_fingerprint(load) -> str:
    """Digest of a loaded dataset's label files and of the (image id, file, content digest) its records read."""
    root = Path(load.root)
    labels = [(str(p.relative_to(root)), file_sha256(p)) for p in label_files(root)]
    files = [(r.image_id, r.relpath, file_digest(r.path)) for r in sorted(load.records, key=lambda r: r.image_id)]
    save_digests()
    return json_digest({"labels": labels, "images": files})


def decode_version() -> int:
    """The decoding rule's version (``DECODE_VERSION``): part of every unit's fingerprint."""
    return images.DECODE_VERSION


def images_sha256(load) -> str:
    """Digest of the bytes of every image the records point to (``--verify-images``: slow on large sets)."""
    return json_digest([(r.image_id, file_sha256(r.path)) for r in sorted(load.records, key=lambda r: r.image_id)])


def split_digest(load) -> str:
    """Digest of the (image id, patient id, split) assignment of every record."""
    return json_digest(sorted((r.image_id, r.patient_id, r.split or "") for r in load.records))


def changes(stored: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    """What differs between a recorded fingerprint and the current one, each in words."""
    out = []
    for key, value in expected.items():
        if key in ROWS or (key in OPTIONAL and key not in stored):
            continue
        old = stored.get(key)
        if old != value:
            what = EXPLAIN.get(key, key)
            shown = "" if key.endswith(("hash", "digest", "fingerprint", "sha256")) else f": {old!r} -> {value!r}"
            out.append(f"{key} ({what}{shown})")
    return out

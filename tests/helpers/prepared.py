"""Prepared image copies in tests: raw files made unreadable while their copies stay current."""

from __future__ import annotations

import json
from pathlib import Path


def zero_raw_images(root: Path, dataset: str) -> None:
    """Zero every raw image of ``dataset`` (decoding one then fails) and record the zeroed bytes' digest in the
    prepared copies' stamps, so that the copies still count as made from their sources: only they are readable."""
    from focus_eval.data.content import bytes_digest

    for image in (root / dataset / "images").glob("*.jpg"):
        image.write_bytes(b"\0" * image.stat().st_size)
    for sources in (root / ".prepared").glob(f"*/{dataset}/*/sources.json"):
        stamps = json.loads(sources.read_text())
        for relpath, stamp in stamps.items():
            stamp["digest"] = bytes_digest((root / dataset / relpath).read_bytes())
        sources.write_text(json.dumps(stamps))

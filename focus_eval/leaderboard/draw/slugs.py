"""File names for per-model and per-task pages: readable, safe on every filesystem, and never colliding."""

from __future__ import annotations

import hashlib
import re
from typing import Iterable

_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")
_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9._-]+")


def assign_slugs(names: Iterable[str]) -> dict[str, str]:
    """Map each name to a page stem; names that are not plain file names, or that collide, get a hash suffix."""
    slugs: dict[str, str] = {}
    taken: set[str] = set()
    for name in sorted(set(names)):
        slug = name if _SAFE.match(name) and not name.endswith(".") else _cleaned(name)
        if slug.lower() in taken:  # case-insensitive filesystems would merge these pages
            slug = _cleaned(name)
        taken.add(slug.lower())
        slugs[name] = slug
    return slugs


def _cleaned(name: str) -> str:
    digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:8]
    stem = _UNSAFE_RUN.sub("-", name).strip("-.")[:60] or "page"
    return f"{stem}-{digest}"

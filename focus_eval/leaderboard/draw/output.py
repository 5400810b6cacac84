"""The site folder (``-o``): made ready for a build (an earlier build there is cleared), and written only inside,
never through a symbolic link, each file replaced atomically."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from focus_eval.errors import FocusError
from focus_eval.files import atomic_write_bytes, atomic_write_text
from focus_eval.results.schema import clean_json

# A file the builder leaves in its output folder, so that a rebuild may clear what an earlier build wrote.
MARKER = ".focus-leaderboard"
OWNED_FOLDERS = ("tasks", "models", "data", "static", "samples", "thumbs")


def prepare_output(out_dir: Path) -> None:
    """Create ``out_dir``, or clear an earlier build there; refuse a non-empty folder the builder did not write,
    and any symbolic link inside the folder (a rebuild would write or delete through it, outside ``out_dir``)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise FocusError(f"{out_dir}: exists and is not a folder")
    if out_dir.is_dir() and any(out_dir.iterdir()):
        refuse_links(out_dir)
        if not (out_dir / MARKER).is_file():
            raise FocusError(f"{out_dir}: folder is not empty and was not written by 'focus-eval leaderboard'; "
                             "choose a new or empty folder")
        for name in OWNED_FOLDERS:
            shutil.rmtree(out_dir / name, ignore_errors=True)
        for page in out_dir.glob("*.html"):
            page.unlink()
    out_dir.mkdir(parents=True, exist_ok=True)
    write_text(out_dir, MARKER, "written by focus-eval leaderboard; a rebuild replaces this folder's pages\n")


def refuse_links(out_dir: Path) -> None:
    """A FocusError naming the first symbolic link found anywhere inside ``out_dir``."""
    for folder, folders, files in os.walk(out_dir):  # links to folders are listed, not entered
        for name in sorted([*folders, *files]):
            path = Path(folder) / name
            if path.is_symlink():
                raise FocusError(f"{path}: a symbolic link inside the site folder {out_dir}; the leaderboard "
                                 "writes only real files under -o and never through a link (remove the link, or "
                                 "choose a new folder)")


def site_path(out_dir: Path, name: str) -> Path:
    """``out_dir / name``, checked to lie inside ``out_dir`` with no link on the way (``name`` may hold slugs
    made from results lines, so it is not trusted)."""
    path = out_dir / name
    # resolved before any folder is made: a link on the way (or a "..") would lead out of the site folder
    if out_dir.resolve() not in path.resolve().parents or path.is_symlink():
        raise FocusError(f"{path}: outside the site folder {out_dir}, or a link; the leaderboard writes only "
                         "under -o")
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def write_text(out_dir: Path, name: str, text: str) -> Path:
    """Write one site file atomically (a link at its place is replaced, never followed)."""
    return atomic_write_text(site_path(out_dir, name), text)


def write_pages(out_dir: Path, pages: dict[str, str]) -> None:
    for name, html in pages.items():
        write_text(out_dir, name, html)


def write_json(out_dir: Path, name: str, value: object) -> None:
    write_text(out_dir, name, json.dumps(clean_json(value), allow_nan=False, ensure_ascii=False) + "\n")


def copy_static(source: Path, out_dir: Path) -> None:
    """The site's static files (styles, scripts) under ``out_dir/static``."""
    for path in sorted(source.rglob("*")):
        if path.is_file():
            target = site_path(out_dir, (Path("static") / path.relative_to(source)).as_posix())
            atomic_write_bytes(target, path.read_bytes())

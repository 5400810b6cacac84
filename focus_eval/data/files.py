"""Finding a dataset's files: label files and folders searched by name at any depth, case-insensitive image
file indexes, and the check that keeps every image path inside its dataset folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from focus_eval.errors import DataError

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".tif", ".tiff", ".bmp"}


def is_image_name(name: str) -> bool:
    """True when ``name`` ends in an image extension (any case)."""
    return Path(name).suffix.lower() in IMAGE_SUFFIXES


def with_extension(name: str, default: str = ".jpg") -> str:
    """Append ``default`` to an image name that has no image extension (BRSET, IDRiD, some mBRSET copies)."""
    return name if is_image_name(name) else name + default


def find_files(folder: Path, names: Sequence[str]) -> list[Path]:
    """All files under ``folder`` (any depth) whose name matches one of ``names`` case-insensitively,
    sorted by depth then path so that the shallowest candidate comes first."""
    return _find_named(folder, names, folders=False)


def find_dirs(folder: Path, names: Sequence[str]) -> list[Path]:
    """All folders under ``folder`` whose name matches one of ``names`` case-insensitively, shallowest first."""
    return _find_named(folder, names, folders=True)


def _find_named(folder: Path, names: Sequence[str], folders: bool) -> list[Path]:
    wanted = {n.lower() for n in names}
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        found += [Path(dirpath) / name for name in (dirnames if folders else filenames) if name.lower() in wanted]
    found.sort(key=lambda p: (len(p.relative_to(folder).parts), str(p)))
    return found


def find_one(folder: Path, names: Sequence[str], what: str) -> Path:
    """The first file named one of ``names`` under ``folder``; a DataError naming the expected path if none."""
    return _find_some(folder, names, what)[0]


def find_label_file(folder: Path, names: Sequence[str], what: str, warnings: list[str]) -> Path:
    """The label file ``find_one`` picks; when a copy of it lies elsewhere under ``folder`` too, a warning in
    ``warnings`` names the one read and the ones left unread (copies can differ, and only one is read)."""
    found = _find_some(folder, names, what)
    if len(found) > 1:
        unread = ", ".join(str(p) for p in found[1:])
        warnings.append(f"{len(found)} copies of {names[0]} found; reading {found[0]}, not {unread}")
    return found[0]


def _find_some(folder: Path, names: Sequence[str], what: str) -> list[Path]:
    if not folder.is_dir():
        raise DataError(f"dataset folder not found; expected {what} under it", file=str(folder))
    found = find_files(folder, names)
    if not found:
        alternatives = " or ".join(names)
        raise DataError(f"no {what} found; expected {alternatives} somewhere under {folder}", file=str(folder))
    return found


def find_dir_near(anchor: Path, root: Path, names: Sequence[str]) -> Path | None:
    """The folder named one of ``names`` closest to ``anchor``: search below ``anchor``'s folder, then below
    each parent up to ``root``, and return the shallowest match at the first level that has one. Two
    equally close matches are a DataError, since picking one would be a guess."""
    start = anchor if anchor.is_dir() else anchor.parent
    root = Path(root)
    level = start
    while True:
        found = find_dirs(level, names)
        if found:
            depth = len(found[0].relative_to(level).parts)
            tied = [p for p in found if len(p.relative_to(level).parts) == depth]
            if len(tied) > 1:
                raise DataError(f"ambiguous image folders {[str(p) for p in tied]}; expected one of {list(names)}",
                                file=str(anchor))
            return found[0]
        if level == root or root not in level.parents:
            return None
        level = level.parent


def image_files(folder: Path, recursive: bool = False) -> tuple[dict[str, Path], list[Path]]:
    """(lower-cased file name -> path, the paths left out) for the image files in ``folder``. Recursive
    listings skip hidden folders, and when a name occurs more than once the shallowest copy wins; the
    others are the paths left out. Non-image files are ignored."""
    if not folder.is_dir():
        return {}, []
    if recursive:
        paths = []
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            paths += [Path(dirpath) / f for f in filenames]
    else:
        paths = list(folder.iterdir())
    paths = sorted((p for p in paths if is_image_name(p.name) and p.is_file()), key=lambda p: (len(p.parts), str(p)))
    index: dict[str, Path] = {}
    shadowed = []
    for path in paths:
        if path.name.lower() in index:
            shadowed.append(path)
        else:
            index[path.name.lower()] = path
    return index, shadowed


def file_index(folder: Path, recursive: bool = False) -> dict[str, Path]:
    """Lower-cased file name -> path for the image files in ``folder`` (see ``image_files``)."""
    return image_files(folder, recursive)[0]


def safe_path(root: Path, candidate: Path | str, file: Path | str, row: int | None) -> Path:
    """Resolve ``candidate`` (relative to ``root`` if not absolute) and refuse anything outside ``root``."""
    root_resolved = Path(root).resolve()
    p = Path(candidate)
    full = (p if p.is_absolute() else root_resolved / p).resolve()
    if full != root_resolved and root_resolved not in full.parents:
        raise DataError(f"image path {str(candidate)!r} escapes the dataset folder {root_resolved}",
                        file=str(file), row=row)
    return full


def relative_to(root: Path, path: Path) -> str:
    """``path`` relative to ``root`` in POSIX form, both resolved (the record's ``relpath``)."""
    return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()

"""Finding a dataset's files: label files and folders searched by name at any depth, case-insensitive image
file indexes, the check that keeps every image path inside its dataset folder, and the one admission policy
every listing and reader applies (regular files only; hidden and AppleDouble ``._*`` files skipped and counted;
file names that are not UTF-8 kept and counted; the tally reported once in the load's warnings)."""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import posixpath
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from focus_eval.errors import DataError

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".tif", ".tiff", ".bmp"}


@dataclass
class Admission:
    """What the listings of one dataset load left out or noticed: hidden and AppleDouble files (skipped),
    entries that are no regular file (refused: named pipes, sockets, devices, symlink loops, dangling links),
    and file names that are not valid UTF-8 (kept)."""

    hidden: list[Path] = field(default_factory=list)
    refused: dict[Path, str] = field(default_factory=dict)
    odd_names: list[Path] = field(default_factory=list)
    # what a reader's helpers noticed in the files they read: a warning template ({n}, {example}) -> examples
    noticed: dict[str, list[str]] = field(default_factory=dict)

    def warnings(self) -> list[str]:
        out = [template.format(n=len(examples), example=examples[0]) for template, examples in self.noticed.items()]
        if self.hidden:
            out.append(f"{len(self.hidden)} hidden or macOS AppleDouble ('._*') file(s) skipped "
                       f"(e.g. {printable(self.hidden[0])})")
        for path, why in sorted(self.refused.items()):
            out.append(f"{printable(path)}: {why}; not read (only regular files are)")
        if self.odd_names:
            out.append(f"{len(self.odd_names)} file name(s) are not valid UTF-8 (e.g. {printable(self.odd_names[0])}); "
                       "they are read, and shown with \\x escapes")
        return out


_ADMISSION: contextvars.ContextVar[Admission | None] = contextvars.ContextVar("focus_eval_admission", default=None)


@contextlib.contextmanager
def admission() -> Iterator[Admission]:
    """Collect what the listings under this block leave out (``registry.read_dataset`` opens one per load)."""
    tally = Admission()
    token = _ADMISSION.set(tally)
    try:
        yield tally
    finally:
        _ADMISSION.reset(token)


def notice(template: str, example: str) -> None:
    """Count ``example`` in the current load's tally under ``template``, a warning given once per load with
    ``{n}`` (how many) and ``{example}`` (the first) filled in; nothing outside a load."""
    tally = _ADMISSION.get()
    if tally is not None:
        tally.noticed.setdefault(template, []).append(example)


def printable(path: Path | str) -> str:
    """``path`` as text that can be printed and written as UTF-8 (undecodable bytes as ``\\xNN``)."""
    return os.fsencode(str(path)).decode("utf-8", "backslashreplace")


def is_hidden(name: str) -> bool:
    """Hidden files (``.name``), macOS AppleDouble resource forks (``._name``) included."""
    return name.startswith(".")


def file_problem(path: Path | str) -> str | None:
    """None when ``path`` is (or links to) a regular file; else why it is not one a reader may open (opening a
    named pipe would wait forever, a device would read without end)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop"
        if os.path.islink(path):
            return "a symbolic link to a missing file"
        return exc.strerror or str(exc)
    if stat.S_ISREG(mode):
        return None
    kinds = {stat.S_ISFIFO: "a named pipe (FIFO)", stat.S_ISSOCK: "a socket", stat.S_ISCHR: "a character device",
             stat.S_ISBLK: "a block device", stat.S_ISDIR: "a folder"}
    return next((text for test, text in kinds.items() if test(mode)), "not a regular file") + ", not a regular file"


def require_regular(path: Path | str, what: str = "file") -> Path:
    """``path`` when it is a regular file; else a DataError naming it (before anything opens it)."""
    problem = file_problem(path)
    if problem is not None:
        raise DataError(f"the {what} is {problem}; only regular files are read", file=printable(path))
    return Path(path)


def admitted(paths: Iterable[Path], regular: bool = True) -> list[Path]:
    """``paths`` less hidden and AppleDouble files and (``regular``) entries that are no regular file, each
    counted in the current load's ``Admission``; names that are not UTF-8 are kept and counted."""
    tally = _ADMISSION.get() or Admission()
    kept = []
    for path in paths:
        if is_hidden(path.name):
            tally.hidden.append(path)
            continue
        problem = file_problem(path) if regular else None
        if problem is not None:
            tally.refused[path] = problem
            continue
        if printable(path.name) != path.name:
            tally.odd_names.append(path)
        kept.append(path)
    return kept


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
        found += [Path(dirpath) / name for name in (dirnames if folders else filenames)
                  if name.lower() in wanted and not is_hidden(name)]
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
    require_regular(found[0], what)
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
        paths = [p for p in folder.iterdir() if not p.is_dir()]
    paths = sorted(admitted(p for p in paths if is_image_name(p.name)), key=lambda p: (len(p.parts), str(p)))
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


def normalised_name(name: str) -> str:
    """A path as a label file lists it, in its one normal form: ``.`` parts and repeated or trailing ``/``
    dropped, ``folder/..`` folded (``images/../images/0001.png`` and ``./images//0001.png`` are
    ``images/0001.png``), so that one file has one name, and one id, before anything is looked up. A leading
    ``..`` stays (``safe_path`` refuses it where it leaves the dataset folder)."""
    if not name:
        return name
    normal = posixpath.normpath(name)
    return "/" + normal.lstrip("/") if normal.startswith("//") else normal


def safe_path(root: Path, candidate: Path | str, file: Path | str, row: int | None) -> Path:
    """Resolve ``candidate`` (relative to ``root`` if not absolute) and refuse anything outside ``root``."""
    # os.path.realpath, not Path.resolve: a symlink loop is then a path (refused where it is read), not an error
    root_resolved = Path(os.path.realpath(root))
    p = Path(candidate)
    full = Path(os.path.realpath(p if p.is_absolute() else root_resolved / p))
    if full != root_resolved and root_resolved not in full.parents:
        raise DataError(f"image path {str(candidate)!r} escapes the dataset folder {root_resolved}",
                        file=str(file), row=row)
    return full


def relative_to(root: Path, path: Path) -> str:
    """``path`` relative to ``root`` in POSIX form, both resolved (the record's ``relpath``)."""
    return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()

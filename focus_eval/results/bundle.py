"""Submission bundles: the folder a group sends so that others can check its results (docs/SUBMITTING.md).

    <bundle>/bundle.json                                   who submitted, when, and the digest list
    <bundle>/results/<model>/results.jsonl                 as the run wrote them ...
    <bundle>/results/<model>/run-<stamp>.json              ... with every run manifest,
    <bundle>/results/<model>/samples/<task>.<method>.jsonl ... and the sample and meta file of every task line
    <bundle>/results/<model>/samples/<task>.<method>.meta.json
    <bundle>/results/<model>/limit-<N>/...                 a --limit run, the same files

``bundle.json`` lists every other file with its sha256 and size. ``check_bundle`` is the check on arrival: it
reads nothing it has not first found to be a small regular file of an allowed kind at a confined path, and
returns every problem at once (a tampered, partial or unsafe bundle is refused with what is wrong). Pure file
I/O: whether the numbers inside are right is ``focus_eval.verification``'s question."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any, Iterable

from focus_eval.errors import FocusError
from focus_eval.files import atomic_write_bytes, read_jsonl_rows
from focus_eval.results.layout import MANIFEST_GLOB, RESULTS_FILE, OutputLayout

BUNDLE_FILE = "bundle.json"
RESULTS_DIR = "results"
FORMAT = "focus-eval-submission"
FORMAT_VERSION = 1
# the kinds of file a bundle may hold: text formats that carry no code (no pickles, archives or scripts)
ALLOWED_SUFFIXES = (".jsonl", ".json", ".csv", ".md", ".txt")
# names of files and folders: letters, digits and _ . @ + = , - (no path separators, nothing hidden)
NAME = re.compile(r"^[A-Za-z0-9_@+=,-][A-Za-z0-9_.@+=,-]{0,199}$")
MAX_SUBMITTER = 200


@dataclass(frozen=True)
class BundleLimits:
    """What a bundle may hold: bytes per file, bytes in all, files, and folder depth below the bundle."""

    file_bytes: int = 128 * 1024 * 1024
    total_bytes: int = 2 * 1024 * 1024 * 1024
    files: int = 20_000
    depth: int = 6


LIMITS = BundleLimits()


class BundleRefused(FocusError):
    """A bundle that failed its check on arrival; ``problems`` lists every reason."""

    def __init__(self, folder: Path, problems: list[str]):
        self.folder, self.problems = Path(folder), list(problems)
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        super().__init__(f"{folder}: bundle refused ({len(problems)} problem(s)): {shown}")


@dataclass(frozen=True)
class BundleFile:
    path: str
    sha256: str
    bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "sha256": self.sha256, "bytes": self.bytes}


@dataclass
class Bundle:
    """A bundle that passed its check: its folder, submitter, the results files inside, and the listed files."""

    folder: Path
    submitter: str
    created: str | None
    files: list[BundleFile] = field(default_factory=list)

    @property
    def results_root(self) -> Path:
        return self.folder / RESULTS_DIR

    @property
    def digest(self) -> str:
        """sha256 of ``bundle.json``: sent to the receiver by another way (a mail, a form), it shows that the
        digest list, and so every file, arrived as it was bundled."""
        from focus_eval.digests import file_sha256

        return file_sha256(self.folder / BUNDLE_FILE)


def is_bundle(path: Path) -> bool:
    """Whether ``path`` is a folder holding a ``bundle.json`` (it is then checked as a bundle before use)."""
    return Path(path).is_dir() and os.path.lexists(Path(path) / BUNDLE_FILE)


# ----- writing


def check_submitter(name: Any) -> str:
    """A submitter's name: one line of printable text, 1 to 200 characters."""
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_SUBMITTER or not name.isprintable():
        raise ValueError(f"the submitter must be one line of printable text of 1 to {MAX_SUBMITTER} characters, "
                         f"got {name!r}")
    return name.strip()


def write_bundle(results_files: Iterable[Path], out: Path, submitter: str, limits: BundleLimits = LIMITS) -> Bundle:
    """Copy each results file's folder (results, run manifests, and the sample and meta file of every task line)
    into a new bundle at ``out`` and write its digest list. Refuses a line whose files are missing, a file above
    the limits, two folders of one name, and an ``out`` that is not empty."""
    try:
        submitter = check_submitter(submitter)
    except ValueError as exc:
        raise FocusError(f"--submitter: {exc}") from None
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FocusError(f"{out}: exists and is not an empty folder; give a new folder for the bundle")
    plan: dict[str, Path] = {}
    for results in results_files:
        folder = results.parent
        for source in _unit_files(results):
            target = f"{RESULTS_DIR}/{_folder_name(folder)}/{source.relative_to(folder).as_posix()}"
            if plan.setdefault(target, source) != source:
                raise FocusError(f"{folder}: two results folders would both be {target.rsplit('/', 1)[0]} in the "
                                 "bundle; bundle them separately")
    if not plan:
        raise FocusError("nothing to bundle: no results lines found")
    files, total = [], 0
    for target, source in sorted(plan.items()):
        data = _read_source(source, limits)
        total += len(data)
        if total > limits.total_bytes:
            raise FocusError(f"the bundle would exceed {limits.total_bytes} bytes in all; send the models in "
                             "several bundles")
        atomic_write_bytes(out / target, data)
        files.append(BundleFile(target, hashlib.sha256(data).hexdigest(), len(data)))
    created = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    from focus_eval.version import __version__

    record = {"format": FORMAT, "format_version": FORMAT_VERSION, "submitter": submitter, "created": created,
              "focus_eval_version": __version__, "files": [f.to_dict() for f in files]}
    atomic_write_bytes(out / BUNDLE_FILE, (json.dumps(record, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))
    return Bundle(out, submitter, created, files)


def _folder_name(folder: Path) -> str:
    """``<model>`` for a model folder, ``<model>/limit-N`` for a --limit run inside one."""
    return f"{folder.parent.name}/{folder.name}" if folder.name.startswith("limit-") else folder.name


def _unit_files(results: Path) -> list[Path]:
    """results.jsonl, the run manifests beside it, and the sample and meta file of each task line."""
    layout = OutputLayout(results.parent)
    files = [results, *layout.manifests()]
    for number, row, problem in read_jsonl_rows(results):
        if problem is not None:
            raise FocusError(f"{results}, line {number}: {problem}")
        if not isinstance(row, dict) or row.get("kind") == "group":
            continue
        task, method = row.get("task"), row.get("method")
        if not (plain_name(task) and plain_name(method)):
            raise FocusError(f"{results}, line {number}: task {task!r} and method {method!r} must be plain names")
        for path in (layout.samples(task, method), layout.meta(task, method)):
            if not path.is_file():
                raise FocusError(f"{results}, line {number}: {task}.{method} has no {path.name} in "
                                 f"{layout.samples_dir}; a bundle must let every line be recomputed "
                                 f"('focus-eval score' cannot help: the samples are the record)")
            files.append(path)
    return list(dict.fromkeys(files))


def _read_source(path: Path, limits: BundleLimits) -> bytes:
    size = path.stat().st_size
    if size > limits.file_bytes:
        raise FocusError(f"{path}: {size} bytes, above the bundle limit of {limits.file_bytes} bytes per file")
    return path.read_bytes()


def plain_name(value: Any) -> bool:
    """A task, method or model name usable as part of one file name (no separator, not empty, not hidden)."""
    return isinstance(value, str) and bool(value) and not value.startswith(".") and not any(
        c in value for c in "/\\\0")


# ----- the check on arrival


def check_bundle(folder: Path, limits: BundleLimits = LIMITS) -> Bundle:
    """The bundle at ``folder`` if every check passes, else ``BundleRefused`` with every problem: the digest list
    readable and well formed; every path confined (relative, no '..', plain names); no symlinks, hard links,
    devices, pipes or sockets; no file with an execute bit or of a kind outside ALLOWED_SUFFIXES, nor one that
    is not UTF-8 text; sizes within ``limits``; every file listed and every listed file present with its size and
    sha256; every task line with its sample and meta file; a run manifest beside every results file."""
    folder = Path(folder)
    problems: list[str] = []
    info = os.lstat(folder)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise BundleRefused(folder, ["the bundle must be a folder, not a symbolic link or a file"])
    found = _walk(folder, limits, problems)
    record = _read_record(folder, found, limits, problems)
    if record is None:
        raise BundleRefused(folder, problems)
    listed = _listed_files(record, problems)
    _compare(folder, found, listed, limits, problems)
    if not problems:
        _check_complete(folder, listed, problems)
    if problems:
        raise BundleRefused(folder, problems)
    return Bundle(folder, record["submitter"], record.get("created"), list(listed.values()))


def _walk(folder: Path, limits: BundleLimits, problems: list[str]) -> dict[str, int]:
    """Every regular file below ``folder`` (relative POSIX path -> size), each entry judged without following
    links; what may not be in a bundle is a problem."""
    found: dict[str, int] = {}
    total = 0
    stack = [(folder, PurePosixPath(), 0)]
    while stack:
        current, rel, depth = stack.pop()
        with os.scandir(current) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                path = rel / entry.name
                if not NAME.match(entry.name):
                    problems.append(f"{path}: name outside letters, digits and _ . @ + = , - (or hidden)")
                    continue
                mode = entry.stat(follow_symlinks=False)
                if stat.S_ISLNK(mode.st_mode):
                    problems.append(f"{path}: a symbolic link")
                elif stat.S_ISDIR(mode.st_mode):
                    if depth + 1 >= limits.depth:
                        problems.append(f"{path}: folders nested deeper than {limits.depth} levels")
                    else:
                        stack.append((Path(entry.path), path, depth + 1))
                elif not stat.S_ISREG(mode.st_mode):
                    problems.append(f"{path}: not a regular file (a device, pipe or socket)")
                else:
                    problems += _file_problems(str(path), mode, limits)
                    total += mode.st_size
                    found[str(path)] = mode.st_size
    if len(found) > limits.files:
        problems.append(f"{len(found)} files, above the limit of {limits.files}")
    if total > limits.total_bytes:
        problems.append(f"{total} bytes in all, above the limit of {limits.total_bytes}")
    return found


def _file_problems(path: str, info: os.stat_result, limits: BundleLimits) -> list[str]:
    problems = []
    if info.st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH | stat.S_ISUID | stat.S_ISGID):
        problems.append(f"{path}: executable (mode {stat.filemode(info.st_mode)}); a bundle holds data only")
    if info.st_nlink > 1:
        problems.append(f"{path}: a hard link ({info.st_nlink} names for one file)")
    if not path.endswith(ALLOWED_SUFFIXES):
        problems.append(f"{path}: not an allowed kind of file (allowed: {', '.join(ALLOWED_SUFFIXES)})")
    if info.st_size > limits.file_bytes:
        problems.append(f"{path}: {info.st_size} bytes, above the limit of {limits.file_bytes} per file")
    return problems


def _read_record(folder: Path, found: dict[str, int], limits: BundleLimits, problems: list[str]) -> dict | None:
    if BUNDLE_FILE not in found:
        problems.append(f"no {BUNDLE_FILE} (the digest list) as a regular file")
        return None
    try:
        record = json.loads(read_confined(folder / BUNDLE_FILE, limits.file_bytes).decode("utf-8"))
    except (OSError, ValueError) as exc:
        problems.append(f"{BUNDLE_FILE}: not readable JSON ({exc})")
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        problems.append(f"{BUNDLE_FILE}: not a focus-eval submission (\"format\" is not {FORMAT!r})")
        return None
    if record.get("format_version") != FORMAT_VERSION:
        problems.append(f"{BUNDLE_FILE}: format_version {record.get('format_version')!r}; this focus-eval reads "
                        f"{FORMAT_VERSION}")
        return None
    try:
        record["submitter"] = check_submitter(record.get("submitter"))
    except ValueError as exc:
        problems.append(f"{BUNDLE_FILE}: {exc}")
    if not isinstance(record.get("files"), list):
        problems.append(f"{BUNDLE_FILE}: \"files\" must be a list of {{path, sha256, bytes}}")
        return None
    return record


def _listed_files(record: dict, problems: list[str]) -> dict[str, BundleFile]:
    listed: dict[str, BundleFile] = {}
    for i, item in enumerate(record["files"], start=1):
        if not isinstance(item, dict):
            problems.append(f"{BUNDLE_FILE}: files[{i}] is not an object")
            continue
        path, digest, size = item.get("path"), item.get("sha256"), item.get("bytes")
        where = f"{BUNDLE_FILE}: files[{i}] ({path!r})"
        if not confined(path) or path == BUNDLE_FILE:
            problems.append(f"{where}: not a confined relative path (no '..', no leading '/', plain names)")
        elif not (isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest)):
            problems.append(f"{where}: sha256 must be 64 lower-case hex digits")
        elif not (isinstance(size, int) and not isinstance(size, bool) and size >= 0):
            problems.append(f"{where}: bytes must be a whole number")
        elif path in listed:
            problems.append(f"{where}: listed twice")
        else:
            listed[path] = BundleFile(path, digest, size)
    return listed


def confined(path: Any) -> bool:
    """A relative POSIX path of plain names: no '..', '.', empty parts, leading '/' or backslashes."""
    if not isinstance(path, str) or not path or path.startswith("/") or "\\" in path:
        return False
    return all(NAME.match(part) for part in path.split("/"))


def _compare(folder: Path, found: dict[str, int], listed: dict[str, BundleFile], limits: BundleLimits,
             problems: list[str]) -> None:
    for path in sorted(set(found) - set(listed) - {BUNDLE_FILE}):
        problems.append(f"{path}: not in {BUNDLE_FILE}'s digest list (added after bundling?)")
    for path, entry in sorted(listed.items()):
        if path not in found:
            problems.append(f"{path}: listed in {BUNDLE_FILE} but missing (a partial bundle)")
            continue
        if found[path] != entry.bytes:
            problems.append(f"{path}: {found[path]} bytes, listed as {entry.bytes} (changed after bundling)")
            continue
        if found[path] > limits.file_bytes:
            continue  # already a problem; not read
        try:
            data = read_confined(folder / path, limits.file_bytes)
        except OSError as exc:
            problems.append(f"{path}: cannot be read ({exc.strerror or exc})")
            continue
        if hashlib.sha256(data).hexdigest() != entry.sha256:
            problems.append(f"{path}: sha256 differs from {BUNDLE_FILE}'s digest list (changed after bundling)")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(f"{path}: not UTF-8 text (byte {exc.start}); a bundle holds text files only")


def read_confined(path: Path, limit: int) -> bytes:
    """The bytes of a regular file, opened without following a symbolic link, at most ``limit`` of them (an
    OSError otherwise)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path}: not a regular file")
        if info.st_size > limit:
            raise OSError(f"{path}: larger than {limit} bytes")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise OSError(f"{path}: larger than {limit} bytes")
    return data


def _check_complete(folder: Path, listed: dict[str, BundleFile], problems: list[str]) -> None:
    """Every results file has a run manifest beside it, and every task line its sample and meta file."""
    results = sorted(p for p in listed if p.startswith(f"{RESULTS_DIR}/") and p.endswith(f"/{RESULTS_FILE}"))
    if not results:
        problems.append(f"no {RESULTS_DIR}/<model>/{RESULTS_FILE} in the bundle")
    for path in results:
        base = path.rsplit("/", 1)[0]
        if not any(PurePosixPath(p).parent == PurePosixPath(base) and PurePosixPath(p).match(MANIFEST_GLOB)
                   for p in listed):
            problems.append(f"{base}: no run manifest ({MANIFEST_GLOB}) beside {RESULTS_FILE}")
        for number, row, problem in read_jsonl_rows(folder / path):
            if problem is not None:
                problems.append(f"{path}, line {number}: {problem}")
            elif isinstance(row, dict) and row.get("kind") != "group":
                problems += _line_files(path, base, number, row, listed)


def _line_files(path: str, base: str, number: int, row: dict, listed: dict[str, BundleFile]) -> list[str]:
    task, method = row.get("task"), row.get("method")
    if not (plain_name(task) and plain_name(method)):
        return [f"{path}, line {number}: task {task!r} and method {method!r} must be plain names"]
    layout = OutputLayout(Path(base))
    return [f"{path}, line {number}: {task}.{method} has no {unit.name} (a partial bundle)"
            for unit in (layout.samples(task, method), layout.meta(task, method)) if unit.as_posix() not in listed]

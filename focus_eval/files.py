"""The one way focus-eval writes a file that others read: a unique temporary file beside the target, flushed to
disk, then renamed over it (readers see the old or the new file, never half of one), plus an advisory lock
(``filelock``) for read-modify-write of a shared file, JSON Lines reading and writing (``jsonlines``), and the one
YAML reader and the one JSON reader for every file a user can hand in (safe types only, no aliases, bounded size,
no key given twice)."""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import yaml

LOCK_TIMEOUT_S = 600.0
# The longest file name, in bytes, of the common file systems (ext4, XFS, Btrfs, APFS, ZFS): a name up to it is
# legal, so every name focus-eval derives from one (a temporary name, a prepared copy) must fit it too.
NAME_MAX = 255
_TMP_SUFFIX = ".tmp"


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (unique temporary name, fsync, os.replace)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        # mkstemp adds 8 random characters; the name is cut so that ".<name>.XXXXXXXX.tmp" fits NAME_MAX
        start = shortened(path.name, NAME_MAX - 2 - 8 - len(_TMP_SUFFIX))
        fd, tmp = tempfile.mkstemp(prefix=f".{start}.", suffix=_TMP_SUFFIX, dir=path.parent)
    except OSError as exc:
        # the error names the temporary name; the user gave (and must fix) the target
        exc.filename = str(path)
        raise
    try:
        with os.fdopen(fd, "wb") as handle:
            # mkstemp makes the file private (0600); give it the mode a plainly written file gets (0666 less
            # the umask), so that other readers (a web server, the users of a shared cache) can still read it
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(handle.fileno(), 0o666 & ~umask)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename in (None, tmp):
            exc.filename, exc.filename2 = str(path), None
        raise
    return path


def shortened(name: str, limit: int) -> str:
    """``name`` cut to at most ``limit`` bytes as the file system stores it, between two characters."""
    while len(os.fsencode(name)) > limit:
        name = name[:-1]
    return name


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


@contextlib.contextmanager
def locked(path: str | os.PathLike, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the advisory lock of ``path`` (a ``<name>.lock`` file beside it) for a read-modify-write."""
    from filelock import FileLock, Timeout

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path.with_name(path.name + ".lock")), timeout=timeout)
    try:
        with lock:
            yield
    except Timeout:
        raise TimeoutError(f"{path}: another process held its lock for {timeout:.0f} s") from None


def jsonl_text(rows: Iterable[Any], dumps: Callable[[Any], str]) -> str:
    """Rows as JSON Lines text, each row serialised by ``dumps`` (one line, no NaN)."""
    import io

    import jsonlines

    buffer = io.StringIO()
    with jsonlines.Writer(buffer, dumps=dumps, flush=False) as writer:
        writer.write_all(rows)
    return buffer.getvalue()


def read_jsonl_rows(path: str | os.PathLike) -> Iterator[tuple[int, Any | None, str | None]]:
    """(line number, row or None, problem or None) for every non-empty line of a JSON Lines file."""
    import jsonlines

    data = Path(path).read_bytes()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    torn_tail = bool(data) and not data.endswith(b"\n")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            yield number, jsonlines.Reader([raw]).read(), None
        except (jsonlines.InvalidLineError, UnicodeDecodeError) as exc:
            torn = torn_tail and number == len(lines)
            yield number, None, "a torn last line (an interrupted write)" if torn else f"not valid JSON ({exc})"


# A task, preset, card, run or grid file is a few kilobytes; anything far larger is not one.
MAX_YAML_BYTES = 4 * 1024 * 1024


class DuplicateKeyError(yaml.YAMLError, ValueError):
    """A mapping of a user's YAML or JSON file that gives one key twice (its message names the key and both
    lines). A YAMLError for the YAML readers' handlers and a ValueError for the JSON readers'."""

    def __init__(self, key: Any, first: int, second: int):
        super().__init__(f"key {key!r} is given twice (lines {first} and {second})")
        self.key, self.lines = key, (first, second)


class NoAliasLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing aliases (``*name``): a few bytes of aliases can expand to gigabytes once
    the value is written out or hashed ("billion laughs"), and no focus-eval file needs them; and refusing a
    key given twice in one mapping (PyYAML keeps the last value silently)."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed here: write the value "
                                              "out in full", mark)
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            lines: dict[Any, int] = {}
            for key_node, _ in node.value:
                key, line = self.construct_object(key_node, deep=True), key_node.start_mark.line + 1
                try:
                    if key in lines:
                        raise DuplicateKeyError(key, lines[key], line)
                    lines[key] = line
                except TypeError:
                    continue  # an unhashable key: the base class says so, with its line
        return super().construct_mapping(node, deep)


class UserFileError(yaml.YAMLError):
    """A YAML or JSON file a user hands in that is no small UTF-8 text file (its message says why)."""


def read_user_text(path: str | os.PathLike) -> str:
    """The text of a YAML or JSON file a user hands in: a regular file (opening a named pipe would block), of at
    most MAX_YAML_BYTES, in UTF-8. A file system error is an OSError; anything else a UserFileError."""
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise UserFileError("not a regular file (a named pipe, socket, device or folder); give the file itself")
    with open(path, "rb") as handle:
        data = handle.read(MAX_YAML_BYTES + 1)
    if len(data) > MAX_YAML_BYTES:
        raise UserFileError(f"larger than {MAX_YAML_BYTES} bytes; a file of settings here is a few kilobytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserFileError(f"not UTF-8 text (byte {exc.start}); save it as UTF-8") from None


def load_yaml_file(path: str | os.PathLike) -> Any:
    """``load_yaml`` of a file a user hands in (``read_user_text``): errors are OSError or yaml.YAMLError."""
    return load_yaml(read_user_text(path))


# texts up to this size are parsed once per process: a task index reads each shared base file once per task
# that includes it, and every command or test that builds an index reads the same shipped files again
PARSED_TEXT_BYTES = 64 * 1024


def load_yaml(text: str) -> Any:
    """Parse YAML ``text`` with the safe loader, refusing aliases (and so merge keys ``<<: *base``) and texts over
    MAX_YAML_BYTES. Errors are ``yaml.YAMLError`` for the caller to report with its file's name. The value is
    the caller's own: a text parsed before (keyed by the text itself, so a changed file is parsed anew) is given
    as a deep copy of its first parse."""
    if len(text) > MAX_YAML_BYTES:
        raise yaml.YAMLError(f"{len(text)} characters; a YAML file here is at most {MAX_YAML_BYTES} bytes")
    if len(text) > PARSED_TEXT_BYTES:
        return _parse_yaml(text)
    import copy

    return copy.deepcopy(_parsed_yaml(text))


@functools.lru_cache(maxsize=1024)
def _parsed_yaml(text: str) -> Any:
    """The first parse of a short text (an error is raised again each time, never kept)."""
    return _parse_yaml(text)


def _parse_yaml(text: str) -> Any:
    loader = NoAliasLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def load_json(text: str | bytes) -> Any:
    """Parse JSON ``text`` (a user's file or one line of a JSON Lines file), refusing a key given twice in one
    object (``json.loads`` keeps the last value silently): a ``DuplicateKeyError`` naming the key and both
    lines. Other errors are ``json.JSONDecodeError``; both are ValueErrors."""
    import json

    try:
        return json.loads(text, object_pairs_hook=_unique_pairs)
    except _Repeated:
        text = text.decode("utf-8-sig") if isinstance(text, bytes) else text
        return _KeyLines().decode(text)  # read again, slowly, to find the lines: it raises DuplicateKeyError


class _Repeated(ValueError):
    pass


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Repeated()
    return out


class _KeyLines:
    """A JSON decoder on the standard library's pure-Python scanner, whose object parser notes where each
    value of an object starts, so that a key given twice is named with its lines."""

    def __init__(self):
        import json
        from json import scanner

        self.decoder = json.JSONDecoder()
        self.decoder.parse_object = self._parse_object
        self.decoder.scan_once = scanner.py_make_scanner(self.decoder)

    def decode(self, text: str) -> Any:
        return self.decoder.decode(text)

    @staticmethod
    def _parse_object(s_and_end, strict, scan_once, object_hook, object_pairs_hook, memo=None):
        from json.decoder import JSONObject

        text, starts = s_and_end[0], []

        def scan(string, index):
            starts.append(index)
            return scan_once(string, index)

        pairs, end = JSONObject(s_and_end, strict, scan, None, list, memo)
        lines: dict[str, int] = {}
        for (key, _), start in zip(pairs, starts):
            line = text.count("\n", 0, text.rfind(":", 0, start)) + 1  # the line of the key's colon
            if key in lines:
                raise DuplicateKeyError(key, lines[key], line)
            lines[key] = line
        return dict(pairs), end

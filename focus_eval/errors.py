"""Errors that the command line reports as one clear message instead of a traceback."""

from __future__ import annotations

import errno


class FocusError(Exception):
    """A user-facing error: bad input, a missing file, an unknown name."""


class Terminated(BaseException):
    """SIGTERM arrived: like KeyboardInterrupt for SIGINT, it unwinds the stack (``finally`` blocks flush what
    is complete, worker pools and child jobs are ended) and the command exits with 128 + the signal."""

    def __init__(self, signum: int):
        super().__init__(f"signal {signum}")
        self.signum = signum


class DataError(FocusError):
    """A dataset folder or label file that cannot be read as documented."""

    def __init__(self, message: str, file: str | None = None, row: int | None = None):
        where = ""
        if file is not None:
            where = f"{file}"
            if row is not None:
                where += f", row {row}"
            where += ": "
        super().__init__(where + message)
        self.file = file
        self.row = row


# errno -> (what happened, what to do): the command line's one line for a file system error
OS_ERRORS: dict[int, tuple[str, str]] = {
    errno.EROFS: ("the file system is read-only", "write to a writable folder (or remount it read-write)"),
    errno.ENOSPC: ("no space left on the device", "free some space or write to another disk, then run the "
                                                  "command again"),
    errno.EDQUOT: ("the disk quota is used up", "free some space or write to another disk, then run the command "
                                                "again"),
    errno.ENOTDIR: ("a part of the path is a file, not a folder", "fix the path or move that file away"),
    errno.EISDIR: ("is a folder, where a file is expected", "give a file name, not a folder"),
    errno.EEXIST: ("exists and is not a folder", "fix the path or move that file away"),
    errno.EACCES: ("permission denied", "check the owner and mode of the file and its folders, or use another "
                                        "path"),
    errno.EPERM: ("operation not permitted", "check the owner and mode of the file and its folders, or use "
                                             "another path"),
    errno.ENAMETOOLONG: ("the file name is too long", "use a shorter name or a shallower folder"),
    errno.ELOOP: ("too many levels of symbolic links (a symlink loop)", "fix or remove the symbolic link"),
    errno.ENOENT: ("no such file or folder", "check the path"),
    errno.EMFILE: ("too many open files", "raise the open-file limit (ulimit -n) or use fewer workers"),
    errno.EIO: ("an input/output error (a failing disk or network file system)", "check the disk, then run "
                                                                                 "the command again"),
}


def os_error_line(exc: OSError) -> str:
    """``PATH: WHAT HAPPENED; WHAT TO DO`` for a file system error (PATH left out when the error names none)."""
    what, todo = OS_ERRORS.get(exc.errno, (exc.strerror or str(exc) or type(exc).__name__,
                                           "check the path and the disk, then run the command again"))
    paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
    where = " -> ".join(paths) + ": " if paths else ""
    return f"{where}{what}; {todo}"

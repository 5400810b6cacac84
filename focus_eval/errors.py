"""Errors that the command line reports as one clear message instead of a traceback."""


class FocusError(Exception):
    """A user-facing error: bad input, a missing file, an unknown name."""


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

"""The data behind each figure and table as CSV (``data/<name>.csv``), safe to open in a spreadsheet."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any, Sequence

# A text cell starting with one of these would run as a formula in a spreadsheet; model names come from files.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


@dataclass
class CsvTable:
    """A header and rows; numbers are written in full precision, missing values as empty cells."""

    header: Sequence[str]
    rows: list[Sequence[Any]] = field(default_factory=list)

    def add(self, *values: Any) -> None:
        if len(values) != len(self.header):
            raise ValueError(f"a CSV row needs {len(self.header)} values, got {len(values)}")
        self.rows.append(values)

    def text(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(self.header)
        for row in self.rows:
            writer.writerow([_cell(v) for v in row])
        return out.getvalue()


def _cell(value: Any) -> Any:
    kind = type(value)
    if kind is float or kind is int:  # written by the csv module as repr() would
        return value
    if value is None:
        return ""
    if kind is bool:
        return "true" if value else "false"
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text

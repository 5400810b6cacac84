"""The data behind each figure and table as CSV (``data/<name>.csv``), safe to open in a spreadsheet: an
analysis ``Table`` (``analysis.base``), so a page's data and ``focus-eval report --csv`` are written alike."""

from __future__ import annotations

from typing import Sequence

from focus_eval.analysis.base import Table


class CsvTable(Table):
    """A header and rows; numbers are written in full precision, missing values as empty cells."""

    @property
    def header(self) -> Sequence[str]:
        return self.columns

    def text(self) -> str:
        return self.to_csv()

"""What every analysis is: one module behind one small protocol, computing one ``Table`` from a collection of
results (``results.collect.Collection``). ``focus-eval report NAME`` prints it, ``--csv`` and ``--json`` write it,
and the leaderboard draws its page from the same objects."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from focus_eval.tables import aligned, fold_text, render_wide  # noqa: F401  (aligned: the analyses' text columns)

if TYPE_CHECKING:
    from focus_eval.results.collect import Collection

# A text cell starting with one of these would run as a formula in a spreadsheet; model names come from files.
_FORMULA_START = ("=", "+", "-", "@")
# Line breaks and other control characters inside a cell: a spreadsheet may start a new row or cell at a carriage
# return the csv module leaves unquoted, and that next cell could begin a formula. They are written as spaces.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass
class Table:
    """Columns and rows, a title and notes. CSV cells: numbers in full precision, missing values empty, true and
    false in words, text that a spreadsheet would run as a formula quoted. ``printed`` is how the command prints
    the table (aligned columns when not given); ``record`` its JSON form (the title, columns, rows as objects and
    notes when not given)."""

    columns: Sequence[str]
    rows: list[Sequence[Any]] = field(default_factory=list)
    title: str = ""
    notes: list[str] = field(default_factory=list)
    printed: str | None = None
    record: dict[str, Any] | None = None

    def add(self, *values: Any) -> None:
        if len(values) != len(self.columns):
            raise ValueError(f"a table row needs {len(self.columns)} values, got {len(values)}")
        self.rows.append(values)

    def to_csv(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(self.columns)
        for row in self.rows:
            writer.writerow([csv_cell(v) for v in row])
        return out.getvalue()

    def to_json(self) -> str:
        record = self.record if self.record is not None else {
            "title": self.title, "columns": list(self.columns),
            "rows": [dict(zip(self.columns, row)) for row in self.rows], "notes": self.notes}
        return json.dumps(record, indent=1, allow_nan=False) + "\n"

    def to_text(self, width: int | None = None) -> str:
        """The table as the command prints it; with ``width``, fitted to that many characters (``tables.render_wide``:
        aligned columns, else headings and columns beneath them, else one block per row; the CSV and JSON keep
        every value in full)."""
        if self.printed is not None:
            return self.printed
        cells = [[_shown(v) for v in row] for row in self.rows]
        if width is None:
            lines = [self.title] if self.title else []
            lines += aligned([str(c) for c in self.columns], cells)
            return "\n".join(lines + [f"note: {n}" for n in self.notes])
        align = "l" + "".join("r" if _numeric(self.rows, i) else "l" for i in range(1, len(self.columns)))
        parts = [fold_text(self.title, width)] if self.title else []
        parts.append(render_wide(self.columns, cells, align, width))
        return "\n".join(parts + [fold_text(f"note: {n}", width) for n in self.notes])


def csv_cell(value: Any) -> Any:
    kind = type(value)
    if kind is float or kind is int:  # written by the csv module as repr() would
        return value
    if value is None:
        return ""
    if kind is bool:
        return "true" if value else "false"
    text = _CONTROL.sub(" ", str(value))
    return "'" + text if text.lstrip().startswith(_FORMULA_START) else text


def _shown(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _numeric(rows: list[Sequence[Any]], column: int) -> bool:
    """Whether every value of ``column`` is a number or missing (its cells are then aligned right)."""
    values = (r[column] for r in rows)
    return all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values)




@dataclass(frozen=True)
class ReportOptions:
    """The options ``focus-eval report`` passes to every analysis: whether ``--limit`` runs count, the
    resampling of analyses that bootstrap, whether proxy and underpowered tasks count (as the site's
    ``--include-proxy``), a file of screening endpoints (``operating-points``) and the extra random-guess row
(``funbench``: ``documented``)."""

    include_limited: bool = False
    n_boot: int = 1000
    seed: int = 0
    include_proxy: bool = False
    endpoints: Path | None = None
    random_guess: str | None = None


class Analysis(Protocol):
    """One analysis: its registry name, a one-line summary (listed by ``focus-eval report --help``), what it
    reads (``"results"``: results lines, ``"compare"``: comparison lines), the one axis of the lines' identity it
    varies (``varies``: a name in ``results.identity.AXES``; every other axis is held fixed by taking the lines
    from ``results.identity.pair``, which names the lines it leaves out for the table's notes), and its
    computation."""

    name: str
    summary: str
    inputs: tuple[str, ...]
    varies: str

    def compute(self, collection: "Collection", options: ReportOptions = ...) -> Table:
        ...

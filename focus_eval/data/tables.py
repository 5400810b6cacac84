"""Reading label tables: CSV files (any BOM) and .xlsx sheets into rows of cleaned text cells, and matching a
reader's column concepts to the headers a release actually uses."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from focus_eval.data.files import require_regular
from focus_eval.errors import DataError

Row = dict[str, "str | None"]  # a header -> cell mapping plus "__row__", the row's 1-based line number


def clean_header(name: object) -> str:
    """Strip whitespace, a UTF-8 BOM and non-breaking spaces from a column name."""
    text = "" if name is None else str(name)
    return text.replace("\ufeff", "").replace("\xa0", " ").strip()


def clean_cell(value: object) -> str | None:
    """Strip a string cell; empty cells, NaN and 'NA'-style markers become None."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    text = str(value).replace("\xa0", " ").strip()
    if text == "" or text.lower() in {"nan", "na", "n/a", "none", "null"}:
        return None
    return text


def _row(lineno: int, headers: Sequence[str], cells: Sequence[str | None]) -> Row:
    row: Row = {"__row__": lineno}  # type: ignore[dict-item]
    for i, h in enumerate(headers):
        if h:
            row[h] = cells[i] if i < len(cells) else None
    return row


def check_headers(headers: Sequence[str], path: Path, row: int = 1) -> list[str]:
    """``headers`` unchanged, or a DataError naming every column name the file gives more than once: a row
    dict keeps one cell per name, so the other column would be dropped without a word."""
    named = [h for h in headers if h]
    twice = sorted({h for h in named if named.count(h) > 1})
    if twice:
        positions = "; ".join(f"{h!r} in columns {', '.join(str(i + 1) for i, x in enumerate(headers) if x == h)}"
                              for h in twice)
        raise DataError(f"duplicated column name(s): {positions}; rename or remove all but one", file=str(path),
                        row=row)
    return list(headers)


def read_csv_rows(path: Path, encoding: str = "utf-8-sig") -> tuple[list[str], list[Row]]:
    """Read a CSV into (clean headers, rows of clean cells). Row dicts also carry ``__row__``: the 1-based
    line number in the file (header = line 1), for error messages."""
    require_regular(path, "label file")
    try:
        raw = path.read_bytes().decode(encoding)
    except UnicodeDecodeError as exc:
        raise DataError(f"cannot decode as {encoding}: {exc}", file=str(path)) from exc
    # newline="": lines end at \n, \r\n or a lone \r (old Mac copies), as the csv module expects
    reader = csv.reader(io.StringIO(raw, newline=""))
    try:
        header = next(reader)
        headers = check_headers([clean_header(h) for h in header], path)
        rows = [_row(lineno, headers, [clean_cell(v) for v in values])
                for lineno, values in enumerate(reader, start=2) if any(v.strip() for v in values)]
    except StopIteration:
        raise DataError("empty label file", file=str(path)) from None
    except csv.Error as exc:  # a NUL byte, a field over the size limit, a stray quote at the end
        raise DataError(f"not a readable CSV file: {exc}", file=str(path), row=reader.line_num) from None
    return headers, rows


def xlsx_values(path: Path, sheet: str | None = None) -> list[tuple]:
    """The raw cell values of one sheet (the first if ``sheet`` is None), row by row, as openpyxl reads them."""
    from openpyxl import load_workbook

    require_regular(path, "label file")
    try:
        book = load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises several unrelated types for a damaged file
        raise DataError(f"cannot read as an .xlsx workbook: {exc}", file=str(path)) from exc
    try:
        if sheet is not None and sheet not in book.sheetnames:
            raise DataError(f"no sheet {sheet!r}; sheets are {book.sheetnames}", file=str(path))
        table = book[sheet] if sheet is not None else book.worksheets[0]
        return [tuple(values) for values in table.iter_rows(values_only=True)]
    finally:
        book.close()


def read_xlsx_rows(path: Path, sheet: str | None = None) -> tuple[list[str], list[Row]]:
    """Read one sheet of an .xlsx file like ``read_csv_rows``: the first non-empty row is the header,
    cells are cleaned to text, and each row dict carries ``__row__`` (the sheet's 1-based row number)."""
    headers: list[str] | None = None
    rows: list[Row] = []
    for lineno, values in enumerate(xlsx_values(path, sheet), start=1):
        cells = [clean_cell(v) for v in values]
        if not any(c is not None for c in cells):
            continue
        if headers is None:
            headers = check_headers([clean_header(v) for v in values], path, lineno)
        else:
            rows.append(_row(lineno, headers, cells))
    if headers is None:
        raise DataError("empty sheet", file=str(path))
    return headers, rows


def resolve_columns(headers: Iterable[str], aliases: Mapping[str, Sequence[str]], file: Path,
                    optional: Iterable[str] = ()) -> dict[str, str]:
    """Map each concept in ``aliases`` to the actual header (case-insensitive). A required concept with no
    matching header is a DataError that names the file, the expected names and the headers found."""
    by_lower = {clean_header(h).lower(): clean_header(h) for h in headers if clean_header(h)}
    optional = set(optional)
    resolved: dict[str, str] = {}
    for concept, names in aliases.items():
        for n in names:
            if n.lower() in by_lower:
                resolved[concept] = by_lower[n.lower()]
                break
        else:
            if concept not in optional:
                raise DataError(
                    f"missing column for {concept!r}: expected one of {list(names)}; found {sorted(by_lower.values())}",
                    file=str(file))
    return resolved

"""Every table the command line prints, rendered one way: on ``rich``, fitted to the terminal's width (cells
wrap inside their column rather than lines wrapping on the screen); off a terminal a plain layout, no colour,
no trailing spaces, fitted to ``$COLUMNS`` or else 200 characters, so that logs and pipes get lines of a known
width. Commands that print a table also take ``--json``: ``rows_json`` gives the same rows as records.

    from focus_eval.tables import print_table
    print_table(["task", "n", "auroc"], rows, align="lrr")

``render_wide`` fits the many-column tables of ``focus-eval report`` without rich: aligned columns where they fit,
else a repeated first column as headings, else each row as packed ``column: value`` items.

Lowest layer: the standard library, and rich imported when a table is drawn."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import sys
from typing import Any, Iterable, Sequence, TextIO

PLAIN_WIDTH = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # a line break or tab inside a cell would break the layout


def width(stream: TextIO | None = None) -> int:
    """The width to fit: the terminal's on a terminal, else ``$COLUMNS``, else 200."""
    stream = stream or sys.stdout
    columns = os.environ.get("COLUMNS", "")
    if _is_terminal(stream):
        return shutil.get_terminal_size((int(columns) if columns.isdigit() else 80, 24)).columns
    return int(columns) if columns.isdigit() and int(columns) > 0 else PLAIN_WIDTH


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def cell(value: Any) -> str:
    """A value as a table shows it: lists joined with commas, booleans yes/no, None as '-'."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "-" if value is None else str(value)


def render(header: Sequence[str], rows: Iterable[Sequence[Any]], align: str | None = None,
           max_width: int | None = None, color: bool = False, title: str | None = None) -> str:
    """The table as text at most ``max_width`` characters wide (default ``width()``): columns two spaces apart,
    ``align`` one letter per column (``l`` left, ``r`` right; default all left), cells that do not fit wrapped
    within their column at spaces (a word longer than ``WORD`` characters is folded). Where even that does not
    fit, each row becomes a block: its first cell, then one indented ``column: value`` line per other cell."""
    max_width = max_width or width()
    cells = [[cell(v) for v in row] for row in rows]
    minimum = [_min_width(str(h), [r[i] for r in cells], first=i == 0) for i, h in enumerate(header)]
    if sum(minimum) + 2 * (len(header) - 1) > max_width:
        return _records([str(h) for h in header], cells, max_width)
    from rich.console import Console
    from rich.table import Table

    justify = {"l": "left", "r": "right", "c": "center"}
    table = Table(box=None, pad_edge=False, padding=(0, 1), show_edge=False, header_style="bold" if color else "",
                  title=title, title_justify="left", title_style="bold" if color else "")
    for i, name in enumerate(header):
        kind = (align or "")[i:i + 1] or "l"
        table.add_column(str(name), justify=justify[kind], overflow="fold", min_width=minimum[i])
    for row in cells:
        table.add_row(*row)
    out = io.StringIO()
    console = Console(file=out, width=max_width, color_system="auto" if color else None, force_terminal=color,
                      no_color=not color, highlight=False, soft_wrap=False, legacy_windows=False)
    console.print(table)
    return "\n".join(line.rstrip() for line in out.getvalue().rstrip("\n").split("\n"))


WORD = 24  # the widest a column must be to keep its words whole; longer words are folded
FIRST = 40  # the widest the first column (a row's name) must be to keep its cells on one line


def _min_width(name: str, column: list[str], first: bool) -> int:
    if first:
        return max(len(name), min(FIRST, max((len(c) for c in column), default=0)))
    words = [len(w) for c in column for w in c.split()]
    return max(len(name), min(WORD, max(words, default=0)))


def _records(header: list[str], cells: list[list[str]], max_width: int) -> str:
    """The narrow layout: per row its first cell, then ``column: value`` lines, folded to ``max_width``."""
    import textwrap

    lines = []
    for row in cells:
        lines += textwrap.wrap(row[0], max_width, break_on_hyphens=False) or [""]
        for name, value in zip(header[1:], row[1:]):
            lines += textwrap.wrap(f"{name}: {value}", max_width, initial_indent="  ", subsequent_indent="      ",
                                   break_on_hyphens=False)
    return "\n".join(lines)


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]], align: str | None = None) -> list[str]:
    """Plain text columns two spaces apart under a rule of dashes, each as wide as its widest cell: ``align`` one
    letter per column (``l``, ``r``; default the first column left and the others right)."""
    align = align or "l" + "r" * (len(header) - 1)
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def fmt(row: Sequence[str]) -> str:
        return "  ".join(str(c).rjust(w) if align[i:i + 1] == "r" else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    return [fmt(header), "  ".join("-" * w for w in widths), *map(fmt, rows)]


def render_wide(header: Sequence[str], rows: Iterable[Sequence[Any]], align: str | None = None,
                max_width: int | None = None) -> str:
    """A table of many columns (the reports') in at most ``max_width`` characters (default ``width()``), in the
    first layout that fits: aligned columns; where the first column repeats row after row, its values as headings
    with the other columns aligned beneath them; else, per row, ``column: value`` items packed into lines
    (under the first column's heading where it repeats, else after the row's first cell)."""
    max_width = max(20, max_width or width())
    header = [_CONTROL.sub(" ", str(h)) for h in header]
    cells = [[_CONTROL.sub(" ", cell(v)) for v in row] for row in rows]
    align = align or "l" + "r" * (len(header) - 1)
    lines = aligned(header, cells, align)
    if max(map(len, lines)) <= max_width:
        return "\n".join(lines)
    if not cells:
        return "\n".join(_fold("  ".join(header), max_width))
    grouped = len(header) > 1 and len({r[0] for r in cells}) < len(cells)
    if grouped:
        rest = ["  " + line for line in aligned(header[1:], [r[1:] for r in cells], align[1:])]
        if max(map(len, rest)) <= max_width:
            return "\n".join([*_fold(header[0], max_width), *rest[:2], *_under_headings(cells, rest[2:], max_width)])
    return "\n".join(_packed(header, cells, max_width, grouped))


def _under_headings(cells: list[list[str]], lines: list[str], max_width: int) -> list[str]:
    out, heading = [], None
    for row, line in zip(cells, lines):
        if row[0] != heading:
            heading = row[0]
            out += _fold(heading, max_width)
        out.append(line)
    return out


def _packed(header: list[str], cells: list[list[str]], max_width: int, grouped: bool) -> list[str]:
    """Each row as ``column: value`` items, two spaces apart, as many to a line as fit."""
    out, heading = [], None
    for row in cells:
        if not grouped:
            out += _fold(row[0], max_width)
            out += _pack([f"{n}: {v}" for n, v in zip(header[1:], row[1:])], "  ", "  ", max_width)
            continue
        if row[0] != heading:
            heading = row[0]
            out += _fold(heading, max_width)
        out += _pack([f"{n}: {v}" for n, v in zip(header[1:], row[1:])], "  ", "    ", max_width)
    return out


def _pack(items: list[str], first: str, rest: str, max_width: int) -> list[str]:
    """``items`` two spaces apart, the first line starting with ``first``, the others with ``rest``; an item
    longer than a line is folded."""
    lines, line = [], first
    for item in items:
        sep = "  " if line.strip() else ""
        if len(line) + len(sep) + len(item) <= max_width:
            line += sep + item
            continue
        if line.strip():
            lines.append(line)
            line = rest
        if len(line) + len(item) <= max_width:
            line += item
            continue
        parts = _fold(item, max_width - max(len(line), len(rest)))
        lines.append(line + parts[0])
        lines += [rest + part for part in parts[1:-1]]
        line = rest + parts[-1] if len(parts) > 1 else rest
    return lines + ([line] if line.strip() else [])


def _fold(text: str, max_width: int, indent: str = "") -> list[str]:
    import textwrap

    return textwrap.wrap(text, max(1, max_width), subsequent_indent=indent, break_on_hyphens=False) or [""]


def fold_text(text: str, max_width: int | None = None) -> str:
    """Prose (a title, a note) folded at spaces to ``max_width`` (default ``width()``), continuations indented."""
    max_width = max(20, max_width or width())
    return "\n".join(line for para in text.split("\n") for line in _fold(para, max_width, "  "))


def print_table(header: Sequence[str], rows: Iterable[Sequence[Any]], align: str | None = None,
                file: TextIO | None = None, title: str | None = None) -> None:
    """Print a table fitted to ``file`` (default stdout): bold headers on a terminal, plain elsewhere."""
    stream = file or sys.stdout
    print(render(header, rows, align, width(stream), _is_terminal(stream), title), file=stream)


def rows_json(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
    """The rows of a table as records keyed by its header (values kept as they are, not as cells)."""
    return [dict(zip(header, row)) for row in rows]


def print_json(value: Any, file: TextIO | None = None) -> None:
    """Machine-readable output of a command that otherwise prints a table: indented JSON, paths as text."""
    print(json.dumps(value, indent=2, default=str), file=file or sys.stdout)


def print_text(text: str, file: TextIO | None = None) -> None:
    """A line of prose beside a table, folded at spaces to the same width (continuations indented)."""
    import textwrap

    stream = file or sys.stdout
    print("\n".join(textwrap.wrap(text, width(stream), subsequent_indent="  ", break_on_hyphens=False,
                                  break_long_words=False) or [""]), file=stream)

"""One results line per (model, method, adapter, conventions, task): when folders hold the same line twice, the
build stops naming both places, unless ``--prefer newest`` (the later ``created`` wins) or ``--prefer FOLDER``
(the line read from under FOLDER wins) says which to keep."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

from focus_eval.errors import DataError
from focus_eval.leaderboard.entries import Entry

NEWEST = "newest"
_OLDEST = datetime.min.replace(tzinfo=timezone.utc)


@dataclass
class Deduplicated:
    """The kept lines, and how many duplicates a ``--prefer`` rule set aside."""

    entries: list[Entry] = field(default_factory=list)
    replaced: int = 0


def deduplicate(entries: Iterable[Entry], prefer: str | Path | None = None) -> Deduplicated:
    kept: dict[tuple, Entry] = {}
    out = Deduplicated()
    for entry in entries:
        first = kept.get(entry.key)
        if first is None:
            kept[entry.key] = entry
            continue
        winner = _preferred(first, entry, prefer)
        if winner is None:
            raise _duplicate_error(first, entry, prefer)
        kept[entry.key] = winner
        out.replaced += 1
    out.entries = list(kept.values())
    return out


def _preferred(a: Entry, b: Entry, prefer: str | Path | None) -> Entry | None:
    if prefer is None:
        return None
    if str(prefer) == NEWEST:
        ta, tb = _created(a), _created(b)
        return None if ta == tb else (a if ta > tb else b)
    folder = Path(prefer).resolve()
    inside = [e for e in (a, b) if folder == e.source.resolve().parent or folder in e.source.resolve().parents]
    return inside[0] if len(inside) == 1 else None


def _created(entry: Entry) -> datetime:
    text = entry.line.created
    try:
        stamp = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return _OLDEST
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)


def _duplicate_error(first: Entry, second: Entry, prefer: str | Path | None) -> DataError:
    line = first.line
    what = (f"duplicate results line for model {line.model!r}, method {line.method!r}"
            f"{', adapter ' + repr(line.adapter) if line.adapter else ''}"
            f"{', conventions ' + first.convention_text if first.convention_text else ''}, task {line.task!r} "
            f"(first seen in {first.source}, row {first.row}; created {line.created or 'unknown'} and "
            f"{second.line.created or 'unknown'})")
    if prefer is None:
        how = (f"; keep one with --prefer newest (the later 'created' wins) or --prefer FOLDER (the line under "
               f"FOLDER wins, e.g. --prefer {second.source.parent.parent}), or leave one folder out")
    elif str(prefer) == NEWEST:
        how = "; --prefer newest cannot choose: both lines have the same creation time (use --prefer FOLDER)"
    else:
        how = f"; --prefer {prefer} cannot choose: it holds neither or both lines"
    return DataError(what + how, file=str(second.source), row=second.row)

"""``UnitState``: where one unit (a task and method of one model) stands in its output folder, as resume and
``grid status`` judge it from the files there. One record for both readers of the folder; each decides the
states it knows (resume: done, rescore, stale, run; the grid: done, partial, stale, missing)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class UnitState:
    """``state`` in the words of the reader that judged it; ``reason`` says why in one line (the grid's
    ``partial`` and ``stale``), ``changed`` names the fingerprint fields that differ from this run's (a
    ``stale`` unit), and ``unit`` is the runner's unit when resume judged one."""

    state: str
    reason: str = ""
    changed: list[str] = field(default_factory=list)
    unit: Any = None

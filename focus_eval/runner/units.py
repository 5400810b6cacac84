"""Units of work: one (task, method) of one model, and whether a finished copy of it exists."""

from __future__ import annotations

import json
from dataclasses import dataclass

from focus_eval.results.layout import OutputLayout, unit_stem


@dataclass
class Unit:
    task: object  # focus_eval.task Task
    method: str

    @property
    def stem(self) -> str:
        return unit_stem(self.task.name, self.method)


def is_finished(layout: OutputLayout, unit: Unit, fingerprint: dict) -> bool:
    """A unit is finished when its sample file and meta exist and the meta was written for the same
    task file, preset and scoring options (so a changed task or preset is evaluated again)."""
    sp, mp = layout.samples(unit.task.name, unit.method), layout.meta(unit.task.name, unit.method)
    if not (sp.is_file() and mp.is_file()):
        return False
    try:
        meta = json.loads(mp.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return False
    return all(meta.get(k) == v for k, v in fingerprint.items())

"""Units of work: one (task, method) of one model."""

from __future__ import annotations

from dataclasses import dataclass

from focus_eval.results.layout import unit_stem


@dataclass
class Unit:
    task: object  # focus_eval.task Task
    method: str

    @property
    def stem(self) -> str:
        return unit_stem(self.task.name, self.method)

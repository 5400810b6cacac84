"""Units of work: one (task, method) of one model, its output files, and whether a finished copy exists."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Unit:
    task: object  # focus_eval.task Task
    method: str

    @property
    def stem(self) -> str:
        return f"{self.task.name}.{self.method}"


def samples_path(model_dir: Path, unit: Unit) -> Path:
    return model_dir / "samples" / f"{unit.stem}.jsonl"


def meta_path(model_dir: Path, unit: Unit) -> Path:
    return model_dir / "samples" / f"{unit.stem}.meta.json"


def is_finished(model_dir: Path, unit: Unit, fingerprint: dict) -> bool:
    """A unit is finished when its sample file and meta exist and the meta was written for the same
    task file, preset and scoring options (so a changed task or preset is evaluated again)."""
    sp, mp = samples_path(model_dir, unit), meta_path(model_dir, unit)
    if not (sp.is_file() and mp.is_file()):
        return False
    try:
        meta = json.loads(mp.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return False
    return all(meta.get(k) == v for k, v in fingerprint.items())

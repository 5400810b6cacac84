"""Resume: what state each unit of a model folder is in, judged by its recorded fingerprint and files.

    done      meta fingerprint matches, sample file present, results line agrees (count and sample digest)
    rescore   meta fingerprint matches and the sample file is complete, but the results line is missing,
              torn or disagrees: it is rebuilt from the samples
    stale     a finished or half-finished unit computed from other inputs (what changed is listed)
    run       nothing usable yet (or resume is off): compute it; also a finished unit whose sample file lacks
              the validation rows this run writes (its ``reason`` says so; one with more rows is kept)
"""

from __future__ import annotations

import json
from focus_eval.results import store
from focus_eval.results.layout import OutputLayout
from focus_eval.results.state import UnitState
from focus_eval.runner.provenance import ROWS, changes
from focus_eval.runner.units import Unit


def read_json(path) -> dict | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def results_agree(layout: OutputLayout, unit: Unit, lines: list[dict]) -> bool:
    """Whether results.jsonl holds this unit's line, computed from the sample file as it is now."""
    name = unit.task.name
    line = next((r for r in lines if (r.get("task"), r.get("method")) == (name, unit.method)), None)
    if line is None:
        return False
    digest = store.samples_digest(layout, name, unit.method)
    return digest is not None and (line.get("extra") or {}).get("samples_sha256") == digest


def lacks_rows(stored: dict, expected: dict) -> list[str]:
    """The rows (``provenance.ROWS``: ``val_rows``) this run writes that a finished unit's sample file lacks; a
    unit recorded before the key existed holds none."""
    return [key for key in ROWS if expected.get(key) and stored.get(key) is not True]


def unit_state(layout: OutputLayout, unit: Unit, expected: dict, lines: list[dict]) -> UnitState:
    """The state of ``unit`` in ``layout`` against the fingerprint it would be computed with now."""
    name, method = unit.task.name, unit.method
    meta = read_json(layout.meta(name, method))
    if meta is not None:
        changed = changes(meta, expected)
        if changed:
            return UnitState("stale", changed=changed, unit=unit)
        if not layout.samples(name, method).is_file():
            return UnitState("run", unit=unit)
        if lacks_rows(meta, expected):
            return UnitState("run", reason="its sample file has no validation rows", unit=unit)
        return UnitState("done" if results_agree(layout, unit, lines) else "rescore", unit=unit)
    started = read_json(layout.started(name, method))
    if started is not None and layout.parts(name, method):
        changed = changes(started, expected)
        if changed:
            return UnitState("stale", changed=changed, unit=unit)
    return UnitState("run", unit=unit)


def stale_message(layout: OutputLayout, stale: list[UnitState]) -> str:
    listed = "\n".join(f"  {s.unit.stem}: {'; '.join(s.changed)}" for s in stale)
    return (f"{layout.root} holds results computed from other inputs than this run's; changed:\n{listed}\n"
            f"Run again with --overwrite to replace them, or choose another --output-path.")

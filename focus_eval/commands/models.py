"""``focus-eval models [PATTERN] [--json]``: list the model presets (name, family, domain, adapter, methods, source,
gated, untrained) without importing any model code."""

from __future__ import annotations

import argparse
import fnmatch
import json

from focus_eval.errors import FocusError

COLUMNS = ("name", "family", "domain", "adapter", "methods", "source", "gated", "untrained")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pattern", nargs="?", default=None,
                        help="preset names or shell patterns, comma-separated (default: all presets)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per preset, as a list")


def select(pattern: str | None) -> list:
    """Presets whose name matches any comma-separated pattern; a pattern matching nothing is an error."""
    from focus_eval.presets import list_presets

    presets = list_presets()
    if not pattern:
        return presets
    patterns = [p.strip() for p in pattern.split(",") if p.strip()]
    unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(m.name, p) for m in presets)]
    if unmatched:
        raise FocusError(f"no model preset matches {', '.join(unmatched)}; 'focus-eval models' lists them")
    return [m for m in presets if any(fnmatch.fnmatchcase(m.name, p) for p in patterns)]


def row(preset) -> dict:
    return {"name": preset.name, "family": preset.family, "domain": preset.domain, "adapter": preset.adapter,
            "methods": list(preset.methods), "source": preset.source, "gated": bool(preset.gated),
            "untrained": bool(preset.untrained)}


def _cell(value) -> str:
    if isinstance(value, list):
        return ",".join(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "-" if value is None else str(value)


def table(rows: list[dict]) -> str:
    cells = [list(COLUMNS)] + [[_cell(r[c]) for c in COLUMNS] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in cells)


def run(args: argparse.Namespace) -> int:
    rows = [row(p) for p in select(args.pattern)]
    print(json.dumps(rows, indent=2) if args.json else table(rows))
    return 0

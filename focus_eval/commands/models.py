"""``focus-eval models [PATTERN] [--json]``: list the model presets (name, family, domain, adapter, methods, source,
gated, untrained) without importing any model code; user presets (``--models-path``, ``$FOCUS_MODELS_PATH``) are
listed beside the built-in ones, with the file each comes from."""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys

from focus_eval.errors import FocusError
from focus_eval.registry import print_unlisted

COLUMNS = ("name", "family", "domain", "adapter", "methods", "source", "gated", "untrained")
FAMILY_NOTE = ("Family adapters take a model directly: --model hf_vision|timm|open_clip|hf_clip|hf_mllm "
               "--model-args pretrained=HUB_ID_OR_PATH[,revision=COMMIT]")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pattern", nargs="?", default=None,
                        help="preset names or shell patterns, comma-separated (default: all presets)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per preset, as a list")
    parser.add_argument("--models-path", action="append", default=[], metavar="DIR",
                        help="a folder of user preset YAML files, listed beside the built-in presets (repeatable; "
                             "also $FOCUS_MODELS_PATH)")


def select(pattern: str | None, models_path: list[str] | None = None) -> list:
    """Presets whose name matches any comma-separated pattern; a pattern matching nothing is an error."""
    from focus_eval.presets import list_presets

    presets = list_presets(models_path or ())
    if not pattern:
        return presets
    patterns = [p.strip() for p in pattern.split(",") if p.strip()]
    unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(m.name, p) for m in presets)]
    if unmatched:
        raise FocusError(f"no model preset matches {', '.join(unmatched)}; 'focus-eval models' lists them")
    return [m for m in presets if any(fnmatch.fnmatchcase(m.name, p) for p in patterns)]


def row(preset, with_file: bool = False) -> dict:
    out = {"name": preset.name, "family": preset.family, "domain": preset.domain, "adapter": preset.adapter,
           "methods": list(preset.methods), "source": preset.source, "gated": bool(preset.gated),
           "untrained": bool(preset.untrained)}
    if with_file:
        out["preset"] = "built-in" if preset.origin == "built-in" else preset.path
    return out


def run(args: argparse.Namespace) -> int:
    presets = select(args.pattern, args.models_path)
    # a preset column only when user presets are listed, so the built-in listing keeps its shape
    with_file = any(p.origin != "built-in" for p in presets)
    rows = [row(p, with_file) for p in presets]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        from focus_eval.tables import print_table

        columns = list(rows[0]) if rows else list(COLUMNS)
        print_table(columns, [[r[c] for c in columns] for r in rows])
    if not args.json and not args.pattern:
        print(FAMILY_NOTE, file=sys.stderr)  # a hint for people; the table on stdout stays machine-readable
    print_unlisted("focus_eval.models")  # a plugin's preset folder that could not be read is named
    return 0

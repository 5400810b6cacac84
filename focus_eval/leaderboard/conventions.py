"""Run conventions of a results line: the options that change its numbers (``--seed``, ``--probe-compat``,
``--probe-select``, ``--zs-scale``, ``--limit``, a split file, the prepared-image cache) when they differ from
the runner's defaults.

Every non-default convention is shown as a badge, and lines whose conventions differ are never merged into one
row: the conventions are part of a configuration's identity. ``--n-boot`` is not among them (it changes the
width of an interval, not the estimate).

A method may record, under an option's key, a value it chose itself: zero-shot records the logit scale it used
as ``zs_scale``, the model's own learned scale unless ``--zs-scale`` was given (``zs_convention``: ``model`` or
``compat``). Such a value is no departure from the defaults, so it gets no badge; ``method_choices`` lists it for
the model card.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any, Callable, Iterable

from focus_eval.options import EXPLAIN, RunOptions
from focus_eval.results import collect
from focus_eval.results.collect import Collection, Convention, Entry

_DEFAULTS = {f.name: f.default for f in fields(RunOptions)}

# results-line key (in ``extra``) -> how its badge names a non-default value; the defaults are RunOptions'
_LABELS: dict[str, Callable[[Any], str]] = {
    "seed": lambda v: f"seed {v}",
    "probe_compat": lambda v: "probe-compat",
    "probe_select": lambda v: f"probe-select {v}",
    "zs_scale": lambda v: f"zs-scale {v:g}" if isinstance(v, (int, float)) else f"zs-scale {v}",
    "limit": lambda v: f"limit {v}",
    "use_prepared": lambda v: "raw images (no prepared cache)",
    "split_file_sha256": lambda v: f"split file {str(v)[:8]}",
}


# results-line key -> (whether the line's value is the method's own choice, not an option, and how the model
# card names it)
_CHOSEN: dict[str, tuple[Callable[[dict[str, Any]], bool], str]] = {
    "zs_scale": (lambda extra: extra.get("zs_convention") == "model",
                 "zero-shot logit scale (the model's own learned scale)"),
}


def default_of(key: str) -> Any:
    return _DEFAULTS.get(key)


def chosen_by_method(key: str, extra: dict[str, Any]) -> bool:
    """Whether ``extra[key]`` is a value the method chose itself (no option was set)."""
    rule = _CHOSEN.get(key)
    return rule is not None and key in extra and rule[0](extra)


def method_choices(extra: dict[str, Any]) -> list[tuple[str, Any]]:
    """(what, value) of each recorded value the line's method chose itself, for the model card."""
    return [(_CHOSEN[key][1], extra[key]) for key in _CHOSEN if chosen_by_method(key, extra)]


def conventions(extra: dict[str, Any], limited: bool = False) -> tuple[Convention, ...]:
    """The line's non-default conventions, in a fixed order. A line marked ``limited`` without its
    ``extra.limit`` still carries a limit convention (its numbers come from a subset of the test split)."""
    found = []
    for key, label in _LABELS.items():
        if chosen_by_method(key, extra):
            continue
        value = extra.get(key, default_of(key))
        if key == "seed" and value is None:
            value = default_of(key)  # scoring fills a missing seed with the default
        if value == default_of(key) and not (key == "limit" and limited):
            continue
        if key == "limit" and value is None:
            value = "?"
        what = EXPLAIN.get(key, key)
        found.append(Convention(key=key, value=value, label=label(value),
                                description=f"non-default {what}: {value!r} (default {default_of(key)!r})"))
    return tuple(found)


def read_entries(path: Path) -> list[Entry]:
    """Every results line of one ``results.jsonl`` file, with its conventions as above."""
    return collect.read_entries(path, conventions)


def collect_results(paths: Iterable[Path | str], prefer: str | Path | None = None) -> Collection:
    """Read RESULTS paths (``results.collect.collect``) with the conventions as above."""
    return collect.collect(paths, conventions, prefer)

"""Task output types beyond binary: the label space of a multi-class, multi-label or multiple-choice task (the
record field it reads, its classes, which record values mean which class) and its class prompts for
zero-shot scoring. Every error names the task file."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from focus_eval.errors import FocusError

OUTPUT_TYPES = ("binary", "multiclass", "multilabel", "multiple_choice")
CLASS_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
ZERO_SHOT_DEFAULT = "A fundus photograph showing {option}."


@dataclass(frozen=True)
class TaskClass:
    """One class: its short name (results and leaderboard), the record values that mean it, and the text an
    option or a class prompt shows for it."""

    name: str
    values: tuple[Any, ...]
    option: str


@dataclass(frozen=True)
class LabelSpace:
    """The classes of a non-binary task and how a record's ``field`` maps to them."""

    field: str
    classes: tuple[TaskClass, ...]
    multilabel: bool = False
    ordinal: bool = False

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.classes]

    def label(self, record: Any) -> int | list[int] | None:
        """The class index (single answer) or sorted class indices (multi answer) of ``record``; None when the
        field is unknown, no class matches, or a single-answer label would match more than one class."""
        value = record.value(self.field)
        if value is None:
            return None
        members = tuple(value) if isinstance(value, (list, tuple)) else (value,)
        hits = [i for i, c in enumerate(self.classes) if any(_same(v, w) for v in members for w in c.values)]
        if self.multilabel:
            return hits or None
        return hits[0] if len(hits) == 1 else None


def _same(a: Any, b: Any) -> bool:
    """Record value vs class value: equal, with numbers compared as numbers and text without case."""
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().lower() == b.strip().lower()
    return a == b and type(a) is not bool and type(b) is not bool


def _fail(path: Path, message: str) -> FocusError:
    return FocusError(f"{path}: {message}")


def check_output_type(value: Any, path: Path) -> str:
    if value not in OUTPUT_TYPES:
        raise _fail(path, f"unknown output_type {value!r}; expected one of {', '.join(OUTPUT_TYPES)}")
    return value


def _check_field(value: Any, multilabel: bool, path: Path) -> str:
    from focus_eval.data.records import LIST_FIELDS, NAMED_FIELDS, SCALAR_FIELDS, TARGETS

    head, dot, entry = value.partition(".") if isinstance(value, str) else (None, "", "")
    named = bool(dot) and head in NAMED_FIELDS and bool(entry)
    if multilabel and not (value in LIST_FIELDS or (named and head in LIST_FIELDS)):
        raise _fail(path, f"a multi-answer task reads its labels from a list field (conditions or "
                          f"lesion_quadrants.<lesion>), not {value!r}")
    if value == "conditions" or value in SCALAR_FIELDS or value in TARGETS or named:
        return value
    raise _fail(path, f"unknown target {value!r} for a multi-class task; expected one of "
                      f"{', '.join(SCALAR_FIELDS + TARGETS)}, conditions or "
                      f"{', '.join(f + '.<name>' for f in NAMED_FIELDS)}")


def _check_class(entry: Any, path: Path) -> TaskClass:
    if not isinstance(entry, dict) or set(entry) - {"name", "value", "option"} or "name" not in entry \
            or "value" not in entry:
        raise _fail(path, f"class {entry!r} must be {{name: NAME, value: VALUE or [VALUES], option: TEXT}}")
    name = entry["name"]
    if not isinstance(name, str) or not CLASS_NAME.match(name):
        raise _fail(path, f"class name {name!r} must be letters, digits, '_', '.', '+' or '-'")
    values = tuple(entry["value"]) if isinstance(entry["value"], list) else (entry["value"],)
    if not values or any(isinstance(v, (dict, list)) or v is None for v in values):
        raise _fail(path, f"class {name}: 'value' must be a value of the target field or a list of them")
    option = entry.get("option", name.replace("_", " "))
    if not isinstance(option, str) or not option.strip():
        raise _fail(path, f"class {name}: 'option' must be a non-empty text")
    return TaskClass(name, values, option.strip())


def build_label_space(config: dict[str, Any], multilabel: bool, path: Path) -> LabelSpace:
    """The label space of a non-binary task config (``target``, ``classes``, optional ``ordinal``)."""
    field = _check_field(config["target"], multilabel, path)
    entries = config["classes"]
    if not isinstance(entries, list) or len(entries) < 2:
        raise _fail(path, "'classes' must list at least two classes")
    classes = tuple(_check_class(e, path) for e in entries)
    names = [c.name for c in classes]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise _fail(path, f"class name(s) {', '.join(twice)} given twice")
    ordinal = config.get("ordinal", False)
    if not isinstance(ordinal, bool) or (ordinal and multilabel):
        raise _fail(path, "'ordinal' must be true or false (and false for a multi-answer task)")
    return LabelSpace(field, classes, multilabel, ordinal)


def check_class_prompts(value: Any, space: LabelSpace, path: Path) -> dict[str, list[str]]:
    """``zero_shot`` of a non-binary task: class name -> prompt texts; a class left out gets one prompt made
    from its option text."""
    value = {} if value is None else value
    if not isinstance(value, dict) or set(value) - set(space.names):
        unknown = sorted(set(value) - set(space.names)) if isinstance(value, dict) else value
        raise _fail(path, f"'zero_shot' must map class names ({', '.join(space.names)}) to prompt lists; "
                          f"unknown: {unknown}")
    prompts = {}
    for c in space.classes:
        texts = value.get(c.name, [ZERO_SHOT_DEFAULT.format(option=c.option)])
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t.strip() for t in texts):
            raise _fail(path, f"zero_shot.{c.name} must be a non-empty list of texts")
        prompts[c.name] = list(texts)
    return prompts

"""Label rules: named alternative harmonisations of a target's label (``label_rules:`` in a task file,
``--label-rules``), and how a record is labelled by one. A rule is ``positive`` clauses (any one makes the
image positive) and optional ``exclude`` clauses, or another ``cohort`` of the dataset (or both), each ``{field: <label field>, at_least|at_most|equals|contains:
VALUE}`` over the record's label fields (or ``extra.<column>``, a column its reader kept); ``focus_eval.task.variants`` makes a task of each rule."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from focus_eval.errors import FocusError

VARIANT_NAME = re.compile(r"^[a-z0-9][a-z0-9_]*$")

CLAUSE_OPS = ("at_least", "at_most", "equals", "contains")


def check_label_rules(value: Any, path: Path) -> dict[str, dict]:
    """``label_rules`` of a task file: name -> {description, positive: [clause, ...], exclude: [clause, ...]};
    a clause is ``{field: NAME, at_least|at_most|equals|contains: VALUE}`` over a record's label fields."""
    from focus_eval.data.records import LABEL_FIELDS

    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FocusError(f"{path}: 'label_rules' must map rule names to rules")
    for name, rule in value.items():
        if not isinstance(name, str) or not VARIANT_NAME.match(name):
            raise FocusError(f"{path}: label rule name {name!r} must be lower-case letters, digits or '_'")
        if not isinstance(rule, dict) or not (rule.get("positive") or rule.get("cohort")) \
                or set(rule) - {"description", "positive", "exclude", "cohort"}:
            raise FocusError(f"{path}: label rule {name!r} needs 'positive' clauses or a 'cohort' (and may have "
                             "'description' and 'exclude')")
        if rule.get("exclude") and not rule.get("positive"):
            raise FocusError(f"{path}: label rule {name!r}: 'exclude' needs 'positive' clauses")
        for clause in [*rule.get("positive", []), *rule.get("exclude", [])]:
            ops = [k for k in clause if k in CLAUSE_OPS] if isinstance(clause, dict) else []
            field_ok = clause.get("field") in LABEL_FIELDS or str(clause.get("field", "")).startswith("extra.") \
                if ops else False
            if len(ops) != 1 or set(clause) != {"field", ops[0]} or not field_ok:
                raise FocusError(f"{path}: label rule {name!r}: a clause is {{field: <label field>, "
                                 f"{'|'.join(CLAUSE_OPS)}: value}}, got {clause!r}")
    return dict(value)


def _value(record: Any, name: str) -> Any:
    """A label field, or ``extra.<column>``: a column the reader kept (PAPILA's ``diagnosis``, with suspects)."""
    if name.startswith("extra."):
        return (record.extra or {}).get(name[len("extra."):])
    return record.value(name)


def matches(record: Any, clause: dict) -> bool:
    """Whether ``record`` meets one clause (a field it does not know meets none)."""
    value = _value(record, clause["field"])
    if value is None:
        return False
    if "at_least" in clause:
        return value >= clause["at_least"]
    if "at_most" in clause:
        return value <= clause["at_most"]
    if "equals" in clause:
        return value == clause["equals"]
    return clause["contains"] in value


def rule_label(rule: dict, record: Any) -> int | None:
    """1 when a positive clause holds; None when an exclude clause holds, or when the first positive clause's
    field is unknown for the record (the rule cannot be judged); else 0."""
    if any(matches(record, c) for c in rule.get("exclude", [])):
        return None
    if any(matches(record, c) for c in rule["positive"]):
        return 1
    return None if _value(record, rule["positive"][0]["field"]) is None else 0

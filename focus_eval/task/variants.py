"""Prompt variants: named paraphrases of a yes/no task's prompt, each scored as a task of its own.

A task file (or its target's base file) may declare

    prompt_variants:
      plain: |-
        Is there diabetic retinopathy in this fundus photograph? Answer yes or no.

``--prompt-variants all`` (or ``NAME,...``) turns every task that declares variants into one task per chosen
variant: ``default`` is the task itself (its ``prompt``, its name, hash and fingerprint unchanged, so its units
are the ordinary ones and a results line without ``prompt_variant`` is the default's), any other name a copy
named ``<task>@<variant>`` whose prompt is that variant's template and whose hash covers it (for a multiple-choice task, the variant replaces the question's text; the options
and their layout stay). The copy records ``prompt_variant`` and ``base_task`` in ``Task.variant``; the runner
puts them into each unit's fingerprint, so a results line carries them in its ``extra`` and resume never takes
one variant's samples for another's. Tasks without variants are kept as they are."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from focus_eval.digests import json_digest
from focus_eval.errors import FocusError

DEFAULT = "default"
ALL = "all"
VARIANT_NAME = re.compile(r"^[a-z0-9][a-z0-9_]*$")
SEPARATOR = "@"


def check_prompt_variants(value: Any, path: Path) -> dict[str, str]:
    """``prompt_variants`` of a task file: a mapping of names (lower-case letters, digits, '_'; not
    ``default`` or ``all``) to non-empty Jinja templates, each compiled and rendered once here."""
    from focus_eval.task.task import PROMPT_CONTEXT, compile_prompt, render_template

    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FocusError(f"{path}: 'prompt_variants' must map variant names to prompt templates")
    out = {}
    for name, text in value.items():
        if not isinstance(name, str) or not VARIANT_NAME.match(name) or name in (DEFAULT, ALL):
            raise FocusError(f"{path}: prompt variant name {name!r} must be lower-case letters, digits or '_' "
                             f"(and not {DEFAULT!r} or {ALL!r})")
        if not isinstance(text, str) or not text.strip():
            raise FocusError(f"{path}: prompt variant {name!r} must be a non-empty Jinja template")
        render_template(compile_prompt(text, path), {k: None for k in PROMPT_CONTEXT}, path, PROMPT_CONTEXT)
        out[name] = text
    return out


def parse_choice(value: Any) -> list[str] | None:
    """``--prompt-variants``: ``all``, or comma-separated variant names (a list of names from a file)."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
        raise ValueError(f"expected 'all' or variant names, got {value!r}")
    names = [i.strip() for i in items if i.strip()]
    return names or None


def variant_task(task, name: str):
    """The task asked with its prompt variant ``name`` (``default``: the task itself)."""
    if name == DEFAULT:  # the ordinary task: its units are those of a run without --prompt-variants
        return task
    text = task.prompt_variants[name]
    if task.question is not None:  # a multiple-choice task: the paraphrase replaces the question's text
        return replace(task, name=f"{task.name}{SEPARATOR}{name}",
                       question=replace(task.question, text=text, _templates={}),
                       hash=json_digest({"task_hash": task.hash, "prompt_variant": name, "prompt": text}),
                       variant={"prompt_variant": name, "base_task": task.name})
    return replace(task, name=f"{task.name}{SEPARATOR}{name}", prompt=text, _template=None,
                   hash=json_digest({"task_hash": task.hash, "prompt_variant": name, "prompt": text}),
                   variant={"prompt_variant": name, "base_task": task.name})


def expand(tasks: Sequence, chosen: Sequence[str] | None) -> list:
    """Each task once per chosen variant it declares (``all``: ``default`` and every declared one). A name
    that no selected task declares is an error, so a typo does not quietly run nothing."""
    if not chosen:
        return list(tasks)
    declared = {n for t in tasks for n in t.prompt_variants}
    unknown = [n for n in chosen if n not in (ALL, DEFAULT) and n not in declared]
    if unknown:
        raise FocusError(f"--prompt-variants: no selected task declares {', '.join(unknown)}; declared: "
                         f"{', '.join(sorted(declared)) or 'none'}")
    out = []
    for task in tasks:
        if not task.prompt_variants:
            out.append(task)
            continue
        names = [DEFAULT, *task.prompt_variants] if ALL in chosen else [n for n in chosen if
                                                                       n == DEFAULT or n in task.prompt_variants]
        out += [variant_task(task, n) for n in dict.fromkeys(names)]
    return out


def corrupted_task(task, label: str, slug: str):
    """The task on images corrupted as ``label`` says (``blur:3``): named ``<task>@<slug>``, its hash that of
    the task (the corruption is in the fingerprint on its own)."""
    base = task.variant.get("base_task", task.name)
    return replace(task, name=f"{task.name}{SEPARATOR}{slug}",
                   variant={**task.variant, "base_task": base, "corruption": label})


def expand_corruptions(tasks: Sequence, corruptions: Sequence) -> list:
    """Each task clean (as it is) and once per corruption (``data.corruptions.Corruption``)."""
    out = []
    for task in tasks:
        out += [task, *(corrupted_task(task, c.label, c.slug) for c in corruptions)]
    return out


def budget_task(task, fraction: float, seed: int):
    """The task whose probes see ``fraction`` of the training patients, drawn with ``seed``."""
    base = task.variant.get("base_task", task.name)
    return replace(task, name=f"{task.name}{SEPARATOR}train{fraction:g}-s{seed}",
                   variant={**task.variant, "base_task": base, "train_fraction": fraction, "train_seed": seed})


def expand_budgets(tasks: Sequence, fractions: Sequence[float], seeds: Sequence[int]) -> list:
    """Each task with all its training patients (as it is) and once per (fraction below 1, seed)."""
    out = []
    for task in tasks:
        out += [task, *(budget_task(task, f, s) for f in fractions if f < 1 for s in seeds)]
    return out


def rule_task(task, name: str):
    """The task labelled by its rule ``name``: ``<task>@<name>``, its hash covering the rule."""
    rule = task.label_rules[name]
    return replace(task, name=f"{task.name}{SEPARATOR}{name}", relabel=rule if rule.get("positive") else None,
                   cohort=rule.get("cohort", task.cohort),
                   hash=json_digest({"task_hash": task.hash, "label_rule": name, "rule": rule}),
                   variant={**task.variant, "base_task": task.variant.get("base_task", task.name),
                            "label_rule": name})


def expand_label_rules(tasks: Sequence, chosen: Sequence[str]) -> list:
    """Each task as it is and once per chosen rule it declares (``all``: every one)."""
    declared = {n for t in tasks for n in t.label_rules}
    unknown = [n for n in chosen if n != ALL and n not in declared]
    if unknown:
        raise FocusError(f"--label-rules: no selected task declares {', '.join(unknown)}; declared: "
                         f"{', '.join(sorted(declared)) or 'none'}")
    out = []
    for task in tasks:
        names = list(task.label_rules) if ALL in chosen else [n for n in chosen if n in task.label_rules]
        out += [task, *(rule_task(task, n) for n in names)]
    return out

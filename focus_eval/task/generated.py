"""Tasks generated from dataset cards: each registered ``manifest`` dataset gets one task per target it labels,
``<target>_<name>``, built on the shipped base file of that target (its prompt, zero-shot texts and metrics)
with the card's label rule, and one group named after the dataset. No task file is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from focus_eval.task import config as task_config
from focus_eval.task.factory import Group, build_task
from focus_eval.task.task import Task


def card_task_config(card, target: str, roots: Sequence[Path]) -> dict[str, Any]:
    """The resolved config of ``<target>_<card.name>``: the shipped ``_base_<target>.yaml`` plus the card's
    dataset, label rule and description."""
    from focus_eval.resources import resource_dir

    shipped = resource_dir("tasks").resolve()
    base = task_config.resolve(shipped / target / f"_base_{target}.yaml", roots)
    own = {"task": f"{target}_{card.name}", "dataset": card.name, "tag": [],
           "metadata": {"version": card.version, "label_rule": card.targets[target].label_rule,
                        "description": card.description}}
    return task_config.merge(base, own)


def card_tasks(roots: Sequence[Path], defined: Sequence[str]) -> tuple[list[Task], list[Group]]:
    """The generated tasks and groups of every registered card; a task file that defines the same name wins
    (that is how a generated task is customised)."""
    from focus_eval.data.manifests import manifest_cards

    tasks, groups = [], []
    for card in manifest_cards():
        names = []
        for target in card.targets:
            name = f"{target}_{card.name}"
            names.append(name)
            if name not in defined:
                tasks.append(build_task(card_task_config(card, target, roots), card.path))
        groups.append(Group(name=card.name, tasks=tuple(names), aggregation="macro_mean",
                            description=f"All tasks of the user dataset {card.name} ({card.path}).", path=card.path))
    return tasks, groups

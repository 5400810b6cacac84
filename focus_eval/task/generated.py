"""Tasks generated from dataset cards: each registered ``manifest`` dataset gets one task per target it labels,
``<target>_<name>``, built on the shipped base file of that target (its prompt, zero-shot texts and metrics)
with the card's label rule, and one group named after the dataset. A card that maps FunBench fields also gets
the FunBench tasks they allow, on the shipped FunBench base files: ``funbench_l2b_laterality_<name>``,
``funbench_l3a_<lesion>_<name>`` per ``findings.<lesion>``, ``funbench_l4a_normal_abnormal_<name>``,
``funbench_l4b_conditions_<name>`` (a multi-answer question over the card's condition names) and
``funbench_l4c_dr_grading_<name>``, in a group of their own, ``<name>_funbench`` (the group ``<name>`` keeps
the targets' tasks). No task file is written."""

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


def _funbench(card, base: str, name: str, rule: str, roots: Sequence[Path], **own: Any) -> dict[str, Any]:
    from focus_eval.resources import resource_dir

    resolved = task_config.resolve(resource_dir("tasks").resolve() / "funbench" / f"_base_{base}.yaml", roots)
    meta = {"version": card.version, "label_rule": f"{rule} (manifest {card.manifest.name}, as the card "
            f"{card.path.name} maps it)", "description": f"FunBench {name} on the user dataset {card.name}."}
    return task_config.merge(resolved, {"task": name, "dataset": card.name, "tag": [], **own, "metadata": meta})


def funbench_configs(card, roots: Sequence[Path]) -> list[dict[str, Any]]:
    """The resolved configs of the FunBench tasks the card's mapped fields allow."""
    fields, n = card.funbench, card.name
    out = []
    if card.laterality_mapped:
        out.append(_funbench(card, "l2b_laterality", f"funbench_l2b_laterality_{n}",
                             f"column {card.columns['laterality']}: OD -> right, OS -> left", roots))
    for lesion in card.lesions:
        words = lesion.replace("_", " ")
        out.append(_funbench(card, "l3a_lesion", f"funbench_l3a_{lesion}_{n}",
                             f"column {fields['findings.' + lesion]}: 1 -> present, 0 -> absent", roots,
                             target=f"findings.{lesion}", question={"text": f"Does this fundus image show {words}?"},
                             zero_shot={"absent": [f"A fundus photograph without {words}."],
                                        "present": [f"A fundus photograph showing {words}."]}))
    if "abnormal" in fields:
        out.append(_funbench(card, "l4a_normal", f"funbench_l4a_normal_abnormal_{n}",
                             f"column {fields['abnormal']}: 1 -> abnormal, 0 -> normal", roots))
    if "conditions" in fields:
        classes = [{"name": "normal", "value": "normal", "option": "normal fundus"}] + [
            {"name": c, "value": c, "option": c.replace("_", " ")} for c in card.condition_names]
        out.append(_funbench(card, "funbench", f"funbench_l4b_conditions_{n}",
                             f"column {fields['conditions']}: the conditions named, or normal", roots,
                             target="conditions", output_type="multilabel", classes=classes,
                             question={"text": "Which of the following conditions are present in this fundus "
                                               "image?", "answer": "multi",
                                       "distractors": min(2, max(len(classes) - 2, 0))}))
    if "dr_grade" in fields:
        out.append(_funbench(card, "l4c_dr_grading", f"funbench_l4c_dr_grading_{n}",
                             f"column {fields['dr_grade']}: the ICDR grade 0-4", roots))
    return out


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
        configs = funbench_configs(card, roots)
        tasks += [build_task(c, card.path) for c in configs if c["task"] not in defined]
        if configs:
            groups.append(Group(name=f"{card.name}_funbench", tasks=tuple(c["task"] for c in configs),
                                aggregation="macro_mean", path=card.path,
                                description=f"The FunBench tasks of the user dataset {card.name} ({card.path})."))
    return tasks, groups

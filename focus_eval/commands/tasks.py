"""``focus-eval tasks [PATTERN]``: list tasks (and groups) with their dataset, target, cohort, proxy flag,
version and label rule; with ``--data-root`` also the test-split size and positives of each task. User datasets
(``--dataset-path`` or cards under the data root) add their generated ``<target>_<name>`` tasks."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pattern", nargs="?", default=None,
                        help="task names, groups, tags or shell patterns, comma-separated (default: all tasks)")
    parser.add_argument("--include-path", action="append", default=[], metavar="DIR",
                        help="an extra folder of task YAML files (repeatable)")
    parser.add_argument("--data-root", default=None, metavar="DIR",
                        help="also count each task's test images and positives from the datasets in DIR")
    parser.add_argument("--dataset-path", action="append", default=[], metavar="NAME=DIR",
                        help="a user dataset (a dataset.yaml card beside its manifest), or a folder of cards; its "
                             "generated tasks <target>_NAME are listed (repeatable)")
    parser.add_argument("--groups", action="store_true", help="list the groups and their member tasks too")
    parser.add_argument("--json", action="store_true",
                        help="print the tasks (and groups) as JSON records instead of a table")


def count_test_split(tasks: list[Any], data_root: str | Path) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """task name -> (test images, test positives), and one note per dataset that could not be loaded."""
    from focus_eval.data.registry import load_dataset
    from focus_eval.errors import FocusError

    loads: dict[tuple[str, str | None], Any] = {}
    notes: list[str] = []
    counts: dict[str, tuple[str, str]] = {}
    for task in tasks:
        key = (task.dataset, task.cohort)
        if key not in loads:
            try:
                loads[key] = load_dataset(task.dataset, data_root, cohort=task.cohort)
            except FocusError as exc:
                loads[key] = None
                notes.append(f"{task.dataset}: missing ({exc})")
        load = loads[key]
        if load is None:
            counts[task.name] = ("missing", "missing")
            continue
        records = task.records(load, "test")
        # positives: label 1, or for a multi-class task a label other than the first class (as n_pos counts)
        counts[task.name] = (str(len(records)), str(sum(task.label(r) not in (0, [0]) for r in records)))
    return counts, notes


def run(args: argparse.Namespace) -> int:
    from focus_eval.data.manifests import register_manifests
    from focus_eval.data.registry import optional_data_root
    from focus_eval.registry import print_unlisted
    from focus_eval.tables import print_json, print_table, rows_json
    from focus_eval.task import TaskIndex

    root = optional_data_root(args.data_root)  # absolute from here on, whatever the working folder
    register_manifests(root, args.dataset_path)
    index = TaskIndex(args.include_path)
    names = index.expand(args.pattern, include_proxy=True) if args.pattern else index.names
    tasks = index.tasks(names)
    header = ["task", "dataset", "target", "cohort", "proxy", "version"]
    rows = [[t.name, t.dataset, t.target, t.cohort or "-", "yes" if t.proxy else "no", str(t.version)]
            for t in tasks]
    notes: list[str] = []
    if root is not None:
        counts, notes = count_test_split(tasks, root)
        header += ["test", "test_pos"]
        for row, task in zip(rows, tasks):
            row += list(counts[task.name])
    header.append("label rule")
    for row, task in zip(rows, tasks):
        row.append(task.label_rule)
    group_rows = [[g.name, g.aggregation, ", ".join(g.tasks)] for g in index.groups.values()] if args.groups else []
    print_unlisted("focus_eval.tasks")  # a plugin's task folder that could not be read is named (stderr)
    if getattr(args, "json", False):
        listing: dict[str, Any] = {"tasks": rows_json(header, rows), "notes": notes}
        if args.groups:
            listing["groups"] = [{"group": g.name, "aggregation": g.aggregation, "tasks": list(g.tasks)}
                                 for g in index.groups.values()]
        print_json(listing)
        return 0
    print_table(header, rows)
    for note in notes:
        print(note)
    if args.groups:
        print()
        print_table(["group", "aggregation", "tasks"], group_rows)
    return 0

"""The task index: every task, group and tag in the shipped ``tasks/`` folder and in user folders, and the
expansion of a ``--tasks`` spec (names, groups, tags, shell patterns) into leaf task names.

Files whose name starts with ``_`` are never tasks: they are base files for ``include`` or, when named
``_groups.yaml``, group definitions. User folders (``--include-path DIR``) may add tasks, bases and groups but
never replace a shipped one: a name defined twice is an error naming both files, so a result can always be
traced to one definition. A variant gets its own name (e.g. ``glaucoma_brset_all`` with ``cohort: all``).
"""

from __future__ import annotations

import difflib
import fnmatch
import os
from pathlib import Path
from typing import Iterable, Sequence

from focus_eval.data.registry import POOLED_DATASETS, REAL_DATASETS
from focus_eval.errors import FocusError
from focus_eval.task import config as task_config
from focus_eval.task.factory import Group, build_group, build_task
from focus_eval.task.task import Task

SYNTHETIC_WORD = "synth"  # patterns must name it to reach the synthetic datasets
FUNBENCH_WORD = "funbench"  # ... and this to reach the FunBench tasks (their names start with it)
_PATTERN_CHARS = set("*?[")


class TaskIndex:
    """All tasks and groups, loaded and validated up front (a few dozen small YAML files)."""

    def __init__(self, include_paths: Iterable[str | os.PathLike] = ()):
        from focus_eval.registry import entry_point_folders
        from focus_eval.resources import resource_dir

        user_roots, user_files = [], []
        for folder in [*include_paths, *entry_point_folders("focus_eval.tasks")]:
            root = Path(folder).expanduser()
            if root.is_file() and root.suffix in (".yaml", ".yml"):
                user_files.append(root.resolve())  # one task file (lm-eval's --tasks path/to/task.yaml)
                continue
            if not root.is_dir():
                raise FocusError(f"--include-path {folder}: not a folder (or a task YAML file)")
            user_roots.append(root.resolve())
        shipped = resource_dir("tasks").resolve()
        user_roots = [r for r in dict.fromkeys(user_roots) if r != shipped]
        self.roots: tuple[Path, ...] = (*user_roots, shipped)
        self._tasks: dict[str, Task] = {}
        self.groups: dict[str, Group] = {}
        self.tags: dict[str, list[str]] = {}
        for root in reversed(self.roots):  # shipped first, so a clash is reported against the shipped file
            self._load_root(root)
        for path in dict.fromkeys(user_files):
            if not any(root in path.parents for root in self.roots):  # already indexed with its folder
                self._add_task(path)
        self._add_card_tasks()
        self._index_tags()
        self._check_groups()

    # loading

    def _load_root(self, root: Path) -> None:
        for path in task_config.yaml_files(root):
            if path.name == task_config.GROUPS_FILE:
                for entry in task_config.read_groups(path):
                    self._add_group(build_group(entry, path))
            elif not path.name.startswith("_"):
                self._add_task(path)

    def _add_task(self, path: Path) -> None:
        if "task" not in task_config.read_yaml(path):
            raise FocusError(f"{path}: a task file needs its own 'task: NAME' key "
                             "(name base files with a leading '_' so they are not indexed as tasks)")
        task = build_task(task_config.resolve(path, self.roots), path)
        if task.name in self._tasks:
            raise FocusError(f"task {task.name!r} is defined twice: {self._tasks[task.name].path} and {path}; "
                             "give the variant its own name")
        self._tasks[task.name] = task

    def _add_card_tasks(self) -> None:
        """Tasks and groups generated from registered dataset cards (``focus_eval.task.generated``)."""
        from focus_eval.task.generated import card_tasks

        tasks, groups = card_tasks(self.roots, list(self._tasks))
        for task in tasks:
            self._tasks[task.name] = task
        for group in groups:
            clash = self.groups.get(group.name) or self._tasks.get(group.name)
            if clash is not None:
                kind = "group" if group.name in self.groups else "task"
                raise FocusError(f"{group.path}: the dataset name {group.name!r} is also the {kind} "
                                 f"{group.name!r} ({clash.path}), so its tasks would have no group of their own; "
                                 "give the dataset another name")
            self._add_group(group)

    def _add_group(self, group: Group) -> None:
        if group.name in self.groups:
            raise FocusError(f"group {group.name!r} is defined twice: {self.groups[group.name].path} and "
                             f"{group.path}")
        self.groups[group.name] = group

    def _index_tags(self) -> None:
        for task in self._tasks.values():
            for tag in task.tags:
                self.tags.setdefault(tag, []).append(task.name)
        for tag in self.tags:
            self.tags[tag].sort()
            if tag in self._tasks:
                raise FocusError(f"{self._tasks[tag].path}: task name {tag!r} is also used as a tag")

    def _check_groups(self) -> None:
        for group in self.groups.values():
            if group.name in self._tasks or group.name in self.tags:
                raise FocusError(f"{group.path}: group name {group.name!r} is also a task or tag name")
            unknown = [t for t in group.tasks if t not in self._tasks]
            if unknown:
                raise FocusError(f"{group.path}: group {group.name!r} lists unknown task(s) {', '.join(unknown)}"
                                 f"{self._suggest(unknown[0])}")

    # queries

    @property
    def names(self) -> list[str]:
        """Every task name, sorted."""
        return sorted(self._tasks)

    def get(self, name: str) -> Task:
        if name not in self._tasks:
            raise FocusError(f"unknown task {name!r}{self._suggest(name)}")
        return self._tasks[name]

    def tasks(self, names: Iterable[str] | None = None) -> list[Task]:
        return [self.get(n) for n in (self.names if names is None else names)]

    def _suggest(self, name: str) -> str:
        known = [*self._tasks, *self.groups, *self.tags]
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        if close:
            return f"; did you mean {', '.join(close)}?"
        return "; run 'focus-eval tasks' to list tasks, groups and tags"

    def _members(self, item: str, include_proxy: bool) -> list[str]:
        if item in self._tasks:
            return [item]  # a task named explicitly runs even if it is a proxy
        if item in self.groups:
            names = list(self.groups[item].tasks)
        elif item in self.tags:
            names = list(self.tags[item])
        elif _PATTERN_CHARS & set(item):
            # benchmark datasets only, unless the pattern spells out synth or a user dataset's name; FunBench
            # tasks only for a pattern that says funbench (so *_brset stays the yes/no suite)
            names = [n for n in fnmatch.filter(self.names, item) if (SYNTHETIC_WORD in item
                     or self._tasks[n].dataset in REAL_DATASETS + POOLED_DATASETS or self._tasks[n].dataset in item)
                     and (FUNBENCH_WORD in item or not n.startswith(FUNBENCH_WORD + "_"))]
            if not names:
                raise FocusError(f"task pattern {item!r} matches no task{self._suggest(item.strip('*?[]'))}")
        else:
            raise FocusError(f"unknown task, group or tag {item!r}{self._suggest(item)}")
        return [n for n in names if include_proxy or not self._tasks[n].proxy]

    def expand(self, spec: str | Sequence[str], include_proxy: bool = False) -> list[str]:
        """Leaf task names for a ``--tasks`` spec: comma-separated task names, group names, tags and shell
        patterns over task names (``glaucoma_*``). Order follows the spec (groups in their listed order, tags
        and patterns sorted), duplicates removed. Proxy tasks reached through a group, tag or pattern are
        skipped unless ``include_proxy``; a proxy task named explicitly is kept. A pattern reaches tasks on
        the synthetic datasets only when it spells out ``synth`` (``*_synth_*``), so ``glaucoma_*`` means the
        benchmark's glaucoma tasks, and the FunBench tasks only when it spells out ``funbench``
        (``funbench_*synth*``), so ``*_brset`` means the yes/no tasks."""
        items = spec.split(",") if isinstance(spec, str) else list(spec)
        items = [i.strip() for i in items if i.strip()]
        if not items:
            raise FocusError("no tasks given; pass --tasks NAME[,NAME...] (names, groups, tags or patterns)")
        out: dict[str, None] = {}
        for item in items:
            out.update(dict.fromkeys(self._members(item, include_proxy)))
        if not out:
            raise FocusError(f"--tasks {','.join(items)} selects only proxy tasks; add --include-proxy to run them")
        return list(out)

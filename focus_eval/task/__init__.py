"""Tasks: declarative YAML files under ``tasks/`` loaded into validated Task objects, groups and tags."""

from focus_eval.task.factory import Group
from focus_eval.task.index import TaskIndex
from focus_eval.task.task import DATASET_TITLES, PROMPT_CONTEXT, Task

__all__ = ["DATASET_TITLES", "PROMPT_CONTEXT", "Group", "Task", "TaskIndex"]

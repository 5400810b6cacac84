"""Build validated Task and Group objects from resolved task configs (every error names the file)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from focus_eval.data.records import SPLITS, TARGETS
from focus_eval.errors import FocusError
from focus_eval.task.task import Task, compile_prompt
from focus_eval.task.label_rules import check_label_rules
from focus_eval.task.variants import check_prompt_variants

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
AGGREGATIONS = ("macro_mean",)
REQUIRED = ("task", "dataset", "target", "splits", "prompt", "zero_shot", "metric_list", "metadata")
# multi-class, multi-label and multiple-choice tasks: classes instead of a yes/no prompt (zero_shot optional)
CLASS_REQUIRED = ("task", "dataset", "target", "splits", "classes", "metric_list", "metadata")


def dataset_names() -> tuple[str, ...]:
    """Registry names, read from the registry itself so the two never drift apart."""
    from focus_eval.data.registry import dataset_names

    return tuple(dataset_names())


def config_hash(config: dict[str, Any]) -> str:
    """sha256 of the resolved config as canonical JSON (sorted keys), independent of file layout."""
    text = json.dumps(config, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _fail(path: Path, message: str) -> FocusError:
    return FocusError(f"{path}: {message}")


def _string_list(value: Any, what: str, path: Path, allow_empty: bool = True) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise _fail(path, f"{what} must be a list of non-empty strings")
    if not value and not allow_empty:
        raise _fail(path, f"{what} must not be empty")
    return list(value)


def _check_name(name: Any, what: str, path: Path) -> str:
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise _fail(path, f"{what} {name!r} must be letters, digits, '_', '.' or '-'")
    return name


def _check_splits(value: Any, path: Path) -> dict[str, str]:
    if not isinstance(value, dict) or set(value) != set(SPLITS):
        raise _fail(path, f"'splits' must map exactly {', '.join(SPLITS)} to split names")
    bad = {k: v for k, v in value.items() if v not in SPLITS}
    if bad:
        raise _fail(path, f"'splits' names unknown split(s) {bad}; dataset splits are {', '.join(SPLITS)}")
    return {k: value[k] for k in SPLITS}


def _check_zero_shot(value: Any, path: Path) -> dict[str, list[str]]:
    if not isinstance(value, dict) or set(value) != {"negative", "positive"}:
        raise _fail(path, "'zero_shot' must have exactly the keys negative and positive")
    return {side: _string_list(value[side], f"zero_shot.{side}", path, allow_empty=False)
            for side in ("negative", "positive")}


def _check_metric_list(value: Any, path: Path, classes: bool = False) -> list[dict[str, Any]]:
    from focus_eval.results.schema import CLASS_METRICS, LOWER_IS_BETTER, METRICS

    known = CLASS_METRICS if classes else METRICS
    if not isinstance(value, list) or not value:
        raise _fail(path, "'metric_list' must be a non-empty list of {metric: NAME, higher_is_better: BOOL}")
    out = []
    for entry in value:
        if not isinstance(entry, dict) or "metric" not in entry or set(entry) - {"metric", "higher_is_better"}:
            raise _fail(path, f"metric_list entry {entry!r} must be {{metric: NAME, higher_is_better: BOOL}}")
        name = entry["metric"]
        if name not in known:
            raise _fail(path, f"unknown metric {name!r} in metric_list; known: {', '.join(known)}")
        higher = entry.get("higher_is_better", name not in LOWER_IS_BETTER)
        if higher != (name not in LOWER_IS_BETTER):
            raise _fail(path, f"metric_list: higher_is_better for {name} must be {name not in LOWER_IS_BETTER}")
        out.append({"metric": name, "higher_is_better": higher})
    return out


def _check_metadata(value: Any, path: Path) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, "'metadata' must be a mapping with version, label_rule and description")
    if value.get("version") is None or isinstance(value["version"], (bool, dict, list)):
        raise _fail(path, "metadata.version is required (a number or a string)")
    if not isinstance(value.get("label_rule"), str) or not value["label_rule"].strip():
        raise _fail(path, "metadata.label_rule is required: how the target is derived from the source labels")
    if not isinstance(value.get("description", ""), str):
        raise _fail(path, "metadata.description must be a string")
    return {"version": value["version"], "label_rule": value["label_rule"].strip(),
            "description": value.get("description", "").strip()}


def _output_fields(config: dict[str, Any], path: Path) -> dict[str, Any]:
    """The Task fields that depend on the output type: target check, prompt, zero-shot texts, label space and
    question. Binary tasks need ``prompt`` and ``zero_shot`` (negative/positive); the others ``classes``."""
    from focus_eval.task.outputs import build_label_space, check_class_prompts, check_output_type

    output_type = check_output_type(config.get("output_type", "binary"), path)
    required = REQUIRED if output_type == "binary" else CLASS_REQUIRED
    missing = [k for k in required if k not in config]
    if missing:
        raise _fail(path, f"missing required key(s) {', '.join(missing)} (directly or through 'include')")
    if output_type == "binary":
        if config["target"] not in TARGETS:
            raise _fail(path, f"unknown target {config['target']!r}; known targets: {', '.join(TARGETS)}")
        if not isinstance(config["prompt"], str) or not config["prompt"].strip():
            raise _fail(path, "'prompt' must be a non-empty Jinja template")
        return {"output_type": output_type, "prompt": config["prompt"],
                "zero_shot": _check_zero_shot(config["zero_shot"], path),
                "metric_list": _check_metric_list(config["metric_list"], path)}
    from focus_eval.task.questions import build_question, answers_multi

    multilabel = answers_multi(config, output_type, path)  # multilabel tasks answer "multi", multiclass "single"
    space = build_label_space(config, multilabel, path)
    return {"output_type": output_type, "prompt": "", "label_space": space,
            "zero_shot": check_class_prompts(config.get("zero_shot"), space, path),
            "metric_list": _check_metric_list(config["metric_list"], path, classes=True),
            "question": build_question(config, output_type, space, path)}


def build_task(config: dict[str, Any], path: Path) -> Task:
    """A Task from a resolved config (includes applied); any problem is a FocusError naming ``path``."""
    missing = [k for k in ("task", "dataset", "target") if k not in config]
    if missing:
        raise _fail(path, f"missing required key(s) {', '.join(missing)} (directly or through 'include')")
    name = _check_name(config["task"], "task name", path)
    datasets = dataset_names()
    if config["dataset"] not in datasets:
        raise _fail(path, f"unknown dataset {config['dataset']!r}; known datasets: {', '.join(datasets)}")
    output = _output_fields(config, path)
    cohort = config.get("cohort")
    if cohort is not None and not (isinstance(cohort, str) and cohort.strip()):
        raise _fail(path, "'cohort' must be the name of one of the dataset's cohorts")
    proxy = config.get("proxy", False)
    if not isinstance(proxy, bool):
        raise _fail(path, "'proxy' must be true or false")
    tags = [_check_name(t, "tag", path) for t in _string_list(config.get("tag", []), "'tag'", path)]
    task = Task(
        name=name, dataset=config["dataset"], target=config["target"], cohort=cohort, proxy=proxy,
        tags=tuple(dict.fromkeys(tags)), splits=_check_splits(config["splits"], path),
        metadata=_check_metadata(config["metadata"], path), path=path,
        hash=config_hash({k: v for k, v in config.items() if k not in ("prompt_variants", "label_rules")}),
        prompt_variants=check_prompt_variants(config.get("prompt_variants"), path),
        label_rules=check_label_rules(config.get("label_rules"), path),
        config=config, _template=compile_prompt(output["prompt"], path),
        skip_methods=_check_skip_methods(config.get("skip_methods", {}), path), **output,
    )
    task.render_prompt(None)  # a template reaching outside the prompt context fails here, at load time
    if task.question is not None:
        task.question.check(task)
    return task


def _check_skip_methods(value: Any, path: Path) -> dict[str, str]:
    """``skip_methods``: method name -> the reason it does not score this task (a non-empty text)."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) and v.strip()
                                              for k, v in value.items()):
        raise _fail(path, "'skip_methods' must map method names to the reason each one skips this task")
    return {k: " ".join(v.split()) for k, v in value.items()}


@dataclass
class Group:
    """Named set of tasks scored together by a macro mean (every member task weighs the same)."""

    name: str
    tasks: tuple[str, ...]
    aggregation: str
    description: str
    path: Path


def build_group(entry: dict[str, Any], path: Path) -> Group:
    """A Group from one entry of a ``_groups.yaml`` file (members are checked later, against the index)."""
    name = _check_name(entry.get("group"), "group name", path)
    members = _string_list(entry.get("task"), f"group {name}: 'task'", path, allow_empty=False)
    aggregation = entry.get("aggregation", "macro_mean")
    if aggregation not in AGGREGATIONS:
        raise _fail(path, f"group {name}: unknown aggregation {aggregation!r}; known: {', '.join(AGGREGATIONS)}")
    metadata = entry.get("metadata") or {}
    if not isinstance(metadata, dict) or set(metadata) - {"description"}:
        raise _fail(path, f"group {name}: 'metadata' may hold only a description")
    return Group(name=name, tasks=tuple(dict.fromkeys(members)), aggregation=aggregation,
                 description=str(metadata.get("description", "")), path=path)

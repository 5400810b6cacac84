"""The Task record: one (target, dataset) evaluation, which records it uses, and its sandboxed prompt.

A prompt template sees only this context, never a record's labels or its ``extra`` columns:

    task           the task name                      dr_brset
    target         the target name                    dr
    dataset        the dataset registry name          brset
    dataset_title  the dataset's display name         BRSET
    age, sex       the record's age (years) and sex   64.0, female (None when unknown or no record)

Any other name (``record``, ``dr``, ``glaucoma``, ``extra``, ...) is undefined and fails the render, so no
template can reach a target-defining field.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from focus_eval.errors import FocusError

DATASET_TITLES = {
    "brset": "BRSET", "mbrset": "mBRSET", "papila": "PAPILA", "rfmid": "RFMiD", "rfmid2": "RFMiD 2.0",
    "idrid": "IDRiD", "messidor2": "Messidor-2", "refuge": "REFUGE", "g1020": "G1020", "jsiec": "JSIEC1000",
    "synth_desktop": "Synthetic (desktop)", "synth_mobile": "Synthetic (mobile)",
}
PROMPT_CONTEXT = ("task", "target", "dataset", "dataset_title", "age", "sex")


def compile_prompt(text: str, path: Path):
    """A template of the bounded prompt sandbox; a syntax error (or a forbidden statement) names the task file."""
    from jinja2 import TemplateSyntaxError

    from focus_eval.files import PARSED_TEXT_BYTES

    try:
        # kept for the process only up to the size of a YAML text kept (a prompt is a few hundred characters)
        return _compiled(text) if len(text) <= PARSED_TEXT_BYTES else _compiled.__wrapped__(text)
    except TemplateSyntaxError as exc:
        raise FocusError(f"{path}: prompt is not a valid Jinja template (line {exc.lineno}): {exc.message}") from None


@functools.lru_cache(maxsize=1024)
def _compiled(text: str):
    """One compiled template per prompt text and process (a task index compiles the same prompts for every task
    that includes them, and again for every index built): a template keeps no state between renders (the
    sandbox's bounds are per render and thread). A syntax error is raised again each time, never kept."""
    from focus_eval.task.sandbox import PromptSandbox

    return PromptSandbox().from_string(text)


def render_template(template, context: dict[str, Any], path: Path, allowed: tuple[str, ...]) -> str:
    """Render a sandboxed template with ``context``; every failure is a FocusError naming the task file."""
    from jinja2 import TemplateError, UndefinedError
    from jinja2.exceptions import SecurityError

    from focus_eval.task.sandbox import RenderLimit

    try:
        return template.environment.render(template, context)
    except UndefinedError as exc:
        raise FocusError(f"{path}: prompt uses a name outside the prompt context ({exc.message}); "
                         f"allowed: {', '.join(allowed)}") from None
    except SecurityError as exc:
        raise FocusError(f"{path}: prompt blocked by the sandbox: {exc}") from None
    except RenderLimit as exc:
        raise FocusError(f"{path}: prompt stopped: {exc}") from None
    except (TemplateError, ArithmeticError, LookupError, TypeError, ValueError, RecursionError,
            MemoryError) as exc:
        # the template's own mistake (e.g. 1/0 or a bad filter argument): the task file is to blame
        raise FocusError(f"{path}: prompt cannot be rendered: {type(exc).__name__}: {exc}") from None


@dataclass(eq=False)
class Task:
    """A task after include resolution and validation. ``hash`` is the sha256 of the resolved config."""

    name: str
    dataset: str
    target: str
    cohort: str | None
    proxy: bool
    tags: tuple[str, ...]
    splits: dict[str, str]
    prompt: str
    zero_shot: dict[str, list[str]]
    metric_list: list[dict[str, Any]]
    metadata: dict[str, Any]
    path: Path
    hash: str
    config: dict[str, Any] = field(default_factory=dict, repr=False)
    _template: Any = field(default=None, repr=False)
    # non-binary tasks (focus_eval.task.outputs): the output type, the label space (classes) and, for tasks an
    # MLLM answers by choosing options, the question (focus_eval.task.questions)
    output_type: str = "binary"
    label_space: Any = None
    question: Any = None
    # method name -> why that method does not score this task (FunBench leaves some tasks out of some modes)
    skip_methods: dict[str, str] = field(default_factory=dict)
    # named paraphrases of ``prompt`` (``prompt_variants:`` in the task file; focus_eval.task.variants)
    prompt_variants: dict[str, str] = field(default_factory=dict)
    # what makes this task a variant of another (prompt_variant, base_task, ...): added to every unit's
    # fingerprint and so copied into its results line's extra
    variant: dict[str, Any] = field(default_factory=dict)
    # named alternative label rules (``label_rules:``), and the one this task is labelled by (None: the reader's)
    label_rules: dict[str, dict] = field(default_factory=dict)
    relabel: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def binary(self) -> bool:
        return self.output_type == "binary"

    @property
    def multilabel(self) -> bool:
        return self.label_space is not None and self.label_space.multilabel

    @property
    def n_classes(self) -> int:
        return 2 if self.label_space is None else len(self.label_space.classes)

    @property
    def class_names(self) -> list[str]:
        return ["negative", "positive"] if self.label_space is None else self.label_space.names

    def output_notes(self) -> dict[str, Any]:
        """What a non-binary unit's meta records for scoring (output type, classes); nothing for binary tasks."""
        if self.binary:
            return {}
        return {"output_type": self.output_type, "classes": self.class_names, "multilabel": self.multilabel,
                "ordinal": self.label_space.ordinal}

    @property
    def version(self) -> Any:
        return self.metadata.get("version")

    @property
    def label_rule(self) -> str:
        return self.metadata.get("label_rule", "")

    @property
    def description(self) -> str:
        return self.metadata.get("description", "")

    def prompt_context(self, record: Any = None) -> dict[str, Any]:
        """The only names a prompt template can use (see the module docstring)."""
        return {
            "task": self.name,
            "target": self.target,
            "dataset": self.dataset,
            "dataset_title": DATASET_TITLES.get(self.dataset, self.dataset),
            "age": getattr(record, "age", None),
            "sex": getattr(record, "sex", None),
        }

    def render_prompt(self, record: Any = None) -> str:
        """The MLLM prompt for one record, rendered in the bounded sandbox (``focus_eval.task.sandbox``)."""
        if self._template is None:
            self._template = compile_prompt(self.prompt, self.path)
        return render_template(self._template, self.prompt_context(record), self.path, PROMPT_CONTEXT)

    def label(self, record: Any) -> int | list[int] | None:
        """0/1 for a binary task; a class index, or sorted class indices for a multi-answer task."""
        if self.label_space is not None:
            return self.label_space.label(record)
        if self.relabel is not None:
            from focus_eval.task.label_rules import rule_label

            return rule_label(self.relabel, record)
        return record.label(self.target)

    def label_vector(self, record: Any) -> int | list[int]:
        """The label as a probe fits it: 0/1 or a class index, or a 0/1 row over the classes (multi answer)."""
        label = self.label(record)
        if not self.multilabel:
            return label
        return [int(k in label) for k in range(self.n_classes)]

    def records(self, records: Iterable[Any], split: str = "test") -> list[Any]:
        """The records of one split (a key of ``splits``: train, val or test) that define this task's label."""
        if split not in self.splits:
            raise FocusError(f"task {self.name} has no split {split!r}; known: {', '.join(self.splits)}")
        wanted = self.splits[split]
        return [r for r in getattr(records, "records", records)
                if r.split == wanted and self.label(r) is not None]

    def to_dict(self) -> dict[str, Any]:
        """What a run manifest records about the task."""
        out = {"name": self.name, "dataset": self.dataset, "target": self.target, "cohort": self.cohort,
               "proxy": self.proxy, "tags": list(self.tags), "splits": dict(self.splits),
               "metadata": dict(self.metadata), "path": str(self.path), "hash": self.hash}
        return out if self.binary else {**out, **self.output_notes()}

"""The ``knowledge_prompt`` method (FunBench's E-mode II, the language model alone): per test image, its label
becomes an indirect description from a knowledge table, placed before the task's multiple-choice question, and
the MLLM answers with no image; the answer is scored as ``multiple_choice`` scores it (first-token letter
distribution, the greedy answer read by letter, else by sentence embedding).

The knowledge table is ``_knowledge.yaml`` beside the task file (for the shipped tasks
``tasks/funbench/_knowledge.yaml``; a task folder without one uses the shipped table):

    sources: {key: full citation of a public ophthalmology source}
    fields:
      <label field>:                  # the task's target: laterality, dr_grade, findings.hemorrhage, ...
        <option text>: {text: one short description, source: key}

keyed by the class's option text (lower case), so that the classes of different datasets that offer the same
option share one description; ``<field>.*`` (e.g. ``lesion_quadrants.*``) serves every name of a named field
that has no entry of its own. A multi-answer label is described by the descriptions of all its true classes. A
class without a description is an error naming the table and the missing key. The sample line's ``question``
is the text as sent: the description, then the question.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from focus_eval.adapters.mllm_interface import MLLMAdapter
from focus_eval.errors import FocusError
from focus_eval.files import load_yaml_file
from focus_eval.runner.batching import join_lists
from focus_eval.runner.methods.base import RunContext
from focus_eval.runner.methods.multiple_choice import MIN_NEW_TOKENS, MultipleChoice

TABLE_NAME = "_knowledge.yaml"
LEAD = "Description of the fundus image: "


@dataclass(frozen=True)
class KnowledgeTable:
    """A knowledge table: its file, the sources it cites and ``{field: {option text: (text, source)}}``."""

    path: Path
    sources: dict[str, str]
    fields: dict[str, dict[str, tuple[str, str]]]
    sha256: str

    def entry(self, field: str, option: str) -> tuple[str, str] | None:
        """(description, source key) of a class of ``field`` offered as ``option``, or None."""
        key = option.strip().lower()
        entries = self.fields.get(field)
        if entries is None and "." in field:
            entries = self.fields.get(field.split(".", 1)[0] + ".*")
        return (entries or {}).get(key)


def _fail(path: Path, message: str) -> FocusError:
    return FocusError(f"knowledge table {path}: {message}")


@lru_cache(maxsize=8)
def _read(path: str, stamp: tuple) -> KnowledgeTable:
    import yaml

    from focus_eval.digests import file_sha256

    where = Path(path)
    try:
        raw = load_yaml_file(where)
    except (OSError, yaml.YAMLError) as exc:
        raise _fail(where, f"cannot be read: {exc}") from None
    if not isinstance(raw, dict) or set(raw) != {"sources", "fields"}:
        raise _fail(where, "needs exactly two keys, 'sources' and 'fields'")
    sources = raw["sources"]
    if not isinstance(sources, dict) or not all(isinstance(v, str) and v.strip() for v in sources.values()):
        raise _fail(where, "'sources' must map keys to citations")
    fields: dict[str, dict[str, tuple[str, str]]] = {}
    for field, entries in (raw["fields"] or {}).items():
        if not isinstance(entries, dict):
            raise _fail(where, f"fields.{field} must map option texts to {{text, source}}")
        fields[str(field)] = {}
        for option, entry in entries.items():
            if not isinstance(entry, dict) or set(entry) != {"text", "source"} or not str(entry["text"]).strip():
                raise _fail(where, f"fields.{field}.{option} must be {{text: ..., source: ...}}")
            if entry["source"] not in sources:
                raise _fail(where, f"fields.{field}.{option} cites {entry['source']!r}, which 'sources' lacks")
            fields[str(field)][str(option).strip().lower()] = (" ".join(str(entry["text"]).split()),
                                                              entry["source"])
    return KnowledgeTable(where, dict(sources), fields, file_sha256(where))


def table_path(task) -> Path:
    """``_knowledge.yaml`` beside the task file, else the shipped FunBench table."""
    from focus_eval.resources import resource_dir

    beside = Path(task.path).parent / TABLE_NAME
    return beside if beside.is_file() else resource_dir("tasks") / "funbench" / TABLE_NAME


def table_for(task) -> KnowledgeTable:
    path = table_path(task)
    try:
        stat = path.stat()
    except OSError as exc:
        raise _fail(path, f"cannot be read: {exc}") from None
    return _read(str(path), (stat.st_size, stat.st_mtime_ns))


def missing(task) -> list[str]:
    """The ``field: option`` keys of the task's classes that its knowledge table does not describe."""
    table, field = table_for(task), task.label_space.field
    return [f"{field}: {c.option.strip().lower()!r} (class {c.name})" for c in task.label_space.classes
            if table.entry(field, c.option) is None]


def describe(task, label: int | list[int], table: KnowledgeTable | None = None) -> str:
    """The description of a label: its class's, or for a multi-answer label those of every true class
    (``table``: the task's table when the caller has it already)."""
    table, classes = table or table_for(task), task.label_space.classes
    texts = []
    for k in (label if isinstance(label, list) else [label]):
        found = table.entry(task.label_space.field, classes[k].option)
        if found is None:
            raise _fail(table.path, f"no description for {task.label_space.field}: "
                                    f"{classes[k].option.strip().lower()!r} (task {task.name})")
        texts.append(found[0])
    return " ".join(texts)


class KnowledgePrompt(MultipleChoice):
    """``knowledge_prompt``: the label's description, then the question; letter probabilities and a greedy
    answer per (image, question), with no image."""

    name = "knowledge_prompt"
    hard_label = ("pred = the option letters of the greedy answer, else the option closest by sentence embedding "
                  "(no image: the label's description precedes the question)")
    extends = None
    on_request = True
    reads_images = False

    def inputs(self, task) -> dict:
        try:
            return {"knowledge_sha256": table_for(task).sha256}
        except FocusError:
            return {"knowledge_sha256": None}  # ``score`` fails the unit with the reason

    def score(self, context: RunContext, units) -> None:
        ready = []
        for u in units:
            try:
                gaps = missing(u.task)
            except FocusError as exc:  # a table that cannot be read fails its units, not the run
                context.fail(u, str(exc))
                continue
            if gaps:
                context.fail(u, f"knowledge table {table_path(u.task)} has no description for {'; '.join(gaps)}")
            else:
                ready.append(u)
        if ready:
            super().score(context, ready)

    def image_sources(self, context: RunContext, records) -> dict:
        return {r.image_id: (Path(r.path), True) for r in records}  # no image is read

    def prompts(self, context: RunContext, todo, records) -> list[list]:
        asked = super().prompts(context, todo, records)
        tables = {u.task.name: table_for(u.task) for units in todo.values() for u in units}  # once per task
        return [[replace(q, prompt=f"{LEAD}{describe(u.task, u.task.label(r), tables[u.task.name])}\n{q.prompt}")
                 for u, q in zip(todo[r.image_id], questions)] for r, questions in zip(records, asked)]

    def ask_all(self, context: RunContext, adapter: MLLMAdapter, items, prompts, writer, bar) -> None:
        length = max(adapter.max_new_tokens, MIN_NEW_TOKENS)

        def ask(rows):
            return adapter.score_options_and_generate_text([q.prompt for q in rows], [q.letters for q in rows],
                                                           max_new_tokens=length)

        step = max(1, int(context.batch_size))
        for start in range(0, len(items), step):
            chunk = range(start, min(len(items), start + step))
            answers = context.batches.run(ask, [[q for i in chunk for q in prompts[i]]], join_lists)
            for i in chunk:
                writer(i, answers[:len(prompts[i])], None)
                answers = answers[len(prompts[i]):]
            if bar:
                bar.update(len(chunk))

    @staticmethod
    def notes(max_new_tokens: int) -> dict:
        return {**MultipleChoice.notes(max_new_tokens), "image": None,
                "knowledge": "the label's description from the task's knowledge table, before the question"}

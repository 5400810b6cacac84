"""Multiple-choice questions from labels: a task's ``question`` block (a Jinja question text, single or multi
answer, the number of distractors, the layout) turned into (question, options, answer) for one image.

The options are the true class (or classes), the classes the block lists under ``always`` (shown in every
question, true or not) and ``distractors`` other classes of the task drawn at random, in a random order; both
draws come from one seed per (run seed, task, image), recorded in the sample line, so the same seed gives the
same question. FunBench's instruction is prepended: one text for single-answer
questions, another for multi-answer ones (kept verbatim for comparability). The question text sees the
prompt context of ``focus_eval.task.task`` (never the labels); the layout sees ``instruction``, ``question``
and ``options`` (a list of {letter, text}).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from focus_eval.errors import FocusError

SINGLE_INSTRUCTION = ("Please choose the most suitable option based on the image and the question. "
                      "Answer with the option's letter directly")
MULTI_INSTRUCTION = ("Please choose all the suitable options based on the image and the question. Answer with "
                     "the option's letter directly. Please separate the answers with commas if needed.")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
DEFAULT_LAYOUT = ("{{ instruction }}\n{{ question }}\n"
                  "{% for option in options %}{{ option.letter }}. {{ option.text }}\n{% endfor %}")
DEFAULT_TEXTS = {"single": "Which of the following options best describes this fundus image?",
                 "multi": "Which of the following conditions are present in this fundus image?"}
ANSWERS = ("single", "multi")
QUESTION_KEYS = ("text", "answer", "distractors", "always", "layout")
LAYOUT_CONTEXT = ("instruction", "question", "options")


@dataclass(frozen=True)
class Rendered:
    """One question as asked: the full prompt, the classes shown as options A, B, ... in order, the correct
    letters ("B" or "A,C") and the option seed."""

    prompt: str
    options: list[int]
    answer: str
    seed: int

    @property
    def letters(self) -> list[str]:
        return list(LETTERS[: len(self.options)])


@dataclass(frozen=True)
class Question:
    """The question block of a task (see the module docstring)."""

    text: str
    answer: str
    distractors: int | None
    layout: str
    path: Path
    always: tuple[int, ...] = ()
    _templates: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def instruction(self) -> str:
        return MULTI_INSTRUCTION if self.answer == "multi" else SINGLE_INSTRUCTION

    def template(self, which: str):
        if which not in self._templates:
            from focus_eval.task.task import compile_prompt

            self._templates[which] = compile_prompt(getattr(self, which), self.path)
        return self._templates[which]

    def check(self, task) -> None:
        """Render a question for no record with the first classes, so a bad template fails at load time."""
        self.render(task, None, [0] if self.answer == "multi" else 0, 0)

    def draw(self, label: int | list[int], n_classes: int, seed: int) -> list[int]:
        """The option classes, in the order shown: the true class(es), the ``always`` classes and the
        distractors (drawn from the other classes), shuffled."""
        truth = sorted(label) if isinstance(label, list) else [label]
        truth += [k for k in self.always if k not in truth]
        rng = np.random.default_rng(seed)
        wrong = [k for k in range(n_classes) if k not in truth]
        count = len(wrong) if self.distractors is None else min(self.distractors, len(wrong))
        chosen = [wrong[i] for i in sorted(rng.choice(len(wrong), size=count, replace=False))] if count else []
        options = truth + chosen
        return [options[i] for i in rng.permutation(len(options))]

    def render(self, task, record: Any, label: int | list[int], seed: int) -> Rendered:
        """The question for one record with label ``label`` under option seed ``seed``."""
        from focus_eval.task.task import PROMPT_CONTEXT, render_template

        options = self.draw(label, task.n_classes, seed)
        if len(options) > len(LETTERS):
            raise FocusError(f"{self.path}: {len(options)} options; at most {len(LETTERS)} can be lettered")
        truth = set(label) if isinstance(label, list) else {label}
        question = render_template(self.template("text"), task.prompt_context(record), self.path, PROMPT_CONTEXT)
        classes = task.label_space.classes
        shown = [{"letter": LETTERS[i], "text": classes[k].option} for i, k in enumerate(options)]
        prompt = render_template(self.template("layout"), {"instruction": self.instruction, "question": question,
                                                           "options": shown}, self.path, LAYOUT_CONTEXT)
        answer = ",".join(LETTERS[i] for i, k in enumerate(options) if k in truth)
        return Rendered(prompt.strip(), options, answer, seed)


def option_seed(run_seed: int, task: str, image_id: str) -> int:
    """The seed of one question's options: fixed by the run seed, the task and the image."""
    return zlib.crc32(f"{run_seed}:{task}:{image_id}".encode())


def _fail(path: Path, message: str) -> FocusError:
    return FocusError(f"{path}: {message}")


def _block(config: dict[str, Any], output_type: str, path: Path) -> dict[str, Any]:
    block = config.get("question")
    if block is None:
        if output_type == "multiple_choice":
            raise _fail(path, "a multiple_choice task needs a 'question' block (text, answer, distractors)")
        return {}
    if not isinstance(block, dict) or set(block) - set(QUESTION_KEYS):
        raise _fail(path, f"'question' must be a mapping with some of {', '.join(QUESTION_KEYS)}")
    return block


def answers_multi(config: dict[str, Any], output_type: str, path: Path) -> bool:
    """Whether the task's questions take several answers (its labels are then sets of classes)."""
    default = "multi" if output_type == "multilabel" else "single"
    answer = _block(config, output_type, path).get("answer", default)
    allowed = {"multilabel": ("multi",), "multiclass": ("single",)}.get(output_type, ANSWERS)
    if answer not in allowed:
        raise _fail(path, f"question.answer must be {' or '.join(allowed)} for a {output_type} task, got {answer!r}")
    return answer == "multi"


def build_question(config: dict[str, Any], output_type: str, space, path: Path) -> Question:
    """The question of a non-binary task (a default one for multiclass and multilabel tasks without a block)."""
    block = _block(config, output_type, path)
    answer = "multi" if space.multilabel else "single"
    distractors = block.get("distractors")
    if distractors is not None and (isinstance(distractors, bool) or not isinstance(distractors, int)
                                    or distractors < 1):
        raise _fail(path, f"question.distractors must be a whole number of at least 1 (or left out for every "
                          f"other class), got {distractors!r}")
    texts = {key: block.get(key, default) for key, default in (("text", DEFAULT_TEXTS[answer]),
                                                               ("layout", DEFAULT_LAYOUT))}
    for key, text in texts.items():
        if not isinstance(text, str) or not text.strip():
            raise _fail(path, f"question.{key} must be a non-empty Jinja template")
    return Question(texts["text"], answer, distractors, texts["layout"], path,
                    always=_always(block.get("always", []), space, path))


def _always(value: Any, space, path: Path) -> tuple[int, ...]:
    """``question.always``: names of classes offered in every question, as class indices."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(path, "question.always must be a list of class names")
    unknown = [v for v in value if v not in space.names]
    if unknown:
        raise _fail(path, f"question.always names unknown class(es) {', '.join(unknown)}; "
                          f"classes: {', '.join(space.names)}")
    return tuple(space.names.index(v) for v in dict.fromkeys(value))


def guess_of_questions(task, records, run_seed: int = 0) -> dict[str, float | None]:
    """The exact random-guess baseline (``focus_eval.metrics.classes.random_guess``) of the questions ``task``
    asks of ``records`` under ``run_seed``, computed from the options alone, with no model: what a results
    line's ``extra.random_guess`` holds for these records."""
    from types import SimpleNamespace

    from focus_eval.metrics.classes import random_guess

    y = np.zeros((len(records), task.n_classes))
    options = np.zeros_like(y)
    for row, record in enumerate(records):
        label = task.label(record)
        y[row, label] = 1
        drawn = task.question.draw(label, task.n_classes, option_seed(run_seed, task.name, record.image_id))
        options[row, drawn] = 1
    arrays = SimpleNamespace(y=y, options=options, error=np.zeros(len(records), dtype=bool),
                             multilabel=task.multilabel)
    return random_guess(arrays)

"""The ``multiple_choice`` method (FunBench's E-mode III, holistic) for multimodal LLMs on multi-class,
multi-label and multiple-choice tasks: each image's question of every task (options in a seeded order, see
``focus_eval.task.questions``) asked in one batched call that encodes the image once; per question the
first-token distribution over the option letters and a short greedy answer, read by letter first, else by
sentence-embedding similarity to the option texts (``focus_eval.adapters.mllm_choice``). The sample line keeps
the question, the options, the correct letters, the option seed, the answer text and which path decided; an
answer nothing could be read from stays, with pred null. It runs, for a preset that lists ``prompt``, the
tasks the yes/no prompt method cannot score; lines go to part files as the prompt method's do."""

from __future__ import annotations

from typing import Callable

from focus_eval.adapters.mllm_interface import MLLMAdapter
from focus_eval.runner.methods.base import RunContext
from focus_eval.runner.methods.prompt import PromptMethod, write
from focus_eval.runner.records import task_sample_line
from focus_eval.task.questions import MULTI_INSTRUCTION, SINGLE_INSTRUCTION, option_seed

# greedy answer length: room for "A, C, D" or a short sentence to match by embedding, whatever the preset's
# yes/no length
MIN_NEW_TOKENS = 16


class QuestionWriter:
    """Writes the answers for image ``i`` as one sample line per question to the tasks' part files."""

    def __init__(self, handles: dict, todo: dict, records, asked):
        self.handles, self.todo, self.records, self.asked = handles, todo, records, asked

    def __call__(self, i: int, answers: list[dict] | None, error: str | None) -> None:
        r = self.records[i]
        for n, u in enumerate(self.todo[r.image_id]):
            question = self.asked[i][n]
            shown = dict(question=question.prompt, options=question.options, answer=question.answer,
                         option_seed=question.seed)
            if answers is None:
                write(self.handles[u.stem], task_sample_line(u.task, r, None, None, error=error, text=None,
                                                             parsed=None, decided_by=None, **shown))
                continue
            probs, pred, reading = read(u.task, question, answers[n])
            write(self.handles[u.stem], task_sample_line(
                u.task, r, probs, pred, text=answers[n]["text"], parsed=reading.letters is not None,
                decided_by=reading.decided_by, match_similarity=reading.similarity, match_margin=reading.margin,
                **shown))


def read(task, question, answer: dict):
    """(class probabilities, prediction, reading) of one answer. Single-answer questions: the letter
    distribution mapped onto the classes (0 for classes not offered) and the class read. Multi-answer
    questions: no probabilities (the first token names one letter only) and a 0/1 row over the classes."""
    from focus_eval.adapters.mllm_choice import read_answer

    classes = task.label_space.classes
    texts = [classes[k].option for k in question.options]
    reading = read_answer(answer["text"], texts, task.multilabel)
    chosen = [question.options[question.letters.index(letter)] for letter in reading.letters or ()]
    if task.multilabel:
        pred = None if reading.letters is None else [int(k in chosen) for k in range(task.n_classes)]
        return None, pred, reading
    probs = [0.0] * task.n_classes
    for letter, share in answer["letters"].items():
        probs[question.options[question.letters.index(letter)]] = share
    return probs, (chosen[0] if chosen else None), reading


class MultipleChoice(PromptMethod):
    """``multiple_choice``: option-letter probabilities and a greedy answer per (image, question)."""

    name = "multiple_choice"
    hard_label = "pred = the option letters of the greedy answer, else the option closest by sentence embedding"
    output_types = ("multiclass", "multilabel", "multiple_choice")
    extends = "prompt"

    def prompts(self, context: RunContext, todo, records) -> list[list]:
        """Per image, the rendered question of each pending task, its options in the seeded order."""
        seed = context.options.seed
        return [[u.task.question.render(u.task, r, u.task.label(r), option_seed(seed, u.task.name, r.image_id))
                 for u in todo[r.image_id]] for r in records]

    def part_writer(self, handles, todo, records, prompts) -> Callable:
        return QuestionWriter(handles, todo, records, prompts)

    def asker(self, adapter: MLLMAdapter) -> Callable:
        length = max(adapter.max_new_tokens, MIN_NEW_TOKENS)
        return lambda images, asked: adapter.score_options_and_generate_multi(
            images, [[q.prompt for q in questions] for questions in asked],
            [[q.letters for q in questions] for questions in asked], max_new_tokens=length)

    @staticmethod
    def notes(max_new_tokens: int) -> dict:
        return {"max_new_tokens": max(max_new_tokens, MIN_NEW_TOKENS),
                "score": "first-token distribution over the option letters (single-answer questions)",
                "hard_label": "option letters of the greedy answer, else the closest option by all-MiniLM-L6-v2",
                "instructions": {"single": SINGLE_INSTRUCTION, "multi": MULTI_INSTRUCTION}}

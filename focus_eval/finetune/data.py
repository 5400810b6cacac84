"""Supervised examples for LoRA fine-tuning: the task's records of one split, the evaluation prompt with a
"yes"/"no" answer, and batches whose labels cover the answer tokens only.

A batch starts from the evaluation encoding itself (``MLLMScorer.encode``: the same chat template, the same
image processing and the same prompt tokens as scoring), then appends each row's answer tokens after its last
prompt token and right-pads. Labels are -100 on every prompt, image and padding token, so the loss is the
cross-entropy of the answer tokens only. The answer tokens are what the model's own chat template writes for
an assistant turn holding the answer word (for example ``yes<end_of_turn>``), with trailing whitespace removed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch

from focus_eval.digests import text_sha256
from focus_eval.errors import FocusError

IGNORE_INDEX = -100
ANSWERS = {1: "yes", 0: "no"}


@dataclass(frozen=True)
class Example:
    """One training (or validation) image with its prompt and target answer; ``crop`` is False for a prepared
    copy, which is cropped already."""

    image_id: str
    patient_id: str
    path: str
    label: int
    prompt: str
    crop: bool = True

    @property
    def answer(self) -> str:
        return ANSWERS[self.label]


def task_examples(task, load, split: str, prepared_root=None, size: int | None = None, state=None) -> list[Example]:
    """The records of ``split`` that define the task's target, in image-id order, with rendered prompts; each
    image read from its prepared copy at ``size`` under ``prepared_root`` where a current one exists."""
    from focus_eval.runner.images import image_sources

    records = sorted((r for r in task.records(load, split)), key=lambda r: r.image_id)
    sources = image_sources(records, prepared_root, size, state)
    return [Example(image_id=r.image_id, patient_id=r.patient_id, path=str(sources[r.image_id][0]),
                    label=int(task.label(r)), prompt=task.render_prompt(r), crop=sources[r.image_id][1])
            for r in records]


def data_hash(examples: Sequence[Example]) -> str:
    """sha256 over the sorted lines ``<image_id>\\t<label>``: which images, with which labels, were used."""
    lines = sorted(f"{e.image_id}\t{e.label}\n" for e in examples)
    return text_sha256("".join(lines))


class ExampleImages(torch.utils.data.Dataset):
    """Decodes example images exactly as the prompt method does (at the evaluation's decode size) and, given
    the scorer's ``image_processing``, runs the processor's image half too, in the loader's workers; a failing
    image is an error naming it."""

    def __init__(self, examples: Sequence[Example], draft: int | None, processing=None):
        self.examples = list(examples)
        self.draft = draft
        self.processing = processing

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, index: int):
        from focus_eval.runner.images import load_image

        example = self.examples[index]
        try:
            image = load_image(example.path, self.draft, example.crop)
            return index, (self.processing(image) if self.processing is not None else image)
        except Exception as exc:  # noqa: BLE001 - re-raised with the image named
            raise FocusError(f"image {example.image_id} ({example.path}) cannot be decoded: {exc}; fine-tuning "
                             f"needs every image of the split") from exc


def collate_examples(batch):
    """(indices, images): decoded images, or an ``ImageBatch`` when the workers ran the processor's image half."""
    from focus_eval.adapters.mllm_images import join_images

    return [i for i, _ in batch], join_images([image for _, image in batch])


class AnswerEncoder:
    """Turns (images, prompts, answers) into model inputs plus labels over the answer tokens only."""

    def __init__(self, scorer):
        self.scorer = scorer
        self.tokenizer = scorer.tokenizer
        self._answers: dict[tuple[str, str], list[int]] = {}
        # Padded positions are masked and carry no label, so any valid id will do.
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0

    def answer_ids(self, prompt: str, answer: str) -> list[int]:
        """Token ids of the assistant turn the chat template writes after the generation prompt."""
        key = (prompt, answer)
        if key not in self._answers:
            self._answers[key] = self._render_answer(prompt, answer)
        return self._answers[key]

    def _render_answer(self, prompt: str, answer: str) -> list[int]:
        head = self.scorer.chat_text(prompt)
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]},
                    {"role": "assistant", "content": [{"type": "text", "text": answer}]}]
        full = self.scorer.processor.apply_chat_template(messages, tokenize=False)
        if not full.startswith(head):
            raise FocusError("the chat template does not render the assistant turn as a continuation of the "
                             "generation prompt; cannot train on the evaluation prompt")
        tail = full[len(head):].rstrip()
        if not tail.startswith(answer):
            raise FocusError(f"the chat template writes {tail[:40]!r} before the answer {answer!r}; the first "
                             f"answer token would not be the one that scoring reads")
        ids = self.tokenizer.encode(tail, add_special_tokens=False)
        scored = self.scorer.answer_variants["yes" if answer == ANSWERS[1] else "no"]
        if not ids or ids[0] != scored.get(answer):
            raise FocusError(f"the answer {answer!r} does not start with the token that scoring reads "
                             f"({scored}); got ids {ids[:3]}")
        return ids

    def __call__(self, images: Sequence, prompts: Sequence[str], answers: Sequence[str]) -> dict[str, Any]:
        """Model inputs with ``labels``: prompt tokens as in evaluation, then the answer, right-padded."""
        inputs = self.scorer.encode(images, prompts)
        input_ids, mask = inputs["input_ids"], inputs["attention_mask"].bool()
        per_token = [k for k, v in inputs.items()
                     if torch.is_tensor(v) and v.shape == input_ids.shape and k not in ("input_ids", "attention_mask")]
        rows: list[dict[str, torch.Tensor]] = []
        for i, (prompt, answer) in enumerate(zip(prompts, answers)):
            answer_ids = torch.tensor(self.answer_ids(prompt, answer), device=input_ids.device)
            real = mask[i]
            prompt_ids = input_ids[i][real]
            row = {"input_ids": torch.cat([prompt_ids, answer_ids]),
                   "labels": torch.cat([torch.full_like(prompt_ids, IGNORE_INDEX), answer_ids])}
            for key in per_token:
                # answer tokens are text: type 0 in every token-type layout
                row[key] = torch.cat([inputs[key][i][real], torch.zeros_like(answer_ids)])
            rows.append(row)
        batch = _pad_right(rows, self.pad_id)
        for key, value in inputs.items():
            if key not in batch and key not in per_token:
                batch[key] = value
        return batch


def _pad_right(rows: list[dict[str, torch.Tensor]], pad_id: int) -> dict[str, torch.Tensor]:
    """Right padding: every row's real tokens start at position 0, exactly as in a single-row prefill."""
    length = max(len(r["input_ids"]) for r in rows)
    fill = {"input_ids": pad_id, "labels": IGNORE_INDEX}
    out: dict[str, torch.Tensor] = {}
    for key in rows[0]:
        out[key] = torch.stack([torch.nn.functional.pad(r[key], (0, length - len(r[key])), value=fill.get(key, 0))
                                for r in rows])
    out["attention_mask"] = torch.stack([
        torch.nn.functional.pad(torch.ones_like(r["input_ids"]), (0, length - len(r["input_ids"])), value=0)
        for r in rows])
    return out


def answer_loss(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, int]:
    """(mean cross-entropy over answer tokens, number of answer tokens): position t predicts label t + 1;
    positions whose next label is -100 (prompt, image, padding) take no part."""
    targets = labels[:, 1:]
    keep = targets != IGNORE_INDEX
    count = int(keep.sum())
    if count == 0:
        raise FocusError("a batch has no answer tokens to train on")
    chosen = logits[:, :-1][keep].float()
    loss = torch.nn.functional.cross_entropy(chosen, targets[keep], reduction="mean")
    return loss, count

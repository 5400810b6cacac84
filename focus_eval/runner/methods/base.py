"""The method interface: what every scoring method declares, the narrow frozen context it runs in, and the
shared loop of the methods that score cached image embeddings."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, ClassVar

import numpy as np

from focus_eval.errors import FocusError
from focus_eval.results.layout import OutputLayout
from focus_eval.results.schema import SampleLine
from focus_eval.runner.records import task_records, task_sample_line
from focus_eval.runner.units import Unit

EMBEDDING = "embedding"  # scores vectors the runner computed once per image for every such method
PROMPT = "prompt"        # runs the model itself on images and prompts


@dataclass(frozen=True)
class Embeddings:
    """Image vectors of one dataset (``{image_id: vector}``) and the images that could not be embedded."""

    vectors: dict[str, np.ndarray]
    errors: dict[str, str]

    def matrix(self, records) -> tuple[list, np.ndarray | None]:
        """The records that have a vector, and their vectors stacked (None when none has one)."""
        ok = [r for r in records if r.image_id in self.vectors]
        return ok, (np.stack([self.vectors[r.image_id] for r in ok]) if ok else None)


@dataclass(frozen=True)
class RunContext:
    """What a method may use of a run. Methods read it; the runner alone owns devices, processes, files."""

    options: Any                      # RunOptions
    preset: Any                       # Preset
    state: Any                        # accelerate PartialState
    layout: OutputLayout
    batch_size: int
    num_workers: int
    batches: Any                      # MemoryAdaptiveBatches
    progress: Callable[..., Any] | None
    adapter: Callable[[], Any]        # loads the model on first call
    finish: Callable[[Unit, list[SampleLine], dict], None]  # write a unit's samples, meta and results line
    fail: Callable[[Unit, str], None]                       # record why a unit has no results
    warn: Callable[[str], None]                             # tell the user (main process, stderr)
    load: Any = None                  # DatasetLoad of the dataset being scored
    embeddings: Embeddings | None = None

    def records(self, unit: Unit, split: str, limit: bool = False):
        """The unit's task records of one split; ``limit`` applies ``--limit`` (to the rows a sample file holds:
        test, and val where it is scored); the train split is cut to the task's label budget
        (``--train-fraction``; ``runner.label_budget``)."""
        rows = task_records(self.load, unit.task, split, self.options.limit if limit else None)
        if split == "train" and "train_fraction" in unit.task.variant:
            from focus_eval.runner.label_budget import budget_records

            rows = budget_records(unit.task, rows)
        return rows

    def with_dataset(self, load, embeddings: Embeddings | None = None) -> "RunContext":
        return replace(self, load=load, embeddings=embeddings)


class Method:
    """A scoring method. Subclasses set the class attributes and implement ``score``."""

    name: ClassVar[str]
    kind: ClassVar[str]                            # EMBEDDING or PROMPT
    families: ClassVar[tuple[str, ...]]            # preset families it can score (vm, vlm, mllm)
    splits: ClassVar[tuple[str, ...]] = ("test",)  # the splits whose images it needs
    hard_label: ClassVar[str]                      # how ``pred`` is decided, recorded in every results line
    prompt_fields: ClassVar[bool] = False          # whether its sample lines carry p_yes, p_no, text, ...
    output_types: ClassVar[tuple[str, ...]] = ("binary",)  # the task output types it scores
    # a method that scores, for a preset listing ``extends``, the tasks ``extends`` cannot (multiple_choice
    # answers for prompt the multi-class tasks), so presets need not list it
    extends: ClassVar[str | None] = None
    # a method every preset of its families can run when ``--methods`` names it, without listing it in the
    # preset's ``methods`` (``ve_probe`` and ``knowledge_prompt`` need nothing a preset must declare)
    on_request: ClassVar[bool] = False
    # whether it also scores a binary task's validation split, written as sample lines with split "val" beside
    # the test lines (thresholds and recalibration are chosen on them; the results line stays on the test rows)
    val_rows: ClassVar[bool] = True
    # whether it reads the images (knowledge_prompt asks without one, so --corruptions does not apply to it)
    reads_images: ClassVar[bool] = True

    def scored_splits(self, task, options) -> tuple[str, ...]:
        """The splits whose rows its sample file of ``task`` holds: test, and val where ``val_rows`` holds, the
        task is binary, the run keeps ``--val-scores`` on, the task's val split is another dataset split than
        its test split, and the task is no corruption copy (its probe sees clean validation images; the clean
        task's validation rows serve it)."""
        if (self.val_rows and task.binary and getattr(options, "val_scores", True)
                and task.splits.get("val") not in (None, task.splits.get("test"))
                and "corruption" not in task.variant):
            return ("test", "val")
        return ("test",)

    def image_splits(self, task, options) -> tuple[str, ...]:
        """The splits whose images it needs for ``task``: those it uses (``splits``) and those it scores."""
        return tuple(dict.fromkeys(self.splits + self.scored_splits(task, options)))

    def inputs(self, task) -> dict:
        """What, besides the task, preset and options, this method's numbers on ``task`` are computed from
        (e.g. the digest of a table it reads); part of every unit's fingerprint, so resume notices a change."""
        return {}

    def score(self, context: RunContext, units: list[Unit]) -> None:
        """Score ``units`` (all of this method, all on ``context.load``), calling ``context.finish`` or
        ``context.fail`` once for each."""
        raise NotImplementedError


class EmbeddingMethod(Method):
    """A method over cached embeddings: per unit, ``predict`` turns the test vectors into scores and labels
    (and, as a separate call, the validation vectors where the unit scores them; ``predict_splits``)."""

    kind = EMBEDDING
    families = ("vm", "vlm")

    def predict(self, context: RunContext, unit: Unit, x_test: np.ndarray,
                memo: dict) -> tuple[np.ndarray, np.ndarray, dict]:
        """(scores, hard labels, notes for the results line) for the rows of ``x_test``: for a binary task
        P(positive) and 0/1; otherwise class probabilities (rows x classes) and class indices, or 0/1 rows over
        the classes for a multi-answer task. ``memo`` lives for one ``score`` call (e.g. text embeddings shared
        by several tasks)."""
        raise NotImplementedError

    def predict_splits(self, context: RunContext, unit: Unit, xs: dict[str, np.ndarray],
                       memo: dict) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], dict]:
        """({split: (scores, hard labels)}, notes) for the vectors of each scored split (``xs``: test first).
        The notes are the test call's; by default ``predict`` is called once per split, so the test rows are
        scored exactly as without the other splits. A method that fits something per unit (the probe) fits
        once and scores each split."""
        out, notes = {}, {}
        for split, x in xs.items():
            scores, preds, extra = self.predict(context, unit, x, memo)
            out[split] = (scores, preds)
            if split == "test":
                notes = extra
        return out, notes

    def score(self, context: RunContext, units: list[Unit]) -> None:
        memo: dict = {}
        for unit in units:
            try:
                samples, extra = self.score_unit(context, unit, memo)
            except FocusError as exc:
                context.fail(unit, str(exc))
                continue
            context.finish(unit, samples, extra)

    def score_unit(self, context: RunContext, unit: Unit, memo: dict) -> tuple[list[SampleLine], dict]:
        """The unit's sample lines: its test rows, then (where it scores them) its validation rows."""
        task = unit.task
        rows = {split: context.records(unit, split, limit=True) for split in self.scored_splits(task, context.options)}
        matrices = {split: context.embeddings.matrix(records) for split, records in rows.items()}
        xs = {split: x for split, (_, x) in matrices.items() if x is not None}
        scores, extra = {}, {}
        if "test" in xs:
            predicted, extra = self.predict_splits(context, unit, xs, memo)
            for split, (probs, preds) in predicted.items():
                scores.update({r.image_id: (p, y) for r, p, y in zip(matrices[split][0], probs, preds)})
        samples = []
        for split, records in rows.items():
            for r in records:
                if r.image_id in scores:
                    samples.append(task_sample_line(task, r, *scores[r.image_id], split=split))
                else:
                    reason = context.embeddings.errors.get(r.image_id) or (
                        "not scored: no test image could be embedded" if r.image_id in context.embeddings.vectors
                        else "not embedded")
                    samples.append(task_sample_line(task, r, None, None, error=reason, split=split))
        return samples, extra

"""The ``prompt`` method for multimodal LLMs: for each test image, every task of the dataset is asked in one
batched call (the image encoded once where the model allows), scored by first-token yes/no probabilities, and
labelled by the first standalone yes/no of a short greedy answer. Lines are appended to per-process part
files as they are produced, so an interrupted run continues from its last written sample."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Sequence

from torch.utils.data import DataLoader

from focus_eval.adapters.mllm_interface import MLLMAdapter, is_retryable
from focus_eval.results.layout import OutputLayout
from focus_eval.results.schema import SampleLine, dumps
from focus_eval.runner.batching import MemoryAdaptiveBatches, join_lists
from focus_eval.runner.embed import process_share
from focus_eval.runner.embed_loop import TransformDataset, split_batch
from focus_eval.runner.images import DecodeAndTransform, ImageItem, decode_size, image_sources
from focus_eval.runner.methods.base import PROMPT, Method, RunContext
from focus_eval.runner.records import sample_line, sample_split
from focus_eval.runner.stages import StageClock
from focus_eval.runner.units import Unit

# batches each loader worker prepares ahead of the model
PREFETCH = 2


def collate_images(batch):
    """A batch of worker items: (indices, decoded images or an ``ImageBatch`` of processed ones, failures,
    seconds spent decoding and preprocessing)."""
    from focus_eval.adapters.mllm_images import join_images

    indices, images, bad, seconds = split_batch(batch)
    return indices, join_images(images), bad, seconds


def image_loader(adapter: MLLMAdapter, items: Sequence[ImageItem], batch_size: int, num_workers: int) -> DataLoader:
    """Batches of ``items`` decoded (draft decoding, fundus crop) and, where the adapter splits its processor
    (``image_processing``, see ``WorkerImages``), run through the processor's image half, all in worker processes; on a GPU the
    batches arrive in pinned memory, so their copy to the device does not block."""
    split = getattr(adapter, "image_processing", None)
    workers = max(0, int(num_workers))
    return DataLoader(TransformDataset(items, DecodeAndTransform(split() if split else None)),
                      batch_size=max(1, int(batch_size)), shuffle=False, num_workers=workers,
                      collate_fn=collate_images, pin_memory=str(adapter.device).startswith("cuda"),
                      prefetch_factor=PREFETCH if workers else None)


def answer_images(adapter: MLLMAdapter, items: Sequence[ImageItem], prompts: Sequence[Sequence[str]],
                  write: Callable[[int, list[dict] | None, str | None], None], *, batch_size: int,
                  num_workers: int = 0, batches: MemoryAdaptiveBatches | None = None,
                  stages: StageClock | None = None, progress=None, ask: Callable | None = None) -> None:
    """The multimodal hot loop, shared by the prompt methods and the benchmark: ``prompts[i]`` asked of image
    ``items[i]`` in one ``score_and_generate_multi`` call per batch (or ``ask(images, prompts)``);
    ``write(i, answers, None)`` for each answered image (one answer per prompt), ``write(i, None, reason)``
    for an image that cannot be read or that the model call reports unanswered (an answer list with an
    ``error`` attribute)."""
    ask = ask or (lambda imgs, ps: adapter.score_and_generate_multi(imgs, ps, max_new_tokens=adapter.max_new_tokens))
    stages = stages or StageClock()
    batches = batches or MemoryAdaptiveBatches(enabled=False)
    place = getattr(adapter, "place_images", None)
    loader = image_loader(adapter, items, batch_size, num_workers)
    for indices, images, bad, seconds in stages.loader(loader):
        stages.add_worker(seconds, len(indices) + len(bad))
        with stages.stage("post_process"):
            for i, reason in bad:
                write(i, None, reason)
        if indices:
            if place is not None and not isinstance(images, list):
                with stages.stage("host_to_device"):
                    images = place(images)
            with stages.stage("model"):
                answers = batches.run(ask, [images, [prompts[i] for i in indices]], join_lists)
            with stages.stage("post_process"):
                for i, image_answers in zip(indices, answers):
                    # an adapter that could not answer an image (an API endpoint that kept failing) says why,
                    # and the image is failed as an unreadable one is
                    failed = getattr(image_answers, "error", None)
                    write(i, None if failed else image_answers, failed)
        if progress:
            progress.update(len(indices) + len(bad))


def read_parts(layout: OutputLayout, unit: Unit) -> dict[str, dict]:
    """Lines already written for this unit by any process (a torn last line is ignored); a line whose error is
    retryable gives way to a later line of the same image (the answer of a run that asked it again)."""
    done: dict[str, dict] = {}
    for path in layout.parts(unit.task.name, unit.method):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if row["image_id"] not in done or is_retryable(done[row["image_id"]].get("error")):
                done[row["image_id"]] = row
    return done


def pending(row: dict | None) -> bool:
    """Whether an image still needs asking: no line yet, or one whose failure was transient."""
    return row is None or is_retryable(row.get("error"))


def _clean_torn_tail(path) -> None:
    """Drop a half-written last line left by an interrupted process before appending to the file."""
    if not path.is_file():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        from focus_eval.files import atomic_write_bytes

        atomic_write_bytes(path, data[: data.rfind(b"\n") + 1])


def write(handle, line: SampleLine) -> None:
    handle.write(dumps(line.to_dict(True)) + "\n")
    handle.flush()


class PartWriter:
    """Writes the answers for image ``i`` of a work list as one sample line per task to the tasks' part files."""

    def __init__(self, handles: dict, todo: dict[str, list[Unit]], records: Sequence):
        self.handles, self.todo, self.records = handles, todo, records

    def __call__(self, i: int, answers: list[dict] | None, error: str | None) -> None:
        from focus_eval.adapters.mllm_parse import parse_yes_no

        r = self.records[i]
        for n, u in enumerate(self.todo[r.image_id]):
            label, split = u.task.label(r), sample_split(u.task, r)
            if answers is None:
                write(self.handles[u.stem], sample_line(r, label, None, None, error=error, split=split))
                continue
            answer = answers[n]
            pred = parse_yes_no(answer["text"])
            write(self.handles[u.stem], sample_line(
                r, label, answer["p_yes"], pred, split=split, p_yes=answer["p_yes"], p_no=answer["p_no"],
                score_norm=answer["score_norm"], text=answer["text"], parsed=pred is not None))


class PromptMethod(Method):
    """``prompt``: first-token yes/no probabilities and a short greedy answer per (image, task)."""

    name = "prompt"
    kind = PROMPT
    families = ("mllm",)
    hard_label = "pred = first standalone yes/no in the generated text"
    prompt_fields = True

    def score(self, context: RunContext, units: list[Unit]) -> None:
        adapter = context.adapter()
        state, layout = context.state, context.layout
        if not context.options.resume:
            if state.is_main_process:
                for u in units:
                    for p in layout.parts(u.task.name, u.method):
                        p.unlink()
            state.wait_for_everyone()
        # the test images, then the validation images where the unit scores them (``scored_splits``)
        records = {u.stem: [r for split in self.scored_splits(u.task, context.options)
                            for r in context.records(u, split, limit=True)] for u in units}
        state.wait_for_everyone()  # all processes read the same part files, so they agree on the work list
        done = {u.stem: read_parts(layout, u) for u in units}
        todo: dict[str, list[Unit]] = {}
        by_id = {}
        for u in units:
            for r in records[u.stem]:
                if pending(done[u.stem].get(r.image_id)):
                    todo.setdefault(r.image_id, []).append(u)
                    by_id[r.image_id] = r
        share = process_share(sorted(todo), context.batch_size, state.process_index, state.num_processes)
        sources = self.image_sources(context, [by_id[i] for i in sorted(todo)])
        if share:
            self.answer(context, adapter, units, share, todo, by_id, sources)
        state.wait_for_everyone()
        if state.is_main_process:
            self.finish(context, units, records, adapter.max_new_tokens)

    def image_sources(self, context: RunContext, records) -> dict:
        """``{image_id: (file, crop still to do)}``: the prepared copy at the decode size wherever there is a
        current one (stale ones are rebuilt first), else the raw file."""
        options = context.options
        prepared = Path(options.data_root) if options.use_prepared and options.data_root else None
        return image_sources(records, prepared, decode_size(context.preset.preprocessing), context.state)

    def answer(self, context: RunContext, adapter: MLLMAdapter, units, share, todo, by_id, sources) -> None:
        """Ask every pending (image, task) of this process's share, appending lines to its part files."""
        layout, rank = context.layout, context.state.process_index
        layout.parts_dir.mkdir(parents=True, exist_ok=True)
        handles = {}
        for u in units:
            path = layout.part(u.task.name, u.method, rank)
            _clean_torn_tail(path)
            handles[u.stem] = path.open("a", encoding="utf-8")
        size = decode_size(context.preset.preprocessing)  # JPEG draft decoding stops at or above it, never below
        corruption = units[0].task.variant.get("corruption")  # the runner groups units by corruption
        items = [ImageItem(i, image_id, str(sources[image_id][0]), size, sources[image_id][1], corruption)
                 for i, image_id in enumerate(share)]
        records = [by_id[image_id] for image_id in share]
        prompts = self.prompts(context, todo, records)
        bar = context.progress(total=len(items), desc=f"{self.name} {context.load.name}") if context.progress else None
        try:
            self.ask_all(context, adapter, items, prompts, self.part_writer(handles, todo, records, prompts), bar)
        finally:
            for h in handles.values():
                h.close()
            if bar:
                bar.close()

    # what a prompt method asks and how it reads the answers (the multiple-choice method asks questions)

    def ask_all(self, context: RunContext, adapter: MLLMAdapter, items, prompts, writer, bar) -> None:
        """Ask ``prompts[i]`` of image ``items[i]`` for every item, calling ``writer`` per image."""
        answer_images(adapter, items, prompts, writer, batch_size=context.batch_size,
                      num_workers=context.num_workers, batches=context.batches, progress=bar,
                      ask=self.asker(adapter))

    def prompts(self, context: RunContext, todo, records) -> list[list]:
        """Per image, what is asked for each of its pending tasks: the task's yes/no prompt."""
        return [[u.task.render_prompt(r) for u in todo[r.image_id]] for r in records]

    def part_writer(self, handles, todo, records, prompts) -> Callable[[int, list[dict] | None, str | None], None]:
        return PartWriter(handles, todo, records)

    def asker(self, adapter: MLLMAdapter) -> Callable | None:
        """The batched model call; None for ``score_and_generate_multi``."""
        return None

    @staticmethod
    def notes(max_new_tokens: int) -> dict:
        return {"max_new_tokens": max_new_tokens, "score": "p_yes", "hard_label": "first yes/no of greedy text"}

    def finish(self, context: RunContext, units, records, max_new_tokens: int) -> None:
        """Merge each unit's part files into its sample file (main process), then drop the parts."""
        layout = context.layout
        for u in units:
            rows = read_parts(layout, u)
            missing = [r.image_id for r in records[u.stem] if r.image_id not in rows]
            if missing:
                context.fail(u, f"{len(missing)} images were not scored (first: {missing[0]})")
                continue
            transient = [r.image_id for r in records[u.stem] if pending(rows[r.image_id])]
            if transient:  # not finished: the part files stay, and the next run asks these images again
                first = rows[transient[0]]
                context.fail(u, f"{len(transient)} images failed for a transient reason (first: {transient[0]}: "
                                f"{first.get('error')}); run the same command again to retry them")
                continue
            samples = [SampleLine.from_dict(rows[r.image_id]) for r in records[u.stem]]
            context.finish(u, samples, self.notes(max_new_tokens))
            for p in layout.parts(u.task.name, u.method):
                p.unlink()

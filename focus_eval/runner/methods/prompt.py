"""The ``prompt`` method for multimodal LLMs: for each test image, every task of the dataset is asked in one
batched call (the image encoded once where the model allows), scored by first-token yes/no probabilities, and
labelled by the first standalone yes/no of a short greedy answer. Lines are appended to per-process part
files as they are produced, so an interrupted run continues from its last written sample."""

from __future__ import annotations

import json

from torch.utils.data import DataLoader

from focus_eval.results.layout import OutputLayout
from focus_eval.results.schema import SampleLine, dumps
from focus_eval.runner.batching import join_lists
from focus_eval.runner.embed import process_share
from focus_eval.runner.embed_loop import TransformDataset
from focus_eval.runner.images import DecodeAndTransform, ImageItem, source_path
from focus_eval.runner.methods.base import PROMPT, Method, RunContext
from focus_eval.runner.records import sample_line
from focus_eval.runner.units import Unit


def collate_images(batch):
    good = [(i, img) for i, img, err in batch if err is None]
    bad = [(i, err) for i, img, err in batch if err is not None]
    return [i for i, _ in good], [img for _, img in good], bad


def read_parts(layout: OutputLayout, unit: Unit) -> dict[str, dict]:
    """Lines already written for this unit by any process (a torn last line is ignored)."""
    done: dict[str, dict] = {}
    for path in layout.parts(unit.task.name, unit.method):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            done.setdefault(row["image_id"], row)
    return done


def _clean_torn_tail(path) -> None:
    """Drop a half-written last line left by an interrupted process before appending to the file."""
    if not path.is_file():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        path.write_bytes(data[: data.rfind(b"\n") + 1])


def write(handle, line: SampleLine) -> None:
    handle.write(dumps(line.to_dict(True)) + "\n")
    handle.flush()


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
        records = {u.stem: context.records(u, "test", limit=True) for u in units}
        state.wait_for_everyone()  # all processes read the same part files, so they agree on the work list
        done = {u.stem: read_parts(layout, u) for u in units}
        todo: dict[str, list[Unit]] = {}
        by_id = {}
        for u in units:
            for r in records[u.stem]:
                if r.image_id not in done[u.stem]:
                    todo.setdefault(r.image_id, []).append(u)
                    by_id[r.image_id] = r
        share = process_share(sorted(todo), context.batch_size, state.process_index, state.num_processes)
        if share:
            self.answer(context, adapter, units, share, todo, by_id)
        state.wait_for_everyone()
        if state.is_main_process:
            self.finish(context, units, records, adapter.max_new_tokens)

    def answer(self, context: RunContext, adapter, units, share, todo, by_id) -> None:
        """Ask every pending (image, task) of this process's share, appending lines to its part files."""
        layout, rank = context.layout, context.state.process_index
        layout.parts_dir.mkdir(parents=True, exist_ok=True)
        handles = {}
        for u in units:
            path = layout.part(u.task.name, u.method, rank)
            _clean_torn_tail(path)
            handles[u.stem] = path.open("a", encoding="utf-8")
        size = (context.preset.preprocessing or {}).get("size")
        draft = int(size) if size else None  # JPEG draft decoding stops at or above this size, never below
        items = [ImageItem(i, image_id, str(source_path(by_id[image_id], None, None)), draft)
                 for i, image_id in enumerate(share)]
        loader = DataLoader(TransformDataset(items, DecodeAndTransform()), batch_size=context.batch_size,
                            shuffle=False, num_workers=context.num_workers, collate_fn=collate_images)
        bar = context.progress(total=len(items), desc=f"prompt {context.load.name}") if context.progress else None
        try:
            for indices, images, bad in loader:
                for i, reason in bad:
                    r = by_id[items[i].image_id]
                    for u in todo[r.image_id]:
                        write(handles[u.stem], sample_line(r, r.label(u.task.target), None, None, error=reason))
                if images:
                    rows = [by_id[items[i].image_id] for i in indices]
                    self.answer_batch(context, adapter, images, rows, todo, handles)
                if bar:
                    bar.update(len(indices) + len(bad))
        finally:
            for h in handles.values():
                h.close()
            if bar:
                bar.close()

    @staticmethod
    def answer_batch(context: RunContext, adapter, images, rows, todo, handles) -> None:
        from focus_eval.adapters.mllm import parse_yes_no

        prompts = [[u.task.render_prompt(r) for u in todo[r.image_id]] for r in rows]
        answers = context.batches.run(
            lambda imgs, ps: adapter.score_and_generate_multi(imgs, ps, max_new_tokens=adapter.max_new_tokens),
            [images, prompts], join_lists)
        for r, unit_answers in zip(rows, answers):
            for u, answer in zip(todo[r.image_id], unit_answers):
                pred = parse_yes_no(answer["text"])
                write(handles[u.stem], sample_line(
                    r, r.label(u.task.target), answer["p_yes"], pred, p_yes=answer["p_yes"], p_no=answer["p_no"],
                    score_norm=answer["score_norm"], text=answer["text"], parsed=pred is not None))

    @staticmethod
    def finish(context: RunContext, units, records, max_new_tokens: int) -> None:
        """Merge each unit's part files into its sample file (main process), then drop the parts."""
        layout = context.layout
        for u in units:
            rows = read_parts(layout, u)
            missing = [r.image_id for r in records[u.stem] if r.image_id not in rows]
            if missing:
                context.fail(u, f"{len(missing)} images were not scored (first: {missing[0]})")
                continue
            samples = [SampleLine.from_dict(rows[r.image_id]) for r in records[u.stem]]
            extra = {"max_new_tokens": max_new_tokens, "score": "p_yes", "hard_label": "first yes/no of greedy text"}
            context.finish(u, samples, extra)
            for p in layout.parts(u.task.name, u.method):
                p.unlink()

"""The ``prompt`` method for multimodal LLMs: for each test image, every task of the dataset is asked in one
batched call (the image encoded once where the model allows), scored by first-token yes/no probabilities, and
labelled by the first standalone yes/no of a short greedy answer. Lines are appended to per-process part
files as they are produced, so an interrupted run continues from its last written sample."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from torch.utils.data import DataLoader

from focus_eval.results.schema import SampleLine, dumps
from focus_eval.runner.batching import join_lists
from focus_eval.runner.embed import process_share
from focus_eval.runner.embed_loop import TransformDataset
from focus_eval.runner.images import DecodeAndTransform, ImageItem, source_path

MAX_NEW_TOKENS = 5


def collate_images(batch):
    good = [(i, img) for i, img, err in batch if err is None]
    bad = [(i, err) for i, img, err in batch if err is not None]
    return [i for i, _ in good], [img for _, img in good], bad


def parts_dir(model_dir: Path) -> Path:
    return model_dir / "samples" / ".parts"


def part_path(model_dir: Path, unit, rank: int) -> Path:
    return parts_dir(model_dir) / f"{unit.stem}.r{rank}.jsonl"


def read_parts(model_dir: Path, unit) -> dict[str, dict]:
    """Lines already written for this unit by any process (a torn last line is ignored)."""
    done: dict[str, dict] = {}
    for path in sorted(parts_dir(model_dir).glob(f"{unit.stem}.r*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            done.setdefault(row["image_id"], row)
    return done


def _clean_torn_tail(path: Path) -> None:
    """Drop a half-written last line left by an interrupted process before appending to the file."""
    if not path.is_file():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        path.write_bytes(data[: data.rfind(b"\n") + 1])


def run_prompt_units(runner, load, units) -> None:
    from focus_eval.adapters.mllm import parse_yes_no
    from focus_eval.runner.run import age_threshold, sample_line, split_summary, task_records

    adapter = runner.load_adapter()
    state, model_dir = runner.state, runner.model_dir
    if not runner.options.resume:
        for u in units:
            if state.is_main_process:
                for p in parts_dir(model_dir).glob(f"{u.stem}.r*.jsonl"):
                    p.unlink()
        state.wait_for_everyone()
    records = {u.stem: task_records(load, u.task, "test", runner.options.limit) for u in units}
    state.wait_for_everyone()  # all processes read the same part files, so they agree on the work list
    done = {u.stem: read_parts(model_dir, u) for u in units}
    todo: dict[str, list] = defaultdict(list)
    by_id = {}
    for u in units:
        for r in records[u.stem]:
            if r.image_id not in done[u.stem]:
                todo[r.image_id].append(u)
                by_id[r.image_id] = r
    share = process_share(sorted(todo), runner.batch_size(), state.process_index, state.num_processes)
    if share:
        parts_dir(model_dir).mkdir(parents=True, exist_ok=True)
        handles = {}
        for u in units:
            path = part_path(model_dir, u, state.process_index)
            _clean_torn_tail(path)
            handles[u.stem] = path.open("a", encoding="utf-8")
        size = (runner.preset.preprocessing or {}).get("size")
        draft = int(size) if size else None  # JPEG draft decoding stops at or above this size, never below
        items = [ImageItem(i, image_id, str(source_path(by_id[image_id], None, None)), draft)
                 for i, image_id in enumerate(share)]
        loader = DataLoader(TransformDataset(items, DecodeAndTransform()), batch_size=runner.batch_size(), shuffle=False,
                            num_workers=runner.num_workers(), collate_fn=collate_images)
        bar = runner.progress(total=len(items), desc=f"prompt {load.name}") if runner.progress else None
        try:
            for indices, images, bad in loader:
                for i, reason in bad:
                    r = by_id[items[i].image_id]
                    for u in todo[r.image_id]:
                        write(handles[u.stem], sample_line(r, r.label(u.task.target), None, None, error=reason))
                if images:
                    rows = [by_id[items[i].image_id] for i in indices]
                    prompts = [[u.task.render_prompt(r) for u in todo[r.image_id]] for r in rows]
                    answers = runner.batches.run(
                        lambda imgs, ps: adapter.score_and_generate_multi(imgs, ps, max_new_tokens=MAX_NEW_TOKENS),
                        [images, prompts], join_lists)
                    for r, unit_answers in zip(rows, answers):
                        for u, answer in zip(todo[r.image_id], unit_answers):
                            pred = parse_yes_no(answer["text"])
                            write(handles[u.stem], sample_line(
                                r, r.label(u.task.target), answer["p_yes"], pred, p_yes=answer["p_yes"],
                                p_no=answer["p_no"], score_norm=answer["score_norm"], text=answer["text"],
                                parsed=pred is not None))
                if bar:
                    bar.update(len(indices) + len(bad))
        finally:
            for h in handles.values():
                h.close()
            if bar:
                bar.close()
    state.wait_for_everyone()
    if not state.is_main_process:
        return
    for u in units:
        rows = read_parts(model_dir, u)
        missing = [r.image_id for r in records[u.stem] if r.image_id not in rows]
        if missing:
            runner.report.failed[u.stem] = f"{len(missing)} images were not scored (first: {missing[0]})"
            continue
        samples = [SampleLine.from_dict(rows[r.image_id]) for r in records[u.stem]]
        extra = {"max_new_tokens": MAX_NEW_TOKENS, "score": "p_yes", "hard_label": "first yes/no of greedy text",
                 "split_policy": split_summary(load)}
        runner.finish_unit(u, samples, runner.meta(u, age_threshold(task_records(load, u.task, "test")), extra))
        for p in parts_dir(model_dir).glob(f"{u.stem}.r*.jsonl"):
            p.unlink()


def write(handle, line: SampleLine) -> None:
    handle.write(dumps(line.to_dict(True)) + "\n")
    handle.flush()

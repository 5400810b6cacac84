"""The multimodal processor split in two: its image half in loader workers gives the very tensors, rows and
scores of the whole processor on the main thread; batches slice, pin and move as one; a prompt run with
workers writes the same sample lines as one without, with the numbers of the plain scorer."""

import json

import pytest
import torch
from PIL import Image

from focus_eval.adapters import load_adapter
from focus_eval.adapters.mllm_images import ImageBatch, collate
from focus_eval.cli import main
from focus_eval.presets import load_preset
from focus_eval.runner.batching import MemoryAdaptiveBatches, join_lists

MODELS = ("tiny-medgemma", "tiny-qwen-vl", "tiny-llava-next")
PROMPTS = ["Does this eye show diabetic retinopathy? Answer yes or no.", "Is the optic disc cupped? yes or no"]


@pytest.fixture(scope="module")
def adapters():
    return {name: load_adapter(load_preset(name), device="cpu") for name in MODELS}


def _images():
    # different sizes and aspect ratios: Qwen's patch count and LLaVA-NeXT's tile count vary with them
    return [Image.effect_noise(size, sigma).convert("RGB") for size, sigma in
            (((64, 64), 60), ((96, 64), 30), ((50, 70), 45))]


def _worker_batch(adapter, images) -> ImageBatch:
    work = adapter.image_processing()
    return collate([work(image) for image in images])


@pytest.mark.parametrize("name", MODELS)
def test_the_image_half_gives_the_processor_tensors(adapters, name):
    adapter, images = adapters[name], _images()
    whole = dict(adapter.processor(images=[[im] for im in images], text=[adapter.chat_text("")] * len(images),
                                   padding=True, return_tensors="pt", add_special_tokens=False))
    batch = _worker_batch(adapter, images)
    assert set(batch.tensors) == {k for k in whole if k not in ("input_ids", "attention_mask", "token_type_ids",
                                                                 "mm_token_type_ids")}
    for key, value in batch.tensors.items():
        assert torch.equal(value, whole[key].to(value.dtype)), key
    # rows built from the workers' placeholder texts are the processor's own rows, pixels included
    direct = adapter.encode(images, [PROMPTS[0]] * len(images))
    split = adapter.encode(batch, [PROMPTS[0]] * len(images))
    assert set(direct) == set(split)
    for key in direct:
        assert torch.equal(direct[key], split[key]), key


@pytest.mark.parametrize("name", MODELS)
def test_scores_from_worker_batches_equal_scores_from_images(adapters, name):
    adapter, images = adapters[name], _images()
    per_image = [PROMPTS, PROMPTS[:1], PROMPTS[::-1]]
    expected = adapter.score_and_generate_multi(images, per_image, max_new_tokens=3)
    got = adapter.score_and_generate_multi(_worker_batch(adapter, images), per_image, max_new_tokens=3)
    assert got == expected
    # the plain path (each row processed whole, no sharing) agrees to float rounding
    plain = adapter.score_and_generate([im for im, ps in zip(images, per_image) for _ in ps],
                                       [p for ps in per_image for p in ps], max_new_tokens=3)
    flat = [row for rows in got for row in rows]
    assert [r["text"] for r in flat] == [r["text"] for r in plain]
    for a, b in zip(flat, plain):
        assert a["p_yes"] == pytest.approx(b["p_yes"], abs=1e-5) and a["p_no"] == pytest.approx(b["p_no"], abs=1e-5)


def test_a_batch_slices_pins_and_moves_as_one(adapters):
    adapter, images = adapters["tiny-qwen-vl"], _images()  # pixel rows per patch: images own unequal spans
    batch = _worker_batch(adapter, images)
    for chosen in ([2, 0], [1], [0, 1, 2]):
        alone = _worker_batch(adapter, [images[i] for i in chosen])
        part = batch.take(chosen)
        assert part.replacements == alone.replacements
        for key in alone.tensors:
            assert torch.equal(part.tensors[key], alone.tensors[key]), (chosen, key)
    assert batch[1:].replacements == batch.take([1, 2]).replacements and len(batch[:2]) == 2
    assert batch.to(torch.device("cpu"), torch.float64).tensors["pixel_values"].dtype == torch.float64
    if torch.cuda.is_available():
        pinned = batch.pin_memory()
        assert all(v.is_pinned() for v in pinned.tensors.values())


def test_out_of_memory_halving_splits_a_worker_batch(adapters):
    adapter, images = adapters["tiny-llava-next"], _images()
    prompts = [PROMPTS] * len(images)
    expected = adapter.score_and_generate_multi(images, prompts, max_new_tokens=2)
    sizes = []

    def scorer(imgs, ps):
        sizes.append(len(imgs))
        if len(imgs) > 1:
            raise RuntimeError("CUDA out of memory (simulated)")
        return adapter.score_and_generate_multi(imgs, ps, max_new_tokens=2)

    got = MemoryAdaptiveBatches(enabled=True).run(scorer, [_worker_batch(adapter, images), prompts], join_lists)
    assert sizes[:2] == [3, 1] and max(sizes[2:]) == 1
    assert [[r["text"] for r in rows] for rows in got] == [[r["text"] for r in rows] for rows in expected]
    for rows_a, rows_b in zip(got, expected):
        for a, b in zip(rows_a, rows_b):
            assert a["p_yes"] == pytest.approx(b["p_yes"], abs=1e-5)


def _samples(model_dir):
    return {p.name: [json.loads(line) for line in p.read_text().splitlines()]
            for p in sorted((model_dir / "samples").glob("*.prompt.jsonl"))}


@pytest.mark.slow
def test_a_prompt_run_with_workers_writes_what_the_main_thread_writes(tmp_path):
    from focus_eval.data.registry import load_dataset
    from focus_eval.runner.images import load_image
    from focus_eval.synth.datasets import write_synthetic
    from focus_eval.task import TaskIndex

    root = tmp_path / "data"
    write_synthetic(root, n=24, seed=11)
    runs = {}
    for workers in (0, 2):
        out = tmp_path / f"w{workers}"
        assert main(["--model", "tiny-medgemma", "--tasks", "dr_synth_desktop,glaucoma_synth_desktop",
                     "--data-root", str(root), "--output-path", str(out), "--batch-size", "3", "--num-workers",
                     str(workers), "--no-progress", "--n-boot", "10"]) == 0
        runs[workers] = _samples(out / "tiny-medgemma")
    assert runs[0] == runs[2] and runs[0]
    # and they are the numbers of the plain scorer: each (image, task) row processed whole on this thread
    adapter = load_adapter(load_preset("tiny-medgemma"), device="cpu")
    task = TaskIndex().get("dr_synth_desktop")
    load = load_dataset("synth_desktop", root)
    lines = {s["image_id"]: s for s in runs[0]["dr_synth_desktop.prompt.jsonl"]}
    records = [r for r in load.split("test") if r.image_id in lines][:4]
    plain = adapter.score_and_generate([load_image(str(r.path), 64) for r in records],
                                       [task.render_prompt(r) for r in records])
    for r, row in zip(records, plain):
        assert lines[r.image_id]["p_yes"] == pytest.approx(row["p_yes"], abs=1e-5)
        assert lines[r.image_id]["p_no"] == pytest.approx(row["p_no"], abs=1e-5)
        assert lines[r.image_id]["text"] == row["text"]


@pytest.mark.slow
def test_sft_with_the_image_half_in_workers_trains_as_on_the_main_thread(tmp_path):
    from focus_eval.synth.datasets import write_synthetic

    root = tmp_path / "data"
    write_synthetic(root, n=24, seed=2)
    logs = {}
    for workers in ("0", "1"):
        out = tmp_path / f"adapter{workers}"
        assert main(["sft", "--model", "tiny-medgemma", "--dataset", "synth_desktop", "--target", "dr",
                     "--data-root", str(root), "--device", "cpu", "--num-workers", workers, "--no-progress",
                     "--max-steps", "2", "--batch-size", "2", "--grad-accum", "1", "--max-val-images", "2",
                     "--output", str(out)]) == 0
        rows = [json.loads(line) for line in (out / "training_log.jsonl").read_text().splitlines()]
        logs[workers] = [(r.get("train_loss"), r.get("val_loss")) for r in rows]
    assert logs["0"] == logs["1"] and len(logs["0"]) == 4

"""Encoder workloads: a ViT image embedding from JPEG files, the reference-style loop (PIL and the Hugging Face
processor in the main thread) against the runner's own embedding call (``embed_records``: loader workers, the
adapter's embedding, cache shards written)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Mapping

from focus_eval.bench.inputs import DATASET, OneProcess, bench_records, fundus_jpegs, prepared_copies
from focus_eval.bench.measure import Env, Measurement, Sizes, count_params, row, stage_line

# Real architecture values (Hugging Face config of google/vit-large-patch16-224); the tiny variant keeps the
# structure and shrinks the widths and depths.
VIT_L16 = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
               image_size=224, patch_size=16)
VIT_TINY = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                image_size=224, patch_size=16)
SIDE = 224


@dataclass
class Prepared:
    """A ViT, the data root its inputs lie in, the raw files, the files both loops read (raw, or prepared
    copies), whether the runner reads prepared copies, and ``info`` reported with the workload's figures."""

    model: Any
    root: Path
    raw: list[Path]
    files: list[Path]
    prepared: bool
    info: dict[str, Any]
    runs: Any = None


class BenchEncoder:
    """What the runner's embedding call uses of an encoder adapter, around the benchmark's ViT."""

    def __init__(self, model, device):
        import torch

        from focus_eval.adapters.preprocessing import ImageTransform

        self.model, self.device = model, torch.device(device)
        self.transform = ImageTransform(size=SIDE, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), resize="squash")
        self.preset = SimpleNamespace(preprocessing={"size": SIDE})
        self.embed_dim = model.config.hidden_size

    def embed_images(self, pixels):
        return self.model(pixel_values=pixels).last_hidden_state[:, 0]


def cycle(paths: list[Path], n: int) -> list[str]:
    return [str(paths[i % len(paths)]) for i in range(n)]


def build_vit(tiny: bool, device):
    import torch
    from transformers import ViTConfig, ViTModel

    config = ViTConfig(**(VIT_TINY if tiny else VIT_L16))
    with torch.device(device):
        model = ViTModel._from_config(config, add_pooling_layer=True, attn_implementation="sdpa",
                                      dtype=torch.float32)
    return model.eval()


def setup(options: Mapping[str, Any], sizes: Sizes, env: Env, folder: Path) -> Prepared:
    """Realistic fundus JPEGs of the workload's source size; with ``prepared``, their prepared copies (what
    ``datasets prepare`` writes), which both loops then read."""
    from focus_eval.data.images import image_size

    model = build_vit(env.tiny, env.device)
    root = folder / "vit"
    raw = fundus_jpegs(root / DATASET, tuple(options["source"]), sizes.files)
    files = prepared_copies(root, raw, options["prepared"], env.workers) if options.get("prepared") else raw
    size = list(image_size(files[0]))
    return Prepared(model, root, raw, files, bool(options.get("prepared")), {
        "params": count_params(model), "image_size": size, "source_size": list(options["source"]),
        "inputs": "prepared copies" if options.get("prepared") else "raw fundus JPEGs"}, itertools.count())


def reference(prepared: Prepared, sizes: Sizes, env: Env) -> Measurement:
    """PIL decode + the HF ViT processor in the main thread, fp32, one model call per batch of 16."""
    import torch
    from transformers import ViTImageProcessor

    from focus_eval.data.images import open_image

    processor = ViTImageProcessor(size={"height": SIDE, "width": SIDE}, image_mean=[0.5] * 3, image_std=[0.5] * 3)
    paths, batch = cycle(prepared.files, sizes.reference), sizes.reference_batch

    def run(items, stages):
        with torch.inference_mode():
            for start in range(0, len(items), batch):
                with stages.stage("decode"):
                    images = [open_image(p) for p in items[start:start + batch]]
                with stages.stage("preprocess"):
                    pixels = processor(images=images, return_tensors="pt")["pixel_values"]
                with stages.stage("host_to_device"):
                    pixels = pixels.to(env.device)
                with stages.stage("model"):
                    out = prepared.model(pixel_values=pixels).pooler_output
                with stages.stage("post_process"):
                    out.cpu()

    from focus_eval.runner.stages import StageClock

    run(paths[:batch], StageClock())  # warm-up
    return env.clock.measure_stages(len(paths), lambda stages: run(paths, stages), batch_size=batch,
                                    dtype="float32", workers=0)


def ours(prepared: Prepared, sizes: Sizes, env: Env, workers: int | None = None) -> Measurement:
    """The runner's embedding call (``embed_records``) as an evaluation makes it: prepared copies where they
    exist (read as they are) or raw files (JPEG draft decoding, fundus crop), decoded and resized to uint8 in
    loader workers, normalised on the device, bf16 autocast on CUDA, vectors written to cache shards."""
    from focus_eval.runner.embed import embed_records
    from focus_eval.runner.embed_cache import EmbeddingCache

    encoder = BenchEncoder(prepared.model, env.device)
    records = bench_records(prepared.root, prepared.raw, sizes.ours)
    workers = env.workers if workers is None else workers

    def run(chosen, stages=None):
        # a fresh cache each time: every image is embedded, none is read back from an earlier run
        cache = EmbeddingCache(prepared.root / "cache" / f"run{next(prepared.runs)}", "bench", DATASET)
        embed_records(encoder, chosen, cache, state=OneProcess(), batch_size=sizes.batch, num_workers=workers,
                      prepared_root=prepared.root if prepared.prepared else None, dtype=env.dtype, stages=stages)

    run(records[: min(len(records), sizes.batch)])  # warm-up: kernels, autotuning, worker start-up path
    return env.clock.measure_stages(len(records), lambda stages: run(records, stages), batch_size=sizes.batch,
                                    workers=workers, dtype=env.dtype_name, prepared=prepared.prepared)


def without_draft(prepared: Prepared, sizes: Sizes, env: Env, reference_run: Measurement) -> dict[str, Any]:
    """focus-eval's decode with full-size JPEG decoding, to show what draft decoding saves on large files."""
    from focus_eval.adapters.preprocessing import ImageTransform
    from focus_eval.runner.embed_loop import iter_embeddings
    from focus_eval.runner.images import DecodeAndTransform, ImageItem

    transform = ImageTransform(size=SIDE, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), resize="squash")

    def model_fn(pixels):
        return prepared.model(pixel_values=transform.normalize(pixels)).last_hidden_state[:, 0]

    def run(paths):
        items = [ImageItem(i, str(i), p, None) for i, p in enumerate(paths)]
        for _ in iter_embeddings(model_fn, DecodeAndTransform(transform), items, batch_size=sizes.batch,
                                 num_workers=env.workers, device=env.device, dtype=env.dtype):
            pass

    paths = cycle(prepared.files, sizes.ours)
    run(paths[: min(len(paths), sizes.batch)])
    measured = env.clock.measure(len(paths), lambda: run(paths), batch_size=sizes.batch, workers=env.workers,
                                 dtype=env.dtype_name, draft_decoding=False)
    return {"ours_without_draft": measured.to_dict()}


def without_draft_lines(result: dict[str, Any]) -> list[list[str]]:
    return [row(ours=result["ours_without_draft"]["img_s"], what="without JPEG draft decoding")]


def stage_lines(result: dict[str, Any]) -> list[list[str]]:
    return [stage_line(result["reference"]["stages"], "reference stages"),
            stage_line(result["ours"]["stages"], "focus-eval stages")]

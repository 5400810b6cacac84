"""Encoder workloads: a ViT image embedding from JPEG files, the reference-style loop (PIL and the Hugging Face
processor in the main thread) against focus-eval's DataLoader path."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from focus_eval.bench.measure import Env, Measurement, Sizes, count_params, row

# Real architecture values (Hugging Face config of google/vit-large-patch16-224); the tiny variant keeps the
# structure and shrinks the widths and depths.
VIT_L16 = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
               image_size=224, patch_size=16)
VIT_TINY = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                image_size=224, patch_size=16)


@dataclass
class Prepared:
    """A ViT and the JPEG files it embeds; ``info`` is reported with the workload's figures."""

    model: Any
    files: list[Path]
    info: dict[str, Any]


def write_jpegs(folder: Path, size: tuple[int, int], distinct: int, seed: int = 0) -> list[Path]:
    """Fundus-like JPEGs (bright disc on black, smooth colour and texture), ``distinct`` different files."""
    import numpy as np
    from PIL import Image, ImageFilter

    rng = np.random.default_rng(seed)
    width, height = size
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    radius = 0.46 * min(width, height)
    disc = ((xx - width / 2) ** 2 + (yy - height / 2) ** 2) <= radius ** 2
    paths = []
    for i in range(distinct):
        noise = Image.fromarray(rng.integers(0, 255, (height // 8 + 1, width // 8 + 1, 3), dtype=np.uint8))
        texture = np.asarray(noise.resize((width, height), Image.Resampling.BILINEAR), dtype=np.float32)
        base = np.array([170, 70, 30], dtype=np.float32) * (0.7 + 0.3 * xx[..., None] / width)
        pixels = np.where(disc[..., None], np.clip(base + 0.25 * texture, 0, 255), 0).astype(np.uint8)
        image = Image.fromarray(pixels).filter(ImageFilter.GaussianBlur(1))
        path = folder / f"fundus_{width}x{height}_{i}.jpg"
        image.save(path, quality=92)
        paths.append(path)
    return paths


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
    size = tuple(options["image_size"])
    model = build_vit(env.tiny, env.device)
    return Prepared(model, write_jpegs(folder, size, sizes.files),
                    {"params": count_params(model), "image_size": list(size)})


def reference(prepared: Prepared, sizes: Sizes, env: Env) -> Measurement:
    """PIL decode + the HF ViT processor in the main thread, fp32, one model call per batch of 16."""
    import torch
    from PIL import Image
    from transformers import ViTImageProcessor

    processor = ViTImageProcessor(size={"height": 224, "width": 224}, image_mean=[0.5] * 3, image_std=[0.5] * 3)
    paths, batch = cycle(prepared.files, sizes.reference), sizes.reference_batch

    def decode(path):
        with Image.open(path) as image:
            return image.convert("RGB")

    def run(items):
        with torch.inference_mode():
            for start in range(0, len(items), batch):
                images = [decode(p) for p in items[start:start + batch]]
                pixels = processor(images=images, return_tensors="pt")["pixel_values"].to(env.device)
                prepared.model(pixel_values=pixels).pooler_output.cpu()

    run(paths[:batch])  # warm-up
    return env.clock.measure(len(paths), lambda: run(paths), batch_size=batch, dtype="float32", workers=0)


def ours(prepared: Prepared, sizes: Sizes, env: Env, draft: bool = True) -> Measurement:
    """focus-eval's encoder path as the runner runs it: DataLoader workers decode (JPEG draft decoding, fundus
    crop) and resize to uint8, normalisation on the device, bf16 autocast on CUDA."""
    from focus_eval.adapters.preprocessing import ImageTransform
    from focus_eval.runner.embed_loop import iter_embeddings
    from focus_eval.runner.images import DecodeAndTransform, ImageItem

    transform = ImageTransform(size=224, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), resize="squash")
    paths, batch = cycle(prepared.files, sizes.ours), sizes.batch

    def model_fn(pixels):
        return prepared.model(pixel_values=transform.normalize(pixels)).last_hidden_state[:, 0]

    def run(paths_):
        items = [ImageItem(i, str(i), p, 224 if draft else None) for i, p in enumerate(paths_)]
        for _ in iter_embeddings(model_fn, DecodeAndTransform(transform), items, batch_size=batch,
                                 num_workers=env.workers, device=env.device, dtype=env.dtype):
            pass

    run(paths[: min(len(paths), batch)])  # warm-up: kernels, autotuning, worker start-up path
    return env.clock.measure(len(paths), lambda: run(paths), batch_size=batch, workers=env.workers,
                             dtype=env.dtype_name, draft_decoding=draft)


def without_draft(prepared: Prepared, sizes: Sizes, env: Env, reference_run: Measurement) -> dict[str, Any]:
    """focus-eval's path with full-size JPEG decoding, to show what draft decoding saves on large files."""
    return {"ours_without_draft": ours(prepared, sizes, env, draft=False).to_dict()}


def without_draft_lines(result: dict[str, Any]) -> list[str]:
    return [row(ours=result["ours_without_draft"]["img_s"], what="without JPEG draft decoding")]

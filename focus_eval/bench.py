"""Throughput benchmark: reference-style loops against focus-eval's own paths, on the same inputs, in one process.

Models are random-weight instances of the real architectures built from configuration values written here
(cost does not depend on weight values); nothing is downloaded. ``--tiny`` shrinks every model so the whole
benchmark runs on a CPU in seconds; its ratios show that both loops run, not how fast a GPU is.

    python -m focus_eval.bench [--tiny] [--json FILE] [--workloads vit224 vit2048 medgemma4b medgemma27b]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

WORKLOADS = {
    "vit224": "ViT-L/16 image embedding from 224-px JPEGs",
    "vit2048": "ViT-L/16 image embedding from 2048x1536 JPEGs",
    "medgemma4b": "MedGemma-4B architecture, yes/no scoring",
    "medgemma27b": "MedGemma-27B architecture, yes/no scoring",
}

# The generic glaucoma prompt of the reference implementation (the task files ship the same text).
PROMPT = ("Based on the fundus image, does this eye show glaucoma or glaucomatous optic disc changes?\n\n"
          "Respond with **yes** if glaucoma or suspicious glaucomatous changes are present, or **no** otherwise.\n"
          "Respond only with \"yes\" or \"no\" (without additional commentary).")
OTHER_PROMPTS = (PROMPT.replace("glaucoma or glaucomatous optic disc changes", "diabetic retinopathy"),
                 PROMPT.replace("glaucoma or glaucomatous optic disc changes", "referable diabetic retinopathy"))

# Real architecture values (Hugging Face configs of google/vit-large-patch16-224, google/medgemma-4b-it and
# google/medgemma-27b-it); the tiny variants keep the structure and shrink the widths and depths.
VIT_L16 = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
               image_size=224, patch_size=16)
VIT_TINY = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                image_size=224, patch_size=16)
SIGLIP_896 = dict(hidden_size=1152, intermediate_size=4304, num_hidden_layers=27, num_attention_heads=16,
                  image_size=896, patch_size=14, vision_use_head=False)
SIGLIP_TINY = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                   image_size=64, patch_size=8, vision_use_head=False)
_GEMMA_COMMON = dict(vocab_size=262_208, sliding_window=1024, max_position_embeddings=131_072,
                     rope_scaling={"rope_type": "linear", "factor": 8.0})
GEMMA3_TEXT = {
    "medgemma4b": dict(_GEMMA_COMMON, hidden_size=2560, intermediate_size=10240, num_hidden_layers=34,
                       num_attention_heads=8, num_key_value_heads=4, head_dim=256, query_pre_attn_scalar=256),
    "medgemma27b": dict(_GEMMA_COMMON, hidden_size=5376, intermediate_size=21504, num_hidden_layers=62,
                        num_attention_heads=32, num_key_value_heads=16, head_dim=128, query_pre_attn_scalar=168),
}
GEMMA3_TEXT_TINY = {
    "medgemma4b": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                       num_key_value_heads=1, head_dim=32, query_pre_attn_scalar=32, sliding_window=512),
    "medgemma27b": dict(hidden_size=96, intermediate_size=192, num_hidden_layers=3, num_attention_heads=4,
                        num_key_value_heads=2, head_dim=24, query_pre_attn_scalar=24, sliding_window=512),
}
PROMPT_TOKENS = 338  # MedGemma-4B prompt length measured by the reference workload (256 of them image tokens)


@dataclass
class Plan:
    """Image counts and batch sizes for one benchmark run (GPU-sized, or tiny for a CPU)."""

    tiny: bool
    vit224_reference: int = 512
    vit224_ours: int = 8192
    vit2048_reference: int = 64
    vit2048_ours: int = 512
    vit_reference_batch: int = 16
    vit_batch: int = 256
    mllm_reference: dict[str, int] = field(default_factory=lambda: {"medgemma4b": 24, "medgemma27b": 12})
    mllm_reference_long: dict[str, int] = field(default_factory=lambda: {"medgemma4b": 8, "medgemma27b": 4})
    mllm_ours: dict[str, int] = field(default_factory=lambda: {"medgemma4b": 512, "medgemma27b": 128})
    mllm_batch: dict[str, int] = field(default_factory=lambda: {"medgemma4b": 64, "medgemma27b": 16})
    three_tasks_images: int = 128

    @classmethod
    def for_mode(cls, tiny: bool) -> "Plan":
        if not tiny:
            return cls(tiny=False)
        return cls(tiny=True, vit224_reference=32, vit224_ours=128, vit2048_reference=4, vit2048_ours=16,
                   vit_reference_batch=16, vit_batch=32,
                   mllm_reference={"medgemma4b": 4, "medgemma27b": 4},
                   mllm_reference_long={"medgemma4b": 2, "medgemma27b": 2},
                   mllm_ours={"medgemma4b": 16, "medgemma27b": 16},
                   mllm_batch={"medgemma4b": 8, "medgemma27b": 8}, three_tasks_images=8)


@dataclass
class Measurement:
    images: int
    seconds: float
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def img_s(self) -> float:
        return self.images / self.seconds if self.seconds > 0 else float("inf")

    def to_dict(self) -> dict[str, Any]:
        return {"img_s": round(self.img_s, 3), **asdict(self)}


class Clock:
    """Wall time that waits for queued GPU work before reading the clock."""

    def __init__(self, device):
        self.device = device

    def sync(self) -> None:
        import torch

        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def measure(self, images: int, work: Callable[[], Any], **settings: Any) -> Measurement:
        self.sync()
        start = time.perf_counter()
        work()
        self.sync()
        return Measurement(images, time.perf_counter() - start, settings)


# ----- input files


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


# ----- encoder workloads


def build_vit(tiny: bool, device):
    import torch
    from transformers import ViTConfig, ViTModel

    config = ViTConfig(**(VIT_TINY if tiny else VIT_L16))
    with torch.device(device):
        model = ViTModel._from_config(config, add_pooling_layer=True, attn_implementation="sdpa",
                                      dtype=torch.float32)
    return model.eval()


def reference_vit(model, paths: list[str], batch: int, device, clock: Clock) -> Measurement:
    """PIL decode + the HF ViT processor in the main thread, fp32, one model call per batch of 16."""
    import torch
    from PIL import Image
    from transformers import ViTImageProcessor

    processor = ViTImageProcessor(size={"height": 224, "width": 224}, image_mean=[0.5] * 3, image_std=[0.5] * 3)

    def decode(path):
        with Image.open(path) as image:
            return image.convert("RGB")

    def run(items):
        with torch.inference_mode():
            for start in range(0, len(items), batch):
                images = [decode(p) for p in items[start:start + batch]]
                pixels = processor(images=images, return_tensors="pt")["pixel_values"].to(device)
                model(pixel_values=pixels).pooler_output.cpu()

    run(paths[:batch])  # warm-up
    return clock.measure(len(paths), lambda: run(paths), batch_size=batch, dtype="float32", workers=0)


def ours_vit(model, paths: list[str], batch: int, workers: int, device, dtype, draft: bool,
             clock: Clock) -> Measurement:
    """focus-eval's encoder path as the runner runs it: DataLoader workers decode (JPEG draft decoding, fundus
    crop) and resize to uint8, normalisation on the device, bf16 autocast on CUDA."""
    from focus_eval.adapters.preprocessing import ImageTransform
    from focus_eval.runner.embed_loop import iter_embeddings
    from focus_eval.runner.images import DecodeAndTransform, ImageItem

    transform = ImageTransform(size=224, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), resize="squash")

    def model_fn(pixels):
        return model(pixel_values=transform.normalize(pixels)).last_hidden_state[:, 0]

    def run(paths_):
        items = [ImageItem(i, str(i), p, 224 if draft else None) for i, p in enumerate(paths_)]
        for _ in iter_embeddings(model_fn, DecodeAndTransform(transform), items, batch_size=batch,
                                 num_workers=workers, device=device, dtype=dtype):
            pass

    run(paths[: min(len(paths), batch)])  # warm-up: kernels, autotuning, worker start-up path
    return clock.measure(len(paths), lambda: run(paths), batch_size=batch, workers=workers,
                         dtype=str(dtype).replace("torch.", ""), draft_decoding=draft)


def bench_vit(name: str, plan: Plan, env: dict, folder: Path) -> dict[str, Any]:
    size = (224, 224) if name == "vit224" else (2048, 1536)
    distinct = 8 if name == "vit224" else (2 if plan.tiny else 8)
    files = write_jpegs(folder, size, distinct)
    n_ref = plan.vit224_reference if name == "vit224" else plan.vit2048_reference
    n_ours = plan.vit224_ours if name == "vit224" else plan.vit2048_ours
    model = build_vit(plan.tiny, env["device"])
    reference = reference_vit(model, cycle(files, n_ref), plan.vit_reference_batch, env["device"], env["clock"])
    ours = ours_vit(model, cycle(files, n_ours), plan.vit_batch, env["workers"], env["device"], env["dtype"],
                    draft=True, clock=env["clock"])
    extra = {}
    if name == "vit2048":
        extra["ours_without_draft"] = ours_vit(model, cycle(files, n_ours), plan.vit_batch, env["workers"],
                                               env["device"], env["dtype"], draft=False,
                                               clock=env["clock"]).to_dict()
    return _result(reference, ours, params=_params(model), image_size=list(size), **extra)


# ----- multimodal LLM workloads


def build_medgemma(name: str, tiny: bool, device, dtype):
    """A random-weight Gemma 3 model of the named architecture with the real processor classes."""
    import torch
    from transformers import Gemma3ForConditionalGeneration

    from focus_eval.adapters.tiny_mllm import (gemma3_config, gemma3_processor, gemma3_special_ids,
                                               gemma3_tokenizer)

    tokenizer = gemma3_tokenizer()
    tokens_per_image = 16 if tiny else 256
    vision = SIGLIP_TINY if tiny else SIGLIP_896
    text = dict(GEMMA3_TEXT_TINY[name], vocab_size=len(tokenizer)) if tiny else GEMMA3_TEXT[name]
    config = gemma3_config(text, vision, tokens_per_image, gemma3_special_ids(tokenizer))
    with torch.device(device):  # weights are created (and randomly initialised) where they will run
        model = Gemma3ForConditionalGeneration._from_config(config, dtype=dtype, attn_implementation="sdpa")
    processor = gemma3_processor(tokenizer, image_size=vision["image_size"], tokens_per_image=tokens_per_image)
    return model.eval(), processor


def sized_prompt(scorer, target_tokens: int | None) -> tuple[str, int]:
    """The benchmark prompt, lengthened or cut so one chat row has about ``target_tokens`` tokens."""
    from PIL import Image

    image = Image.new("RGB", (64, 64))

    def length(text: str) -> int:
        return int(scorer.encode([image], [text], with_pixels=False)["input_ids"].shape[1])

    text = PROMPT
    if target_tokens is None:
        return text, length(text)
    words = PROMPT.split(" ")
    while length(text) < target_tokens:
        text = text + " " + words[len(text.split(" ")) % len(words)]
    while length(text) > target_tokens and " " in text:
        text = text.rsplit(" ", 1)[0]
    return text, length(text)


def reference_mllm(model, processor, images, prompt: str, max_new_tokens: int, scorer, clock: Clock) -> Measurement:
    """One ``generate()`` per image with output scores; P(yes) from the first step (the reference loop)."""
    import torch

    def one(image):
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}]
        text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        inputs = processor(images=[[image]], text=[text], return_tensors="pt", add_special_tokens=False)
        inputs = {k: (v.to(scorer.device, dtype=scorer.dtype) if v.is_floating_point() else v.to(scorer.device))
                  for k, v in inputs.items()}
        with torch.inference_mode():
            # min_new_tokens: random weights may emit an end token early; the reference always paid for its tokens
            out = model.generate(**inputs, max_new_tokens=max_new_tokens, min_new_tokens=max_new_tokens,
                                 do_sample=False, output_scores=True, return_dict_in_generate=True,
                                 pad_token_id=processor.tokenizer.pad_token_id)
        scorer.answer_scores(out.scores[0])
        processor.tokenizer.batch_decode(out.sequences[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)

    one(images[0])  # warm-up
    return clock.measure(len(images), lambda: [one(image) for image in images], batch_size=1,
                         max_new_tokens=max_new_tokens, dtype=str(scorer.dtype).replace("torch.", ""))


def ours_mllm(scorer, images, prompts: list[str], batch: int, clock: Clock, mode: str) -> Measurement:
    """focus-eval's path: batched, left-padded prefill. ``mode``: "scores" (first-token scores only),
    "scores+text" (plus a 5-token greedy answer from the same prefill), "three_tasks_shared" (three prompts per
    image; vision tower and image prefix prefilled once per image), "three_tasks_tower" (tower once per image,
    full prefill per prompt) or "three_tasks_plain" (three prompts, everything once per prompt).
    ``batch`` counts prefill rows, so three-task modes take batch // 3 images per call."""
    rows = len(prompts) if mode.startswith("three") else 1
    per_call = max(1, batch // rows)

    def run(items):
        for start in range(0, len(items), per_call):
            chunk = items[start:start + per_call]
            if mode == "scores":
                scorer.score_yes_no(chunk, [prompts[0]] * len(chunk))
            elif mode == "scores+text":
                scorer.score_and_generate(chunk, [prompts[0]] * len(chunk), max_new_tokens=5)
            elif mode in ("three_tasks_shared", "three_tasks_tower"):
                scorer.share_prefix = mode == "three_tasks_shared"
                try:
                    scorer.score_yes_no_multi(chunk, [list(prompts)] * len(chunk))
                finally:
                    scorer.share_prefix = True
            else:
                scorer.score_yes_no([image for image in chunk for _ in prompts], list(prompts) * len(chunk))

    run(images[:per_call])  # warm-up
    return clock.measure(len(images), lambda: run(images), images_per_call=per_call, rows_per_image=rows,
                         mode=mode, dtype=str(scorer.dtype).replace("torch.", ""))


def bench_mllm(name: str, plan: Plan, env: dict) -> dict[str, Any]:
    from PIL import Image

    from focus_eval.adapters.mllm import MLLMScorer

    device, dtype, clock = env["device"], env["dtype"], env["clock"]
    model, processor = build_medgemma(name, plan.tiny, device, dtype)
    scorer = MLLMScorer(model, processor, device=device, dtype=dtype)
    prompt, tokens = sized_prompt(scorer, None if plan.tiny else PROMPT_TOKENS)
    three = [prompt, *OTHER_PROMPTS]
    side = 64 if plan.tiny else 896
    images = [Image.effect_noise((side, side), 64 + i % 32).convert("RGB") for i in range(plan.mllm_ours[name])]

    reference = reference_mllm(model, processor, images[: plan.mllm_reference[name]], prompt, 3, scorer, clock)
    reference_long = reference_mllm(model, processor, images[: plan.mllm_reference_long[name]], prompt, 16,
                                    scorer, clock)
    batch = plan.mllm_batch[name]
    ours = ours_mllm(scorer, images, three, batch, clock, "scores")
    with_text = ours_mllm(scorer, images, three, batch, clock, "scores+text")
    extra: dict[str, Any] = {"reference_16_tokens": reference_long.to_dict(), "ours_with_text": with_text.to_dict()}
    if name == "medgemma4b":
        subset = images[: plan.three_tasks_images]
        shared = ours_mllm(scorer, subset, three, batch, clock, "three_tasks_shared")
        tower = ours_mllm(scorer, subset, three, batch, clock, "three_tasks_tower")
        plain = ours_mllm(scorer, subset, three, batch, clock, "three_tasks_plain")
        extra["three_tasks"] = {"shared_tower_and_prefix": shared.to_dict(), "shared_tower": tower.to_dict(),
                                "nothing_shared": plain.to_dict(),
                                "sharing_gain": round(shared.img_s / plain.img_s, 3),
                                "tower_sharing_gain": round(tower.img_s / plain.img_s, 3),
                                "reference_img_s": round(reference.img_s / 3, 3),
                                "note": "images per second with all three tasks scored; the reference figure is "
                                        "its per-task rate divided by three (one generate() per image and task)"}
    return _result(reference, ours, params=_params(model), prompt_tokens=tokens, **extra)


# ----- driver


def _params(model) -> int:
    return int(sum(p.numel() for p in model.parameters()))


def _result(reference: Measurement, ours: Measurement, **extra: Any) -> dict[str, Any]:
    return {"reference_img_s": round(reference.img_s, 3), "ours_img_s": round(ours.img_s, 3),
            "ratio": round(ours.img_s / reference.img_s, 3), "reference": reference.to_dict(),
            "ours": ours.to_dict(), **extra}


def environment(device_name: str | None, tiny: bool, workers: int | None) -> dict[str, Any]:
    import torch

    device = torch.device(device_name or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False  # the reference ran true fp32
        label = torch.cuda.get_device_name(device)
    else:
        label = f"cpu ({torch.get_num_threads()} thread{'s' if torch.get_num_threads() > 1 else ''})"
    default_workers = min(2 if tiny else 16, os.cpu_count() or 1)
    return {"device": device, "label": label, "clock": Clock(device),
            "dtype": torch.bfloat16 if device.type == "cuda" else torch.float32,
            "workers": default_workers if workers is None else workers}


def run_bench(workloads: list[str], tiny: bool = False, device: str | None = None, workers: int | None = None,
              json_path: str | None = None, out=sys.stdout) -> dict[str, Any]:
    """Run the named workloads, print one line each (plus details), and return (and optionally write) the
    figures with the device name and date."""
    import torch

    from focus_eval.errors import FocusError

    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown:
        raise FocusError(f"unknown workloads {unknown}; choose from {list(WORKLOADS)}")
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    plan = Plan.for_mode(tiny)
    threads = torch.get_num_threads()
    if tiny:
        # Tiny matrices gain nothing from threads, and spinning threads stall badly on a busy machine.
        torch.set_num_threads(1)
    try:
        return _run(workloads, plan, environment(device, tiny, workers), json_path, out)
    finally:
        torch.set_num_threads(threads)


def _run(workloads: list[str], plan: Plan, env: dict[str, Any], json_path: str | None, out) -> dict[str, Any]:
    import torch
    import transformers

    tiny = plan.tiny
    report: dict[str, Any] = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "device": env["label"],
        "torch": torch.__version__, "transformers": transformers.__version__, "tiny": tiny,
        "workers": env["workers"], "workloads": {}}
    print(f"focus-eval bench on {env['label']}{' (tiny models)' if tiny else ''}, {report['date']}", file=out)
    print(f"{'workload':<13} {'reference img/s':>16} {'focus-eval img/s':>17} {'ratio':>7}  what", file=out)
    with tempfile.TemporaryDirectory(prefix="focus-bench-") as tmp:
        for name in workloads:
            if name.startswith("vit"):
                result = bench_vit(name, plan, env, Path(tmp))
            else:
                result = bench_mllm(name, plan, env)
            result["description"] = WORKLOADS[name]
            report["workloads"][name] = result
            print(f"{name:<13} {result['reference_img_s']:>16.2f} {result['ours_img_s']:>17.2f} "
                  f"{result['ratio']:>6.2f}x  {WORKLOADS[name]}", file=out)
            _print_extra(result, out)
            if env["device"].type == "cuda":
                torch.cuda.empty_cache()
    if json_path:
        Path(json_path).write_text(json.dumps(report, indent=2), encoding="utf-8")
        print(f"wrote {json_path}", file=out)
    return report


def _print_extra(result: dict[str, Any], out) -> None:
    if "ours_without_draft" in result:
        print(f"{'':<13} {'':>16} {result['ours_without_draft']['img_s']:>17.2f}          without JPEG draft decoding",
              file=out)
    if "reference_16_tokens" in result:
        print(f"{'':<13} {result['reference_16_tokens']['img_s']:>16.2f} {'':>17}          reference with 16 new "
              f"tokens", file=out)
        print(f"{'':<13} {'':>16} {result['ours_with_text']['img_s']:>17.2f}          scores + 5-token greedy "
              f"answer", file=out)
    if "three_tasks" in result:
        three = result["three_tasks"]
        best = three["shared_tower_and_prefix"]["img_s"]
        print(f"{'':<13} {three['reference_img_s']:>16.2f} {best:>17.2f} {best / three['reference_img_s']:>6.2f}x  "
              f"three tasks per image, image encoded once ({three['sharing_gain']:.2f}x over nothing shared; "
              f"tower alone {three['tower_sharing_gain']:.2f}x)", file=out)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tiny", action="store_true", help="tiny models: runs on a CPU in seconds")
    parser.add_argument("--json", metavar="FILE", help="write the figures (with device and date) to FILE")
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS),
                        metavar="NAME", help=f"which workloads to run (default: all of {', '.join(WORKLOADS)})")
    parser.add_argument("--device", help="torch device (default: cuda when available, else cpu)")
    parser.add_argument("--workers", type=int, help="DataLoader worker processes for focus-eval's encoder loop")


def run(args: argparse.Namespace) -> int:
    run_bench(args.workloads, tiny=args.tiny, device=args.device, workers=args.workers, json_path=args.json)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m focus_eval.bench", description=__doc__.splitlines()[0])
    add_arguments(parser)
    from focus_eval.errors import FocusError

    try:
        return run(parser.parse_args(argv))
    except FocusError as exc:
        print(f"focus-eval: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

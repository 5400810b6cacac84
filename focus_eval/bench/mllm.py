"""Multimodal LLM workloads: yes/no scoring with a Gemma 3 model, one ``generate()`` per image (the reference
loop) against the runner's own prompt loop (``answer_images``: loader workers that decode and run the
processor's image half, pinned copies, ``score_and_generate_multi``, sample lines written), with the same loop
on the main thread and on prepared copies, longer answers and three tasks per image beside it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from focus_eval.bench.inputs import DATASET, bench_records, fundus_jpegs, prepared_copies
from focus_eval.bench.measure import Env, Measurement, Sizes, count_params, row, stage_line

# The generic glaucoma prompt of the reference implementation (the task files ship the same text).
PROMPT = ("Based on the fundus image, does this eye show glaucoma or glaucomatous optic disc changes?\n\n"
          "Respond with **yes** if glaucoma or suspicious glaucomatous changes are present, or **no** otherwise.\n"
          "Respond only with \"yes\" or \"no\" (without additional commentary).")
OTHER_PROMPTS = (PROMPT.replace("glaucoma or glaucomatous optic disc changes", "diabetic retinopathy"),
                 PROMPT.replace("glaucoma or glaucomatous optic disc changes", "referable diabetic retinopathy"))
PROMPT_TOKENS = 338  # MedGemma-4B prompt length measured by the reference workload (256 of them image tokens)
SOURCE = (2048, 1536)  # the fundus JPEGs both loops read

# Real architecture values (Hugging Face configs of google/medgemma-4b-it and google/medgemma-27b-it); the tiny
# variants keep the structure and shrink the widths and depths.
SIGLIP_896 = dict(hidden_size=1152, intermediate_size=4304, num_hidden_layers=27, num_attention_heads=16,
                  image_size=896, patch_size=14, vision_use_head=False)
SIGLIP_TINY = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                   image_size=64, patch_size=8, vision_use_head=False)
_GEMMA_COMMON = dict(vocab_size=262_208, sliding_window=1024, max_position_embeddings=131_072,
                     rope_scaling={"rope_type": "linear", "factor": 8.0})
GEMMA3_4B = dict(_GEMMA_COMMON, hidden_size=2560, intermediate_size=10240, num_hidden_layers=34,
                 num_attention_heads=8, num_key_value_heads=4, head_dim=256, query_pre_attn_scalar=256)
GEMMA3_27B = dict(_GEMMA_COMMON, hidden_size=5376, intermediate_size=21504, num_hidden_layers=62,
                  num_attention_heads=32, num_key_value_heads=16, head_dim=128, query_pre_attn_scalar=168)
GEMMA3_4B_TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                      num_key_value_heads=1, head_dim=32, query_pre_attn_scalar=32, sliding_window=512)
GEMMA3_27B_TINY = dict(hidden_size=96, intermediate_size=192, num_hidden_layers=3, num_attention_heads=4,
                       num_key_value_heads=2, head_dim=24, query_pre_attn_scalar=24, sliding_window=512)
# A mid-size Gemma 3 that runs on a CPU in seconds yet has the real models' 256 image tokens per image and their
# 338-token rows: a 448-px tower (1,024 patches pooled 2 x 2) that costs about 70 % of a prefill by FLOP count,
# as MedGemma-4B's tower does (about 5.5 of 7.7 TFLOP), so that what sharing it saves compares with a real model.
SIGLIP_MID = dict(hidden_size=128, intermediate_size=512, num_hidden_layers=6, num_attention_heads=4,
                  image_size=448, patch_size=14, vision_use_head=False)
GEMMA3_MID = dict(hidden_size=128, intermediate_size=512, num_hidden_layers=6, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=32, query_pre_attn_scalar=32, sliding_window=1024)
# Per workload and mode: text and vision settings, image tokens and the row length the prompt is sized to
# (None: the prompt as written).
MEDGEMMA_4B = {"full": (GEMMA3_4B, SIGLIP_896, 256, PROMPT_TOKENS), "tiny": (GEMMA3_4B_TINY, SIGLIP_TINY, 16, None)}
MEDGEMMA_27B = {"full": (GEMMA3_27B, SIGLIP_896, 256, PROMPT_TOKENS),
                "tiny": (GEMMA3_27B_TINY, SIGLIP_TINY, 16, None)}
MEDGEMMA_MID = {mode: (GEMMA3_MID, SIGLIP_MID, 256, PROMPT_TOKENS) for mode in ("full", "tiny")}


@dataclass
class Prepared:
    """A Gemma 3 model with its processor and focus-eval scorer, the data root and fundus JPEGs both loops
    read, the decode size, the three task prompts and ``info`` reported with the workload's figures."""

    model: Any
    processor: Any
    scorer: Any
    root: Path
    files: list[Path]
    side: int
    prompts: list[str]
    info: dict[str, Any]


def build_medgemma(text: Mapping[str, Any], vision: Mapping[str, Any], tokens_per_image: int, device, dtype):
    """A random-weight Gemma 3 model of the given architecture with the real processor classes (the text
    model's vocabulary is the small offline tokenizer's unless ``text`` sets the real one)."""
    import torch
    from transformers import Gemma3ForConditionalGeneration

    from focus_eval.tiny.mllm import gemma3_config, gemma3_processor, gemma3_special_ids, gemma3_tokenizer

    tokenizer = gemma3_tokenizer()
    text = {"vocab_size": len(tokenizer), **text}
    config = gemma3_config(text, dict(vision), tokens_per_image, gemma3_special_ids(tokenizer))
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


def setup(options: Mapping[str, Any], sizes: Sizes, env: Env, folder: Path) -> Prepared:
    from focus_eval.adapters.mllm import MLLMScorer

    text, vision, tokens, prompt_tokens = options["tiny" if env.tiny else "full"]
    model, processor = build_medgemma(text, vision, tokens, env.device, env.dtype)
    scorer = MLLMScorer(model, processor, device=env.device, dtype=env.dtype)
    prompt, length = sized_prompt(scorer, prompt_tokens)
    # the other tasks' prompts get the same length: their own question, then the rest of the first prompt
    prompts = [prompt, *[other + prompt[len(PROMPT):] for other in OTHER_PROMPTS]]
    root = folder / "mllm"
    raw = fundus_jpegs(root / DATASET, SOURCE, sizes.files)
    return Prepared(model, processor, scorer, root, raw, int(vision["image_size"]), prompts,
                    {"params": count_params(model), "prompt_tokens": length, "image_tokens": tokens,
                     "image_size": [vision["image_size"]] * 2, "source_size": list(SOURCE),
                     "tower_flop_share": round(tower_share(scorer, prompt, vision["image_size"]), 3)})


def tower_share(scorer, prompt: str, side: int) -> float:
    """The vision tower's share of one row's prefill, by FLOP count: what sharing the tower can save."""
    from PIL import Image
    from torch.utils.flop_counter import FlopCounterMode

    inputs = scorer.encode([Image.new("RGB", (side, side), (120, 40, 20))], [prompt])
    with FlopCounterMode(display=False) as tower:
        scorer._tower(inputs)
    with FlopCounterMode(display=False) as prefill:
        scorer.first_token_logits(inputs)
    return tower.get_total_flops() / max(1, prefill.get_total_flops())


def reference_loop(prepared: Prepared, count: int, max_new_tokens: int, env: Env) -> Measurement:
    """Per image: PIL decode, the processor and one ``generate()`` with output scores; P(yes) from the first
    step (the reference loop)."""
    import torch

    from focus_eval.data.images import open_image

    model, processor, scorer, prompt = prepared.model, prepared.processor, prepared.scorer, prepared.prompts[0]
    paths = [prepared.files[i % len(prepared.files)] for i in range(count)]
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    def one(path, stages):
        with stages.stage("decode"):
            image = open_image(path)
        with stages.stage("preprocess"):
            inputs = processor(images=[[image]], text=[text], return_tensors="pt", add_special_tokens=False)
        with stages.stage("host_to_device"):
            inputs = {k: (v.to(scorer.device, dtype=scorer.dtype) if v.is_floating_point() else v.to(scorer.device))
                      for k, v in inputs.items()}
        with stages.stage("model"), torch.inference_mode():
            # min_new_tokens: random weights may emit an end token early; the reference always paid for its tokens
            out = model.generate(**inputs, max_new_tokens=max_new_tokens, min_new_tokens=max_new_tokens,
                                 do_sample=False, output_scores=True, return_dict_in_generate=True,
                                 pad_token_id=processor.tokenizer.pad_token_id)
        with stages.stage("post_process"):
            scorer.answer_scores(out.scores[0])
            processor.tokenizer.batch_decode(out.sequences[:, inputs["input_ids"].shape[1]:],
                                             skip_special_tokens=True)

    from focus_eval.runner.stages import StageClock

    one(paths[0], StageClock())  # warm-up
    return env.clock.measure_stages(len(paths), lambda stages: [one(p, stages) for p in paths], batch_size=1,
                                    max_new_tokens=max_new_tokens, dtype=str(scorer.dtype).replace("torch.", ""),
                                    workers=0)


def runner_loop(prepared: Prepared, sizes: Sizes, env: Env, workers: int, from_prepared: bool = False
                ) -> Measurement:
    """The runner's prompt loop (``answer_images``) on one task: raw fundus JPEGs (draft decoding, fundus
    crop) or their prepared copies at the model's input size, ``workers`` loader processes (0: all of it on the
    main thread), one sample line written per image as the prompt method writes it."""
    from focus_eval.runner.images import ImageItem
    from focus_eval.runner.methods.prompt import PartWriter, answer_images
    from focus_eval.runner.units import Unit

    files = prepared.files
    if from_prepared:
        files = prepared_copies(prepared.root, files, prepared.side, env.workers)
    records = bench_records(prepared.root, prepared.files, sizes.ours)
    items = [ImageItem(i, r.image_id, str(files[i % len(files)]), prepared.side, not from_prepared)
             for i, r in enumerate(records)]
    unit = Unit(_BenchTask(), "prompt")
    out = prepared.root / "samples.jsonl"

    def run(count, stages=None):
        with out.open("w", encoding="utf-8") as handle:
            writer = PartWriter({unit.stem: handle}, {r.image_id: [unit] for r in records}, records)
            answer_images(prepared.scorer, items[:count], [[prepared.prompts[0]]] * count, writer,
                          batch_size=sizes.batch, num_workers=workers, stages=stages)

    run(min(len(items), sizes.batch))  # warm-up
    return env.clock.measure_stages(len(items), lambda stages: run(len(items), stages), batch_size=sizes.batch,
                                    workers=workers, inputs="prepared copies" if from_prepared else "raw JPEGs",
                                    max_new_tokens=prepared.scorer.max_new_tokens,
                                    dtype=str(prepared.scorer.dtype).replace("torch.", ""))


class _BenchTask:
    """The little of a task that the prompt method's writer reads."""

    name = "dr_bench"
    target = "dr"
    splits = {"test": "test"}

    def label(self, record) -> int:
        return record.dr


def reference(prepared: Prepared, sizes: Sizes, env: Env) -> Measurement:
    return reference_loop(prepared, sizes.reference, 3, env)


def ours(prepared: Prepared, sizes: Sizes, env: Env) -> Measurement:
    return runner_loop(prepared, sizes, env, env.workers)


def main_thread(prepared: Prepared, sizes: Sizes, env: Env, reference_run: Measurement) -> dict[str, Any]:
    """The same loop with decoding and the processor on the main thread, in series with the model; and on
    prepared copies at the model's input size."""
    alone = runner_loop(prepared, sizes, env, 0)
    copies = runner_loop(prepared, sizes, env, env.workers, from_prepared=True)
    return {"ours_main_thread": alone.to_dict(), "ours_prepared": copies.to_dict()}


def main_thread_lines(result: dict[str, Any]) -> list[list[str]]:
    ours_ = result["ours"]["img_s"]
    alone, copies = result["ours_main_thread"]["img_s"], result["ours_prepared"]["img_s"]
    return [stage_line(result["ours"]["stages"], "focus-eval stages"),
            row(ours=alone, ratio=ours_ / alone, what="processor on the main thread (ratio: workers' gain)"),
            row(ours=copies, what="from prepared copies at the model's input size")]


def longer_answers(prepared: Prepared, sizes: Sizes, env: Env, reference_run: Measurement) -> dict[str, Any]:
    """The reference loop with 16 new tokens (focus-eval's figure already includes its 5-token answer)."""
    return {"reference_16_tokens": reference_loop(prepared, sizes.reference_long, 16, env).to_dict()}


def longer_answers_lines(result: dict[str, Any]) -> list[list[str]]:
    return [row(reference=result["reference_16_tokens"]["img_s"], what="reference with 16 new tokens")]


def scorer_loop(prepared: Prepared, images: list, batch: int, env: Env, mode: str) -> Measurement:
    """Three prompts per image through the runner's adapter call: "shared" (vision tower and image prefix once
    per image), "tower" (tower once per image, full prefill per prompt) or "plain" (every (image, prompt) a row
    of its own, processor and tower included). ``batch`` counts prefill rows, so calls take batch // 3
    images."""
    scorer, prompts = prepared.scorer, prepared.prompts
    per_call = max(1, batch // len(prompts))

    def run(chosen):
        for start in range(0, len(chosen), per_call):
            chunk = chosen[start:start + per_call]
            if mode == "plain":
                scorer.score_and_generate([image for image in chunk for _ in prompts], list(prompts) * len(chunk))
                continue
            scorer.share_prefix = mode == "shared"
            try:
                scorer.score_and_generate_multi(chunk, [list(prompts)] * len(chunk))
            finally:
                scorer.share_prefix = True

    run(images[:per_call])  # warm-up
    return env.clock.measure(len(images), lambda: run(images), images_per_call=per_call,
                             rows_per_image=len(prompts), mode=mode, dtype=str(scorer.dtype).replace("torch.", ""))


def three_tasks(prepared: Prepared, sizes: Sizes, env: Env, reference_run: Measurement) -> dict[str, Any]:
    """Three prompts per image with the image encoded once (and once with its prefix shared too) against
    nothing shared; the reference loop's figure is its single-task rate divided by three."""
    from focus_eval.runner.images import load_image

    decoded = [load_image(str(path), prepared.side) for path in prepared.files]
    images = [decoded[i % len(decoded)] for i in range(sizes.three_tasks)]
    shared = scorer_loop(prepared, images, sizes.batch, env, "shared")
    tower = scorer_loop(prepared, images, sizes.batch, env, "tower")
    plain = scorer_loop(prepared, images, sizes.batch, env, "plain")
    return {"three_tasks": {
        "shared_tower_and_prefix": shared.to_dict(), "shared_tower": tower.to_dict(),
        "nothing_shared": plain.to_dict(), "sharing_gain": round(shared.img_s / plain.img_s, 3),
        "tower_sharing_gain": round(tower.img_s / plain.img_s, 3),
        "reference_img_s": round(reference_run.img_s / 3, 3),
        "note": "images per second with all three tasks scored (5-token answers included); the reference figure "
                "is its per-task rate divided by three (one generate() per image and task)"}}


def three_tasks_lines(result: dict[str, Any]) -> list[list[str]]:
    three = result["three_tasks"]
    best = three["shared_tower_and_prefix"]["img_s"]
    return [row(reference=three["reference_img_s"], ours=best, ratio=best / three["reference_img_s"],
                what=f"three tasks per image, image encoded once ({three['sharing_gain']:.2f}x over nothing "
                     f"shared; tower alone {three['tower_sharing_gain']:.2f}x)")]

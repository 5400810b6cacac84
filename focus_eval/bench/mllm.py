"""Multimodal LLM workloads: yes/no scoring with a Gemma 3 model, one ``generate()`` per image (the reference
loop) against focus-eval's batched prefill scorer, with longer answers and three tasks per image beside it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from focus_eval.bench.measure import Env, Measurement, Sizes, count_params, row

# The generic glaucoma prompt of the reference implementation (the task files ship the same text).
PROMPT = ("Based on the fundus image, does this eye show glaucoma or glaucomatous optic disc changes?\n\n"
          "Respond with **yes** if glaucoma or suspicious glaucomatous changes are present, or **no** otherwise.\n"
          "Respond only with \"yes\" or \"no\" (without additional commentary).")
OTHER_PROMPTS = (PROMPT.replace("glaucoma or glaucomatous optic disc changes", "diabetic retinopathy"),
                 PROMPT.replace("glaucoma or glaucomatous optic disc changes", "referable diabetic retinopathy"))
PROMPT_TOKENS = 338  # MedGemma-4B prompt length measured by the reference workload (256 of them image tokens)

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


@dataclass
class Prepared:
    """A Gemma 3 model with its processor and focus-eval scorer, the images and the three task prompts."""

    model: Any
    processor: Any
    scorer: Any
    images: list
    prompts: list[str]
    info: dict[str, Any]


def build_medgemma(options: Mapping[str, Any], tiny: bool, device, dtype):
    """A random-weight Gemma 3 model of the given text architecture with the real processor classes."""
    import torch
    from transformers import Gemma3ForConditionalGeneration

    from focus_eval.tiny.mllm import gemma3_config, gemma3_processor, gemma3_special_ids, gemma3_tokenizer

    tokenizer = gemma3_tokenizer()
    tokens_per_image = 16 if tiny else 256
    vision = SIGLIP_TINY if tiny else SIGLIP_896
    text = dict(options["tiny_text"], vocab_size=len(tokenizer)) if tiny else options["text"]
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


def setup(options: Mapping[str, Any], sizes: Sizes, env: Env, folder) -> Prepared:
    from PIL import Image

    from focus_eval.adapters.mllm import MLLMScorer

    model, processor = build_medgemma(options, env.tiny, env.device, env.dtype)
    scorer = MLLMScorer(model, processor, device=env.device, dtype=env.dtype)
    prompt, tokens = sized_prompt(scorer, None if env.tiny else PROMPT_TOKENS)
    side = 64 if env.tiny else 896
    images = [Image.effect_noise((side, side), 64 + i % 32).convert("RGB") for i in range(sizes.ours)]
    return Prepared(model, processor, scorer, images, [prompt, *OTHER_PROMPTS],
                    {"params": count_params(model), "prompt_tokens": tokens})


def reference_loop(prepared: Prepared, images: list, max_new_tokens: int, env: Env) -> Measurement:
    """One ``generate()`` per image with output scores; P(yes) from the first step (the reference loop)."""
    import torch

    model, processor, scorer, prompt = prepared.model, prepared.processor, prepared.scorer, prepared.prompts[0]

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
    return env.clock.measure(len(images), lambda: [one(image) for image in images], batch_size=1,
                             max_new_tokens=max_new_tokens, dtype=str(scorer.dtype).replace("torch.", ""))


def scorer_loop(prepared: Prepared, images: list, batch: int, env: Env, mode: str) -> Measurement:
    """focus-eval's path: batched, left-padded prefill. ``mode``: "scores" (first-token scores only),
    "scores+text" (plus a 5-token greedy answer from the same prefill), "three_tasks_shared" (three prompts per
    image; vision tower and image prefix prefilled once per image), "three_tasks_tower" (tower once per image,
    full prefill per prompt) or "three_tasks_plain" (three prompts, everything once per prompt).
    ``batch`` counts prefill rows, so three-task modes take batch // 3 images per call."""
    scorer, prompts = prepared.scorer, prepared.prompts
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
    return env.clock.measure(len(images), lambda: run(images), images_per_call=per_call, rows_per_image=rows,
                             mode=mode, dtype=str(scorer.dtype).replace("torch.", ""))


def reference(prepared: Prepared, sizes: Sizes, env: Env) -> Measurement:
    return reference_loop(prepared, prepared.images[: sizes.reference], 3, env)


def ours(prepared: Prepared, sizes: Sizes, env: Env) -> Measurement:
    return scorer_loop(prepared, prepared.images, sizes.batch, env, "scores")


def longer_answers(prepared: Prepared, sizes: Sizes, env: Env, reference_run: Measurement) -> dict[str, Any]:
    """Both loops when a text answer is wanted too: 16 new tokens for the reference, scores plus a 5-token
    greedy answer from the same prefill for focus-eval."""
    reference_long = reference_loop(prepared, prepared.images[: sizes.reference_long], 16, env)
    with_text = scorer_loop(prepared, prepared.images, sizes.batch, env, "scores+text")
    return {"reference_16_tokens": reference_long.to_dict(), "ours_with_text": with_text.to_dict()}


def longer_answers_lines(result: dict[str, Any]) -> list[str]:
    return [row(reference=result["reference_16_tokens"]["img_s"], what="reference with 16 new tokens"),
            row(ours=result["ours_with_text"]["img_s"], what="scores + 5-token greedy answer")]


def three_tasks(prepared: Prepared, sizes: Sizes, env: Env, reference_run: Measurement) -> dict[str, Any]:
    """Three prompts per image with the image encoded once (and once with its prefix shared too) against
    nothing shared; the reference loop's figure is its single-task rate divided by three."""
    subset = prepared.images[: sizes.three_tasks]
    shared = scorer_loop(prepared, subset, sizes.batch, env, "three_tasks_shared")
    tower = scorer_loop(prepared, subset, sizes.batch, env, "three_tasks_tower")
    plain = scorer_loop(prepared, subset, sizes.batch, env, "three_tasks_plain")
    return {"three_tasks": {
        "shared_tower_and_prefix": shared.to_dict(), "shared_tower": tower.to_dict(),
        "nothing_shared": plain.to_dict(), "sharing_gain": round(shared.img_s / plain.img_s, 3),
        "tower_sharing_gain": round(tower.img_s / plain.img_s, 3),
        "reference_img_s": round(reference_run.img_s / 3, 3),
        "note": "images per second with all three tasks scored; the reference figure is its per-task rate "
                "divided by three (one generate() per image and task)"}}


def three_tasks_lines(result: dict[str, Any]) -> list[str]:
    three = result["three_tasks"]
    best = three["shared_tower_and_prefix"]["img_s"]
    return [row(reference=three["reference_img_s"], ours=best, ratio=best / three["reference_img_s"],
                what=f"three tasks per image, image encoded once ({three['sharing_gain']:.2f}x over nothing "
                     f"shared; tower alone {three['tower_sharing_gain']:.2f}x)")]

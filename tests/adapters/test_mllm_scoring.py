"""Yes/no scoring of the tiny multimodal LLMs through the real loading path: padding invariance, agreement
with a direct forward pass, the shared-vision-tower path, generation, and answers that are not yes/no."""

from functools import partial

import pytest
import torch
from helpers.images import noise_images

from focus_eval.adapters import load_adapter
from focus_eval.adapters.mllm import MLLMScorer
from focus_eval.adapters.mllm_parse import parse_yes_no
from focus_eval.errors import FocusError
from focus_eval.presets import load_preset
from focus_eval.tiny import build_tiny, tiny_names

NAMES = tiny_names("mllm")
PROMPTS = [
    "Based on the fundus image, does this eye show glaucoma or glaucomatous optic disc changes?\n\n"
    "Respond with **yes** if glaucoma or suspicious glaucomatous changes are present, or **no** otherwise.",
    "Is this yes or no?",
    "Does this eye show diabetic retinopathy? Respond only with \"yes\" or \"no\".",
]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-mllm")
    return {name: build_tiny(name, root / name) for name in NAMES}


@pytest.fixture(scope="module")
def adapters(folders):
    return {name: load_adapter(load_preset(name, {"source": str(folders[name])}), "cpu") for name in NAMES}


_images = partial(noise_images, sizes=((70, 50), (40, 90), (64, 64), (120, 80)))


def _close(a, b, tol):
    return all(abs(x[k] - y[k]) <= tol for x, y in zip(a, b) for k in ("p_yes", "p_no", "score_norm"))


@pytest.mark.parametrize("name", NAMES)
def test_loads_real_classes_in_float32_on_cpu(adapters, name):
    adapter = adapters[name]
    expected = {"tiny-medgemma": "Gemma3ForConditionalGeneration", "tiny-qwen-vl": "Qwen3VLForConditionalGeneration",
                "tiny-llava-next": "LlavaNextForConditionalGeneration", "tiny-llava": "LlavaForConditionalGeneration",
                "tiny-qwen2-vl": "Qwen2VLForConditionalGeneration",
                "tiny-qwen2.5-vl": "Qwen2_5_VLForConditionalGeneration",
                "tiny-internvl": "InternVLForConditionalGeneration",
                "tiny-janus": "JanusForConditionalGeneration"}[name]
    assert type(adapter.model).__name__ == expected
    assert adapter.dtype == torch.float32 and adapter.adapter_id is None
    assert adapter.info["attn_implementation"] == "sdpa"
    assert {"yes", "Yes", " yes", " Yes"} <= set(adapter.answer_variants["yes"])


@pytest.mark.parametrize("name", NAMES)
def test_batch_of_eight_matches_one_at_a_time(adapters, name):
    adapter = adapters[name]
    images, prompts = _images(8), [PROMPTS[i % 3] for i in range(8)]
    batched = adapter.score_yes_no(images, prompts)
    single = [adapter.score_yes_no([img], [p])[0] for img, p in zip(images, prompts)]
    assert _close(batched, single, 1e-4)
    assert len({round(r["p_yes"], 6) for r in single}) > 1  # the rows really differ
    for row in batched:
        assert set(row) == {"p_yes", "p_no", "score_norm"}
        assert row["score_norm"] == pytest.approx(row["p_yes"] / (row["p_yes"] + row["p_no"]), rel=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_p_yes_equals_a_direct_forward_pass(adapters, name):
    adapter = adapters[name]
    model, processor = adapter.model, adapter.processor
    image = _images(1, seed=3)[0]
    messages = [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": PROMPTS[0]}]}]
    inputs = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=True,
                                           return_tensors="pt")
    with torch.no_grad():
        probs = torch.softmax(model(**inputs).logits[0, -1].float(), dim=-1)

    def best(words):
        ids = [processor.tokenizer.encode(p + w, add_special_tokens=False) for w in words for p in ("", " ", "\n")]
        return max(float(probs[i[0]]) for i in ids if len(i) == 1)

    row = adapter.score_yes_no([image], [PROMPTS[0]])[0]
    assert row["p_yes"] == pytest.approx(best(("yes", "Yes")), abs=1e-6)
    assert row["p_no"] == pytest.approx(best(("no", "No")), abs=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_generate_matches_unbatched_greedy_generation(adapters, name):
    adapter = adapters[name]
    images, prompts = _images(4, seed=5), [PROMPTS[i % 3] for i in range(4)]
    texts = adapter.generate(images, prompts, max_new_tokens=4)
    for image, prompt, text in zip(images, prompts, texts):
        inputs = adapter.encode([image], [prompt])
        with torch.no_grad():
            out = adapter.model.generate(**inputs, max_new_tokens=4, do_sample=False,
                                         pad_token_id=adapter.tokenizer.pad_token_id)
        expected = adapter.tokenizer.decode(out[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True)
        assert text == expected
    both = adapter.score_and_generate(images, prompts, max_new_tokens=4)
    assert [r["text"] for r in both] == texts
    assert _close(both, adapter.score_yes_no(images, prompts), 1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_shared_vision_tower_gives_the_plain_numbers(adapters, name):
    adapter = adapters[name]
    images = _images(3, seed=7)
    per_image = [PROMPTS, [], PROMPTS[1:]]
    multi = adapter.score_yes_no_multi(images, per_image)
    assert [len(rows) for rows in multi] == [3, 0, 2]
    flat_images = [img for img, prompts in zip(images, per_image) for _ in prompts]
    flat_prompts = [p for prompts in per_image for p in prompts]
    plain = adapter.score_yes_no(flat_images, flat_prompts)
    assert _close([r for rows in multi for r in rows], plain, 1e-5)
    # the same rows built by processing each image once equal the processor's own per-row output
    _, shared = adapter.encode_shared([images[0], images[2]], [0, 0, 0, 1, 1], flat_prompts)
    direct = adapter.encode(flat_images, flat_prompts, with_pixels=False)
    assert sorted(shared) == sorted(direct)
    for key in direct:
        assert torch.equal(shared[key].long(), direct[key].long()), key
    with_text = adapter.score_and_generate_multi(images, per_image, max_new_tokens=3)
    assert [r["text"] for rows in with_text for r in rows] == adapter.generate(flat_images, flat_prompts, 3)


@pytest.mark.parametrize("name", NAMES)
def test_shared_prefix_path_matches_the_tower_only_path(adapters, name):
    adapter = adapters[name]
    images = _images(3, seed=11)
    per_image = [PROMPTS, PROMPTS[1:], PROMPTS[:1]]
    plan = adapter._prefix_plan(adapter._multi_batch(images, per_image), max_new_tokens=4)
    assert plan is not None  # the image's prefix is prefilled once, then shared by its rows
    assert plan.prefix_inputs["input_ids"].shape[0] == 3 and plan.suffix_ids.shape[0] == 6
    shared = adapter.score_and_generate_multi(images, per_image, max_new_tokens=4)
    adapter.share_prefix = False
    try:
        tower_only = adapter.score_and_generate_multi(images, per_image, max_new_tokens=4)
    finally:
        adapter.share_prefix = True
    flat_shared = [r for rows in shared for r in rows]
    flat_tower = [r for rows in tower_only for r in rows]
    assert _close(flat_shared, flat_tower, 1e-5)
    assert [r["text"] for r in flat_shared] == [r["text"] for r in flat_tower]


def test_sliding_window_too_short_for_the_split_uses_the_unsplit_rows(adapters):
    adapter = adapters["tiny-medgemma"]  # its sliding window is 128 tokens
    window = adapter.model.config.get_text_config().sliding_window
    long_prompt = " ".join(["Does this eye show glaucoma?"] * 24)
    images, per_image = _images(2), [[long_prompt, PROMPTS[1]], [PROMPTS[1]]]
    batch = adapter._multi_batch(images, per_image)
    assert batch.rows["input_ids"].shape[1] > window
    assert adapter._prefix_plan(batch, max_new_tokens=2) is None
    multi = [r for rows in adapter.score_yes_no_multi(images, per_image) for r in rows]
    plain = adapter.score_yes_no([images[0], images[0], images[1]], [long_prompt, PROMPTS[1], PROMPTS[1]])
    assert _close(multi, plain, 1e-5)


def test_shared_tower_runs_once_per_image(adapters):
    adapter = adapters["tiny-medgemma"]
    seen = []

    def count(module, args, kwargs):
        seen.append((args[0] if args else kwargs["pixel_values"]).shape[0])

    hook = adapter.model.model.vision_tower.register_forward_pre_hook(count, with_kwargs=True)
    try:
        adapter.score_yes_no_multi(_images(2), [PROMPTS, PROMPTS])
        assert seen == [2]  # two images, six rows: one tower pass over the two images
        seen.clear()
        adapter.score_yes_no(_images(2) * 3, PROMPTS * 2)
        assert seen == [6]
    finally:
        hook.remove()


def test_answers_that_are_not_yes_or_no_parse_as_none(folders):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    folder = folders["tiny-llava-next"]
    model = AutoModelForImageTextToText.from_pretrained(folder)
    processor = AutoProcessor.from_pretrained(folder)
    other = processor.tokenizer.encode(" the", add_special_tokens=False)
    assert len(other) == 1
    head = model.lm_head
    biased = torch.nn.Linear(head.in_features, head.out_features, bias=True)
    with torch.no_grad():
        biased.weight.copy_(head.weight)
        biased.bias.zero_()
        biased.bias[other[0]] = 100.0  # the model now always starts (and continues) with " the"
    model.lm_head = biased
    scorer = MLLMScorer(model, processor)
    rows = scorer.score_and_generate(_images(3), PROMPTS, max_new_tokens=3)
    for row in rows:
        assert row["text"].split()[0] == "the"
        assert parse_yes_no(row["text"]) is None
        assert row["p_yes"] < 1e-6 and row["p_no"] < 1e-6
        assert 0.0 < row["score_norm"] < 1.0  # still defined from the logits


def test_visual_token_budget_is_enforced(folders):
    preset = load_preset("tiny-qwen-vl", {"source": str(folders["tiny-qwen-vl"]), "max_visual_tokens": 4})
    adapter = load_adapter(preset, "cpu")
    with pytest.raises(FocusError, match="visual tokens"):
        adapter.score_yes_no(_images(1), PROMPTS[:1])


def test_mismatched_lengths_are_an_error(adapters):
    with pytest.raises(FocusError):
        adapters["tiny-medgemma"].score_yes_no(_images(2), PROMPTS[:1])
    assert adapters["tiny-medgemma"].score_yes_no([], []) == []

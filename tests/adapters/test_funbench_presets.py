"""FunBench's MLLM line-up as presets: every file is a complete configuration with a pinned revision or an
honest note, the remote-code one is refused without the user's consent, and a tiny offline model of each
transformers class loads through the same adapter path and scores yes/no questions, option letters and
vision-tower features."""

import re
from functools import partial

import numpy as np
import pytest
import torch
from PIL import Image
from helpers.images import noise_images

from focus_eval.adapters import load_adapter
from focus_eval.adapters.mllm import HFMLLMAdapter
from focus_eval.errors import FocusError
from focus_eval.presets import load_preset
from focus_eval.resources import resource_dir

# preset -> (paper name, domain, transformers class or None for remote code only, the tiny model of that class)
LINE_UP = {
    "llava-1.5-7b": ("LLaVA-v1.5-7B", "general", "LlavaForConditionalGeneration", "tiny-llava"),
    "llava-1.6-7b": ("LLaVA-v1.6-7B", "general", "LlavaNextForConditionalGeneration", "tiny-llava-next"),
    "llava-med-1.5-7b": ("LLaVA-Med-v1.5-7B", "medical", "LlavaForConditionalGeneration", "tiny-llava"),
    "qwen2-vl-7b": ("Qwen2-VL-7B", "general", "Qwen2VLForConditionalGeneration", "tiny-qwen2-vl"),
    "qwen2.5-vl-7b": ("Qwen2.5-VL-7B", "general", "Qwen2_5_VLForConditionalGeneration", "tiny-qwen2.5-vl"),
    "internvl2.5-8b": ("InternVL2.5-8B", "general", "InternVLForConditionalGeneration", "tiny-internvl"),
    "huatuogpt-vision-7b": ("HuatuoGPT-Vision-7B", "medical", "LlavaForConditionalGeneration", "tiny-llava"),
    "janus-pro-7b": ("Janus-Pro-7B", "general", "JanusForConditionalGeneration", "tiny-janus"),
    "qilin-med-vl-chat": ("Qilin-Med-VL-Chat", "medical", "LlavaForConditionalGeneration", "tiny-llava"),
}
# the tiny models added for the line-up, with their class and the pooling their presets name
TINY = {"tiny-llava": ("LlavaForConditionalGeneration", "cls"),
        "tiny-qwen2-vl": ("Qwen2VLForConditionalGeneration", "mean"),
        "tiny-qwen2.5-vl": ("Qwen2_5_VLForConditionalGeneration", "mean"),
        "tiny-internvl": ("InternVLForConditionalGeneration", "mean"),
        "tiny-janus": ("JanusForConditionalGeneration", "mean")}


@pytest.mark.parametrize("name", sorted(LINE_UP))
def test_line_up_presets_are_complete(name):
    paper, domain, _, _ = LINE_UP[name]
    preset = load_preset(name)
    HFMLLMAdapter.validate(preset)
    assert (preset.paper_name, preset.domain, preset.family, preset.adapter) == (paper, domain, "mllm", "hf_mllm")
    assert preset.methods == ["prompt"] and not preset.untrained and not preset.gated
    assert preset.licence and preset.description and int(preset.preprocessing["size"]) > 0
    assert preset.settings["vision_pooling"] in ("cls", "mean")
    assert preset.settings["large_model"] is False and preset.settings["max_new_tokens"] >= 1


@pytest.mark.parametrize("name", sorted(LINE_UP))
def test_revision_is_pinned_or_says_why_not(name):
    preset = load_preset(name)
    # the file's text with its comment lines joined into sentences
    text = " ".join(line.strip(" #") for line in (resource_dir("models") / f"{name}.yaml").read_text().splitlines())
    if preset.revision == "main":
        assert "not pinned" in preset.description
        # the file says that no full commit hash was found, where it was looked for, and that it stays unpinned
        assert "was not found" in text or "No commit hash" in text
        assert "unpinned until the first real run" in text
    else:
        assert re.fullmatch(r"[0-9a-f]{40}", preset.revision)
        assert "confirm it with the Hub" in text


@pytest.mark.parametrize("name", sorted(LINE_UP))
def test_each_preset_names_an_installed_class_or_needs_remote_code(name):
    import transformers

    cls, tiny = LINE_UP[name][2:]
    preset = load_preset(name)
    if cls is None:
        assert preset.trust_remote_code and tiny is None
    else:
        assert hasattr(transformers, cls) and not preset.trust_remote_code
        assert load_preset(tiny).settings["vision_pooling"] == preset.settings["vision_pooling"]


def test_the_default_grid_leaves_the_line_up_out_and_runs_it_when_named():
    from focus_eval.grid.plan import FUNBENCH_LINE_UP, select_presets

    assert set(FUNBENCH_LINE_UP) == set(LINE_UP)
    assert not {p.name for p in select_presets(None)} & set(LINE_UP)
    assert [p.name for p in select_presets("qwen2*-vl-7b")] == ["qwen2-vl-7b", "qwen2.5-vl-7b"]


@pytest.mark.parametrize("name, source, steps", [
    ("internvl2.5-8b", "OpenGVLab/InternVL2_5-8B@e9e4c0dc1db56bfab10458671519b7fa3dd29463",
     "convert_internvl_weights_to_hf.py"),
    ("qilin-med-vl-chat", "williamliu/Qilin-Med-VL-Chat@386ff83b4469a09e179cf2fd293fa9769b6ad50d",
     "convert_llava_weights_to_hf.py")])
def test_presets_of_unconverted_checkpoints_stop_with_the_conversion_steps(name, source, steps):
    # the paper's checkpoint, pinned, is named; loading it from the Hub stops before any download
    with pytest.raises(FocusError, match=re.escape(source) + r" is published in a format .*" + re.escape(steps)):
        load_adapter(load_preset(name), "cpu")


def test_a_converted_folder_passes_the_conversion_check(tmp_path):
    from focus_eval.adapters.mllm import check_converted

    check_converted(load_preset("qilin-med-vl-chat", {"source": str(tmp_path)}))  # a local folder: no refusal
    with pytest.raises(FocusError, match="settings.conversion must be the conversion steps"):
        check_converted(load_preset("tiny-llava", {"conversion": " "}))


def test_internvl_presets_keep_one_tile_per_image(tmp_path, monkeypatch):
    for name in ("internvl2.5-8b", "tiny-internvl"):
        assert load_preset(name).settings["processor"] == {"crop_to_patches": False}
    # with InternVL's tiling back on, shared-image scoring stops with an error that says what to set
    monkeypatch.setenv("FOCUS_CACHE", str(tmp_path))
    tiled = load_adapter(load_preset("tiny-internvl", {"processor.crop_to_patches": True}), "cpu")
    with pytest.raises(FocusError, match=r"feature rows for 2 images .* processor\.crop_to_patches=false"):
        tiled.score_yes_no_multi(_images(2), [["Glaucoma?"], ["Glaucoma?"]])
    encoder = tiled.image_encoder()
    pixels = torch.stack([encoder.transform(image) for image in _images(2)])
    with pytest.raises(FocusError, match=r"vectors for 2 images; ve_probe needs .*processor\.crop_to_patches=false"):
        encoder.embed_images(pixels)


def test_llava_conversions_state_their_processor_and_huatuogpt_its_turn_format(tmp_path):
    from focus_eval.tiny import build_tiny

    for name in ("llava-med-1.5-7b", "huatuogpt-vision-7b"):
        settings = load_preset(name).settings
        # CLIP ViT-L/14 at 336 px: 24 x 24 patch tokens, the class token dropped
        assert (336 // settings["processor"]["patch_size"]) ** 2 == settings["max_visual_tokens"] == 576
        assert settings["processor"]["vision_feature_select_strategy"] == "default"
    # the template reaches the processor of the same class through the preset's processor settings
    template = load_preset("huatuogpt-vision-7b").settings["processor"]["chat_template"]
    folder = build_tiny("tiny-llava", tmp_path / "llava")
    adapter = load_adapter(load_preset("tiny-llava", {"source": str(folder), "processor.chat_template": template}))
    assert adapter.chat_text("Glaucoma?") == "<|user|>\n<image>\nGlaucoma?\n<|assistant|>\n"
    assert adapter.chat_text("Glaucoma?", image=False) == "<|user|>\nGlaucoma?\n<|assistant|>\n"
    assert 0 < adapter.score_yes_no(_images(1), ["Glaucoma? yes or no"])[0]["score_norm"] < 1


def test_qwen_pixel_budget_matches_the_visual_token_cap():
    for name in ("qwen2-vl-7b", "qwen2.5-vl-7b"):
        settings = load_preset(name).settings
        # one visual token per 28 x 28 pixels (14-px patches merged 2 x 2)
        assert settings["processor"]["size"]["longest_edge"] // (28 * 28) == settings["max_visual_tokens"]


# ----- the tiny model of each class, through the real loading path


@pytest.fixture(scope="module")
def adapters(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FOCUS_CACHE", str(cache))
        return {name: load_adapter(load_preset(name), "cpu") for name in TINY}


_images = partial(noise_images, sizes=((70, 50), (40, 90), (64, 64)))


@pytest.mark.parametrize("name", sorted(TINY))
def test_tiny_model_loads_its_class_and_scores_yes_no(adapters, name):
    adapter = adapters[name]
    assert type(adapter.model).__name__ == TINY[name][0] and load_preset(name).untrained
    images = _images(3)
    prompts = ["Does this eye show glaucoma? Respond with yes or no."] * 3
    batched = adapter.score_yes_no(images, prompts)
    for image, row in zip(images, batched):
        one = adapter.score_yes_no([image], prompts[:1])[0]
        assert one["score_norm"] == pytest.approx(row["score_norm"], abs=1e-4)
        assert 0 < row["p_yes"] < 1 and 0 < row["p_no"] < 1
    assert len({round(r["score_norm"], 5) for r in batched}) > 1  # the image reaches the answer
    # several questions on one image, the image encoded once: the numbers of asking one at a time
    shared = adapter.score_yes_no_multi(images, [[prompts[0], "Is there diabetic retinopathy?"]] * 3)
    assert [row[0]["score_norm"] for row in shared] == pytest.approx([r["score_norm"] for r in batched], abs=1e-4)


def _turn(adapter, image, prompt: str):
    """The chat template's own rendering and processing of one user turn [image, prompt], as model inputs."""
    turn = [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": prompt}]}]
    return adapter.processor.apply_chat_template(turn, add_generation_prompt=True, tokenize=True,
                                                 return_dict=True, return_tensors="pt")


def _plain_letter_shares(adapter, image, prompt: str, letters: str) -> list[float]:
    """The letters' shares from one plain forward pass on the chat template's own tokenisation of the turn."""
    with torch.no_grad():
        last = adapter.model(**_turn(adapter, image, prompt)).logits[0, -1].float()
    return torch.softmax(torch.stack([last[adapter._letter_ids(k)].max() for k in letters]), dim=0).tolist()


@pytest.mark.parametrize("name", sorted(TINY))
def test_tiny_model_scores_option_letters_as_a_plain_forward_pass(adapters, name):
    adapter = adapters[name]
    image, prompt = _images(1, seed=4)[0], "Which eye is this?\nA. left eye\nB. right eye\nC. cannot tell"
    row = adapter.score_options_and_generate_multi([image], [[prompt]], [[list("ABC")]], max_new_tokens=2)[0][0]
    assert sum(row["letters"].values()) == pytest.approx(1.0) and 0 < row["letter_mass"] <= 1
    assert [row["letters"][k] for k in "ABC"] == pytest.approx(_plain_letter_shares(adapter, image, prompt, "ABC"),
                                                               abs=1e-4)


def _qwen_patches(core, inputs):
    return core.visual(inputs["pixel_values"], grid_thw=inputs["image_grid_thw"]).last_hidden_state.mean(dim=0)


# per architecture, the tower output before the projector of one processed image, pooled as its tiny preset says
BY_HAND = {
    # the CLIP class token at the layer the projector reads
    "llava": lambda core, inputs: core.vision_tower(inputs["pixel_values"], output_hidden_states=True)
    .hidden_states[core.config.vision_feature_layer][0, 0],
    "qwen2_vl": _qwen_patches,
    "qwen2_5_vl": _qwen_patches,
    # InternViT's patch tokens, its class token left out
    "internvl": lambda core, inputs: core.vision_tower(pixel_values=inputs["pixel_values"]).last_hidden_state[0, 1:]
    .mean(dim=0),
    "janus": lambda core, inputs: core.vision_model(inputs["pixel_values"]).last_hidden_state[0].mean(dim=0),
}


@pytest.mark.parametrize("name", sorted(TINY))
def test_tiny_model_vision_tower_features(adapters, name):
    adapter = adapters[name]
    encoder = adapter.image_encoder()
    assert encoder.pooling == TINY[name][1]
    # one 64-px image (the preset's decode size) against the tower run by hand on the processor's own tensors
    image = Image.fromarray(np.random.default_rng(11).integers(0, 255, (64, 64, 3), dtype=np.uint8))
    with torch.no_grad():
        expected = BY_HAND[adapter.model.config.model_type](adapter.model.model, _turn(adapter, image, "?"))
    assert torch.allclose(encoder.embed_images(encoder.transform(image)[None])[0], expected.float(), atol=1e-4)
    pixels = torch.stack([encoder.transform(image) for image in _images(3, seed=7)])
    features = encoder.embed_images(pixels)
    assert features.dtype == torch.float32 and tuple(features.shape) == (3, encoder.embed_dim)
    # one image at a time gives the same vectors, and different images give different ones
    alone = torch.cat([encoder.embed_images(pixels[i:i + 1]) for i in range(3)])
    assert torch.allclose(features, alone, atol=1e-4)
    assert not torch.allclose(features[0], features[1], atol=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tiny-internvl", "tiny-janus"])
def test_the_three_funbench_modes_run_offline_on_the_classes_that_need_care(tmp_path, monkeypatch, name):
    """InternVL (one tile per image) and Janus (its vision tower on the multimodal core) through the runner."""
    from focus_eval.cli import main
    from focus_eval.results.schema import read_jsonl, validate_result_dict
    from focus_eval.synth.datasets import write_synthetic

    monkeypatch.setenv("FOCUS_CACHE", str(tmp_path / "focus-cache"))
    write_synthetic(tmp_path / "data", n=40, seed=2)
    tasks = ["funbench_l2b_laterality_synth_desktop", "funbench_l4c_dr_grading_synth_desktop"]
    methods = ["ve_probe", "knowledge_prompt", "multiple_choice"]
    assert main(["--model", name, "--methods", ",".join(methods), "--tasks", ",".join(tasks), "--data-root",
                 str(tmp_path / "data"), "--output-path", str(tmp_path / "out"), "--cache-dir",
                 str(tmp_path / "cache"), "--n-boot", "20", "--no-progress", "--num-workers", "0",
                 "--batch-size", "4"]) == 0
    rows = [r for r in read_jsonl(tmp_path / "out" / name / "results.jsonl") if r.get("kind") != "group"]
    assert sorted((r["task"], r["method"]) for r in rows) == sorted((t, m) for t in tasks for m in methods)
    for row in rows:
        validate_result_dict(row)
        assert row["n"] > 0

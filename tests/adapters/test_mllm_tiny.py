"""Tiny offline multimodal LLMs: built from nothing, cached, deterministic, loadable through a preset."""

import json

import pytest
import torch
from safetensors.torch import load_file

from focus_eval.adapters import load_adapter
from focus_eval.errors import FocusError
from focus_eval.presets import load_preset
from focus_eval.tiny import MARKER, build_tiny, ensure_tiny, tiny_names


def test_same_seed_gives_the_same_model_and_tokenizer(tmp_path):
    first = build_tiny("tiny-qwen-vl", tmp_path / "a")
    second = build_tiny("tiny-qwen-vl", tmp_path / "b")
    other = build_tiny("tiny-qwen-vl", tmp_path / "c", seed=7)
    a, b, c = (load_file(str(f / "model.safetensors")) for f in (first, second, other))
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], c[k]) for k in a)
    assert (first / "tokenizer.json").read_text() == (second / "tokenizer.json").read_text()


def test_build_leaves_the_callers_random_state_alone(tmp_path):
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    build_tiny("tiny-llava-next", tmp_path / "m")
    assert torch.equal(torch.rand(3), expected)


def test_ensure_builds_once_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FOCUS_CACHE", str(tmp_path))
    folder = ensure_tiny("tiny-llava-next")
    assert folder == tmp_path / "tiny" / "tiny-llava-next"
    assert json.loads((folder / MARKER).read_text())["name"] == "tiny-llava-next"
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert ensure_tiny("tiny-llava-next") == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp
    leftovers = [p.name for p in (tmp_path / "tiny").iterdir() if p.name.startswith(".") and not p.name.endswith(".lock")]
    assert not leftovers  # no staging folder left behind (the lock file stays, by design)
    # an interrupted build (no marker) is rebuilt
    (folder / MARKER).unlink()
    ensure_tiny("tiny-llava-next")
    assert (folder / MARKER).is_file()


def test_tiny_presets_load_through_the_adapter_registry(tmp_path, monkeypatch):
    monkeypatch.setenv("FOCUS_CACHE", str(tmp_path))
    preset = load_preset("tiny-llava-next")
    assert preset.untrained and preset.family == "mllm" and preset.source == "tiny:tiny-llava-next"
    adapter = load_adapter(preset, "cpu")
    assert adapter.info["source"] == str(tmp_path / "tiny" / "tiny-llava-next")
    assert type(adapter.processor).__name__ == "LlavaNextProcessor"
    assert type(adapter.processor.image_processor).__name__ == "LlavaNextImageProcessor"


@pytest.mark.parametrize("name", tiny_names("mllm"))
def test_chat_template_follows_the_real_turn_format(tmp_path, name):
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(build_tiny(name, tmp_path / name))
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Glaucoma?"}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    expected = {
        "tiny-medgemma": "<bos><start_of_turn>user\n<start_of_image>Glaucoma?<end_of_turn>\n<start_of_turn>model\n",
        "tiny-qwen-vl": "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Glaucoma?<|im_end|>\n"
                        "<|im_start|>assistant\n",
        "tiny-llava-next": "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n<image>\nGlaucoma?"
                           "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
        "tiny-llava": "<s>USER: <image>\nGlaucoma? ASSISTANT:",
        "tiny-qwen2-vl": "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Glaucoma?<|im_end|>\n"
                         "<|im_start|>assistant\n",
        "tiny-qwen2.5-vl": "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Glaucoma?<|im_end|>\n"
                           "<|im_start|>assistant\n",
        "tiny-internvl": "<|im_start|>user\n<IMG_CONTEXT>\nGlaucoma?<|im_end|>\n<|im_start|>assistant\n",
        "tiny-janus": "<｜begin▁of▁sentence｜><|User|>: <image_placeholder>\nGlaucoma?\n\n<|Assistant|>:",
    }[name]
    assert text == expected
    for word in ("yes", "no", "Yes", "No", " yes", " no", " Yes", " No"):
        assert len(processor.tokenizer.encode(word, add_special_tokens=False)) == 1


def test_unknown_tiny_name_is_an_error(tmp_path):
    with pytest.raises(FocusError, match="tiny-unknown"):
        build_tiny("tiny-unknown", tmp_path)

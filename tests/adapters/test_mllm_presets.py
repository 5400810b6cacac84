"""Multimodal LLM presets: every paper model and tiny model is a complete, loadable configuration."""

import re

import pytest
import torch

from focus_eval.adapters import ADAPTERS
from focus_eval.adapters.mllm import choose_attention
from focus_eval.errors import FocusError
from focus_eval.presets import load_preset

PAPER = {"gemma3-27b": ("general", "google/gemma-3-27b-it"), "medgemma-4b": ("medical", "google/medgemma-4b-it"),
         "medgemma1.5-4b": ("medical", "google/medgemma-1.5-4b-it"),
         "medgemma-27b": ("medical", "google/medgemma-27b-it"),
         "qwen3-vl-8b": ("general", "Qwen/Qwen3-VL-8B-Instruct"),
         "llava-next-8b": ("general", "llava-hf/llama3-llava-next-8b-hf")}
TINY = ("tiny-medgemma", "tiny-qwen-vl", "tiny-llava-next")


@pytest.mark.parametrize("name", sorted(PAPER))
def test_paper_presets(name):
    preset = load_preset(name)
    domain, source = PAPER[name]
    assert (preset.family, preset.domain, preset.source, preset.adapter) == ("mllm", domain, source, "hf_mllm")
    assert preset.methods == ["prompt"] and preset.dtype == "bfloat16" and not preset.untrained
    assert preset.revision == "main" or re.fullmatch(r"[0-9a-f]{40}", preset.revision)
    assert preset.licence and isinstance(preset.gated, bool)
    assert preset.gated == source.startswith("google/")
    assert int(preset.preprocessing["size"]) > 0
    settings = preset.settings
    assert settings["batch_size"] > 0 and settings["max_new_tokens"] >= 1
    big = "27b" in source
    assert settings["large_model"] is big
    assert settings["finetune"] == ({"per_device_batch_size": 1, "gradient_accumulation_steps": 8} if big else
                                    {"per_device_batch_size": 4, "gradient_accumulation_steps": 4})


def test_qwen_has_an_explicit_pixel_budget():
    settings = load_preset("qwen3-vl-8b").settings
    size = settings["processor"]["size"]
    # one visual token per 32 x 32 pixels (16-px patches merged 2 x 2)
    assert size["longest_edge"] // (32 * 32) == settings["max_visual_tokens"] == 1024
    assert size["shortest_edge"] < size["longest_edge"]


@pytest.mark.parametrize("name", TINY)
def test_tiny_presets_are_marked_untrained(name):
    preset = load_preset(name)
    assert preset.untrained and preset.source == f"tiny:{name}" and preset.adapter == "hf_mllm"
    assert not preset.gated


def test_adapter_is_registered_without_importing_model_code():
    import subprocess
    import sys

    assert ADAPTERS.target("hf_mllm") == "focus_eval.adapters.mllm:HFMLLMAdapter"
    code = ("import sys, focus_eval.adapters.builtin; "
            "print('focus_eval.adapters.mllm' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_attention_choice(monkeypatch):
    import importlib.util

    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert choose_attention("sdpa", cpu) == "sdpa"
    assert choose_attention(["flash_attention_2", "sdpa"], cpu) == "sdpa"
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object() if name == "flash_attn" else real(name))
    assert choose_attention(["flash_attention_2", "sdpa"], cuda) == "flash_attention_2"
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "flash_attn" else real(name))
    assert choose_attention(["flash_attention_2", "sdpa"], cuda) == "sdpa"
    with pytest.raises(FocusError):
        choose_attention("fast_please", cpu)


def test_remote_code_needs_the_users_consent(tmp_path):
    from focus_eval.adapters import load_adapter

    preset = load_preset("tiny-medgemma", {"trust_remote_code": True, "source": str(tmp_path)})
    with pytest.raises(FocusError, match="--trust-remote-code"):
        load_adapter(preset, "cpu")


def test_missing_weights_are_an_error(tmp_path):
    from focus_eval.adapters import load_adapter

    with pytest.raises(FocusError, match="cannot load"):
        load_adapter(load_preset("tiny-medgemma", {"source": str(tmp_path)}), "cpu")


def test_weights_that_do_not_load_are_an_error(tmp_path):
    from safetensors.torch import load_file, save_file

    from focus_eval.adapters import load_adapter
    from focus_eval.tiny import build_tiny

    folder = build_tiny("tiny-llava-next", tmp_path / "m")
    weights = load_file(str(folder / "model.safetensors"))
    dropped = sorted(k for k in weights if "layers.1.mlp.down_proj" in k)[0]
    del weights[dropped]
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(FocusError, match="missing keys"):
        load_adapter(load_preset("tiny-llava-next", {"source": str(folder)}), "cpu")
    # a preset may name keys it expects to be absent
    preset = load_preset("tiny-llava-next", {"source": str(folder)})
    preset.settings["allowed_missing_keys"] = [r"layers\.1\.mlp\.down_proj"]
    assert load_adapter(preset, "cpu").adapter_id is None


def test_source_folder_that_does_not_exist_is_named(tmp_path):
    from focus_eval.adapters import load_adapter

    missing = tmp_path / "nowhere"
    with pytest.raises(FocusError, match="does not exist"):
        load_adapter(load_preset("tiny-medgemma", {"source": str(missing)}), "cpu")
    with pytest.raises(FocusError, match="source=DIR"):
        load_adapter(load_preset("tiny-medgemma", {"weights": str(missing)}), "cpu")


# ----- settings: declared keys, max_new_tokens


@pytest.fixture(scope="module")
def medgemma(tmp_path_factory):
    from focus_eval.tiny import build_tiny

    return build_tiny("tiny-medgemma", tmp_path_factory.mktemp("base") / "tiny-medgemma")


def test_a_mistyped_setting_is_an_error_naming_it_and_the_valid_ones():
    from focus_eval.adapters import load_adapter
    from focus_eval.adapters.mllm import HFMLLMAdapter

    preset = load_preset("tiny-medgemma", {"max_new_tokenz": "3"})
    with pytest.raises(FocusError) as err:
        load_adapter(preset, "cpu")
    message = str(err.value)
    assert "unknown setting max_new_tokenz for adapter 'hf_mllm'; did you mean max_new_tokens" in message
    assert set(message.split("Valid settings: ")[1].split(", ")) == set(HFMLLMAdapter.settings_keys)
    assert {"attn_implementation", "batch_size", "max_new_tokens", "large_model", "finetune"} <= \
        HFMLLMAdapter.settings_keys


@pytest.mark.parametrize("value", [0, -2, 2.5, "many", True, None])
def test_max_new_tokens_must_be_a_whole_number_of_at_least_one(value):
    from focus_eval.adapters.mllm import HFMLLMAdapter

    with pytest.raises(FocusError, match=r"settings\.max_new_tokens must be a whole number of at least 1"):
        HFMLLMAdapter.validate(load_preset("tiny-medgemma", {"max_new_tokens": value}))


def test_nested_settings_and_batch_sizes_are_checked():
    from focus_eval.adapters.mllm import HFMLLMAdapter

    with pytest.raises(FocusError, match="unknown settings.finetune keys per_device_batch_sze"):
        HFMLLMAdapter.validate(load_preset("tiny-medgemma", {"finetune.per_device_batch_sze": 2}))
    with pytest.raises(FocusError, match=r"settings\.batch_size must be"):
        HFMLLMAdapter.validate(load_preset("tiny-medgemma", {"batch_size": {"cuda": 0}}))
    with pytest.raises(FocusError, match=r"--model-args batch_size\.cuda: batch_size is 16 in \S+, not a mapping"):
        load_preset("tiny-medgemma", {"batch_size.cuda": 4})
    HFMLLMAdapter.validate(load_preset("tiny-medgemma", {"batch_size": "8", "max_new_tokens": "3"}))


def _generated_lengths(adapter, monkeypatch):
    """Token counts of every decoded answer (spied on the tokenizer's batch_decode)."""
    seen = []
    decode = adapter.tokenizer.batch_decode

    def spy(sequences, **kwargs):
        seen.extend(len(row) for row in sequences)
        return decode(sequences, **kwargs)

    monkeypatch.setattr(adapter.tokenizer, "batch_decode", spy)
    return seen


def test_max_new_tokens_sets_the_greedy_answer_length(medgemma, monkeypatch):
    import numpy as np
    from PIL import Image

    from focus_eval.adapters import load_adapter
    from focus_eval.presets import parse_model_args

    rng = np.random.default_rng(3)
    images = [Image.fromarray(rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)) for _ in range(2)]
    prompts = ["Does this eye show glaucoma? Respond with yes or no.", "Is there diabetic retinopathy?"]
    texts = {}
    for n in (1, 8):
        preset = load_preset("tiny-medgemma", {"source": str(medgemma), **parse_model_args(f"max_new_tokens={n}")})
        adapter = load_adapter(preset, "cpu")
        assert adapter.max_new_tokens == adapter.info["max_new_tokens"] == n
        lengths = _generated_lengths(adapter, monkeypatch)
        rows = adapter.score_and_generate_multi(images, [prompts] * 2, max_new_tokens=adapter.max_new_tokens)
        # without an explicit length the adapter's own setting applies
        single = adapter.score_and_generate(images, [prompts[0]] * 2)
        assert lengths and set(lengths) == {n}
        assert [row["text"] for row in single] == [per_image[0]["text"] for per_image in rows]
        texts[n] = [row["text"] for per_image in rows for row in per_image]
    # greedy decoding: the 8-token answers continue the 1-token ones
    assert all(long.startswith(short) and long != short for short, long in zip(texts[1], texts[8]))


def test_max_new_tokens_defaults_to_five(medgemma):
    from focus_eval.adapters import load_adapter

    preset = load_preset("tiny-medgemma", {"source": str(medgemma)})
    del preset.settings["max_new_tokens"]
    assert load_adapter(preset, "cpu").max_new_tokens == 5

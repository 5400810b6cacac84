"""Every registered multimodal LLM adapter provides the declared MLLM interface (focus_eval.adapters.mllm_interface):
each method the prompt methods and serve call, with the declared parameters, and loaded instances pass
isinstance."""

import pytest

from focus_eval.adapters import ADAPTERS, load_adapter
from focus_eval.adapters.mllm_interface import (MLLMAdapter, ServedMLLM, VisionFeatures, WorkerImages,
                                                missing_members)
from focus_eval.presets import load_preset
from focus_eval.tiny import build_tiny


def mllm_adapter_classes() -> dict[str, type]:
    """Registered adapter name -> class, for the adapters that serve the mllm family."""
    classes = {name: ADAPTERS.get(name) for name in ADAPTERS.names()}
    return {name: cls for name, cls in classes.items() if "mllm" in getattr(cls, "families", ())}


def test_the_shipped_mllm_adapters_are_registered():
    assert {"hf_mllm", "openai_chat"} <= set(mllm_adapter_classes())


@pytest.mark.parametrize("name", sorted(mllm_adapter_classes()))
def test_every_registered_mllm_adapter_declares_the_interface(name):
    assert missing_members(mllm_adapter_classes()[name], MLLMAdapter) == []


def test_the_in_process_adapter_also_serves_and_has_the_optional_parts():
    cls = mllm_adapter_classes()["hf_mllm"]
    for protocol in (ServedMLLM, WorkerImages, VisionFeatures):
        assert missing_members(cls, protocol) == [], protocol


class _NoTextOnly:
    """Two of the three methods: no text-only questions."""

    max_new_tokens, device = 5, "cpu"

    def score_and_generate_multi(self, images, prompts_per_image, max_new_tokens=None, extra=None):
        return [[{"p_yes": 1.0, "p_no": 0.0, "score_norm": 1.0, "text": "yes"} for _ in p] for p in prompts_per_image]

    def score_options_and_generate_multi(self, images, prompts_per_image, letters_per_prompt, max_new_tokens=None):
        return []


class _Complete(_NoTextOnly):
    def score_options_and_generate_text(self, prompts, letters_per_prompt, max_new_tokens=None):
        return []


class _Renamed(_Complete):
    def score_options_and_generate_multi(self, images, prompts, letters, max_new_tokens=None):
        return []


class _ExtraRequired(_Complete):
    def score_options_and_generate_text(self, prompts, letters_per_prompt, max_new_tokens=None, *, seed):
        return []


def test_the_check_passes_a_complete_class_with_an_extra_defaulted_parameter():
    assert missing_members(_Complete) == []
    assert isinstance(_Complete(), MLLMAdapter)


def test_a_class_missing_a_method_fails_the_check():
    assert missing_members(_NoTextOnly) == ["_NoTextOnly has no method score_options_and_generate_text"]
    assert not isinstance(_NoTextOnly(), MLLMAdapter)


def test_other_parameter_names_or_a_required_extra_fail_the_check():
    assert [p.split("(")[0] for p in missing_members(_Renamed)] == ["_Renamed.score_options_and_generate_multi"]
    assert [p.split("(")[0] for p in missing_members(_ExtraRequired)] == \
        ["_ExtraRequired.score_options_and_generate_text"]


def test_a_loaded_tiny_mllm_is_an_mllm_adapter(tmp_path):
    folder = build_tiny("tiny-llava-next", tmp_path / "tiny-llava-next")
    adapter = load_adapter(load_preset("tiny-llava-next", {"source": str(folder)}), "cpu")
    for protocol in (MLLMAdapter, ServedMLLM, WorkerImages, VisionFeatures):
        assert isinstance(adapter, protocol), protocol


def test_an_endpoint_adapter_is_an_mllm_adapter_but_cannot_be_served():
    adapter = load_adapter(load_preset("openai_chat", {"base_url": "http://127.0.0.1:9/v1", "model": "m"}))
    assert isinstance(adapter, MLLMAdapter)
    assert not isinstance(adapter, ServedMLLM) and not isinstance(adapter, VisionFeatures)

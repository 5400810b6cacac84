"""--adapter: a peft LoRA adapter loads on top of the base model, or the run fails naming the folder."""

from functools import partial

import pytest
import torch
from helpers.images import noise_images

from focus_eval.adapters import load_adapter
from focus_eval.errors import FocusError
from focus_eval.presets import load_preset
from focus_eval.tiny import build_tiny

PROMPT = "Does this eye show glaucoma? Respond with yes or no."


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return build_tiny("tiny-medgemma", tmp_path_factory.mktemp("base") / "tiny-medgemma")


@pytest.fixture(scope="module")
def lora(base, tmp_path_factory):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForImageTextToText

    model = AutoModelForImageTextToText.from_pretrained(base)
    torch.manual_seed(0)
    # random A and B (not the usual B = 0) so the adapter visibly changes the outputs
    config = LoraConfig(r=4, lora_alpha=8, target_modules=r".*language_model.*\.(q_proj|v_proj)",
                        init_lora_weights=False)
    folder = tmp_path_factory.mktemp("lora") / "glaucoma-brset"
    get_peft_model(model, config).save_pretrained(folder)
    return folder


def _preset(base):
    return load_preset("tiny-medgemma", {"source": str(base)})


_images = partial(noise_images, 2, seed=1)


def test_lora_adapter_loads_and_changes_the_scores(base, lora):
    plain = load_adapter(_preset(base), "cpu")
    tuned = load_adapter(_preset(base), "cpu", adapter_dir=str(lora))
    assert tuned.adapter_id.startswith("glaucoma-brset@") and tuned.adapter_path == str(lora.resolve())
    assert tuned.info["adapter"] == tuned.adapter_id and plain.adapter_id is None
    before = plain.score_yes_no(_images(), [PROMPT] * 2)
    after = tuned.score_yes_no(_images(), [PROMPT] * 2)
    assert max(abs(a["p_yes"] - b["p_yes"]) for a, b in zip(before, after)) > 1e-5


def test_broken_weights_file_names_the_folder(base, lora, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "adapter_config.json").write_text((lora / "adapter_config.json").read_text())
    (broken / "adapter_model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(FocusError, match=str(broken)):
        load_adapter(_preset(base), "cpu", adapter_dir=str(broken))


@pytest.mark.parametrize("layout", ["missing", "empty", "no_weights"])
def test_incomplete_adapter_folders_are_errors(base, lora, tmp_path, layout):
    folder = tmp_path / layout
    if layout != "missing":
        folder.mkdir()
    if layout == "no_weights":
        (folder / "adapter_config.json").write_text((lora / "adapter_config.json").read_text())
    with pytest.raises(FocusError, match=str(folder)):
        load_adapter(_preset(base), "cpu", adapter_dir=str(folder))


def test_adapter_for_another_architecture_is_an_error(base, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForImageTextToText

    other = build_tiny("tiny-llava-next", tmp_path / "other")
    model = AutoModelForImageTextToText.from_pretrained(other)
    folder = tmp_path / "llava-lora"
    get_peft_model(model, LoraConfig(r=2, target_modules=["gate_proj"])).save_pretrained(folder)
    with pytest.raises(FocusError, match=str(folder)):
        load_adapter(_preset(base), "cpu", adapter_dir=str(folder))


def test_base_model_names_compare_by_model_name():
    from focus_eval.adapters.lora import model_basename

    assert model_basename("google/medgemma-4b-it") == "medgemma-4b-it"
    assert model_basename("/models/MedGemma-4b-it/") == "medgemma-4b-it"
    assert model_basename("/hf/hub/models--google--medgemma-4b-it/snapshots/0123abcd") == "medgemma-4b-it"
    assert model_basename("google/medgemma-27b-it") != model_basename("google/medgemma-4b-it")

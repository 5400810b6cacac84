"""A user's own model: a family adapter with lm-eval style arguments, a preset file given by path, user preset
folders, an adapter class outside the package behind --trust-remote-code, where each model came from, and a
model hub that cannot be reached failing fast with what to do."""

import json

import pytest

from focus_eval.adapters import hub, load_adapter
from focus_eval.cli import main
from focus_eval.digests import folder_digest
from focus_eval.errors import FocusError
from focus_eval.presets import load_preset, model_provenance, preset_files, resolve_model
from helpers.open_fixtures import ADAPTER_SOURCE, PRESET, save_tiny_vit


@pytest.fixture(scope="module")
def vit_folder(tmp_path_factory):
    return save_tiny_vit(tmp_path_factory.mktemp("models") / "my-vit")


def test_family_adapter_from_a_local_folder(vit_folder):
    preset = load_preset("hf_vision", {"pretrained": str(vit_folder), "domain": "ophthalmic"})
    assert (preset.name, preset.family, preset.adapter, preset.source) == (
        "hf_vision-my-vit", "vm", "hf_vision", str(vit_folder))
    assert preset.domain == "ophthalmic" and preset.origin == "family" and preset.methods == ["linear_probe"]
    # read from the folder's image processor (ViTImageProcessor: 224 squash, bilinear, mean/std 0.5)
    assert preset.preprocessing == {"size": 224, "resize": "squash", "interpolation": "bilinear",
                                    "mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5]}
    adapter = load_adapter(preset)
    assert adapter.embed_dim == 32
    provenance = model_provenance(preset, adapter)
    assert provenance == {"preset": "family", "adapter": "hf_vision", "local": True, "weights": "my-vit",
                          "digest": folder_digest(vit_folder)}
    assert load_preset("hf_vision", {"pretrained": str(vit_folder), "name": "mine"}).name == "mine"


def test_family_adapter_arguments_are_checked(tmp_path, vit_folder):
    with pytest.raises(FocusError, match="--model hf_vision needs --model-args pretrained=HUB_ID"):
        load_preset("hf_vision", {})
    weights = tmp_path / "w.safetensors"
    weights.write_bytes(b"x")
    with pytest.raises(FocusError, match="is a file; hf_vision reads a model folder"):
        load_preset("hf_vision", {"pretrained": str(weights)})
    with pytest.raises(FocusError, match="neither a local folder or file nor a hub id"):
        load_preset("hf_clip", {"pretrained": str(tmp_path / "missing")})
    with pytest.raises(FocusError, match="unknown setting poolng for adapter 'hf_vision'; did you mean pooling"):
        load_adapter(load_preset("hf_vision", {"pretrained": str(vit_folder), "poolng": "cls"}))
    with pytest.raises(FocusError, match="unknown model 'hf_vison'; did you mean hf_vision"):
        load_preset("hf_vison")


def test_timm_and_open_clip_families_take_their_preprocessing_from_the_architecture(tmp_path):
    weights = tmp_path / "vit.pth"
    weights.write_bytes(b"not read here")
    timm = load_preset("timm", {"pretrained": str(weights), "timm_model": "vit_small_patch16_224.augreg_in21k"})
    assert (timm.name, timm.adapter, timm.weights, timm.source) == ("timm-vit", "timm_vision", str(weights), None)
    assert timm.preprocessing == {"size": 224, "interpolation": "bicubic", "mean": [0.5, 0.5, 0.5],
                                  "std": [0.5, 0.5, 0.5], "resize": "shorter_side_then_center_crop", "resize_to": 248}
    hub_timm = load_preset("timm", {"pretrained": "timm/resnet18.a1_in1k", "timm_model": "resnet18.a1_in1k"})
    assert hub_timm.settings["weights_file"] == "model.safetensors" and hub_timm.settings["pooling"] == "pooled"
    clip = load_preset("open_clip", {"pretrained": str(weights), "open_clip_model": "ViT-B-32"})
    assert clip.family == "vlm" and clip.methods == ["zero_shot", "linear_probe"]
    assert clip.preprocessing["size"] == 224 and clip.preprocessing["resize"] == "shorter_side_then_center_crop"
    with pytest.raises(FocusError, match="--model timm needs the architecture"):
        load_preset("timm", {"pretrained": str(weights)})
    mllm = load_preset("hf_mllm", {"pretrained": "google/medgemma-4b-it", "revision": "abc"})
    assert mllm.family == "mllm" and mllm.methods == ["prompt"] and mllm.preprocessing == {}


def test_preset_file_by_path_and_user_preset_folders(tmp_path, vit_folder, monkeypatch, capsys):
    folder = tmp_path / "presets"
    folder.mkdir()
    text = PRESET.format(name="my-vit", adapter="hf_vision").replace("source: null", f"source: {vit_folder}")
    (folder / "my-vit.yaml").write_text(text)
    preset = load_preset(str(folder / "my-vit.yaml"))
    assert preset.name == "my-vit" and preset.origin == "user" and preset.source == str(vit_folder)
    assert model_provenance(preset)["preset_file"] == "my-vit.yaml"
    with pytest.raises(FocusError, match="unknown model 'my-vit'"):
        load_preset("my-vit")
    assert load_preset("my-vit", models_path=[folder]).path == str(folder / "my-vit.yaml")
    assert resolve_model("my-vit", [folder]) == str(folder / "my-vit.yaml")
    assert resolve_model("tiny-vit", [folder]) == "tiny-vit"
    monkeypatch.setenv("FOCUS_MODELS_PATH", str(folder))
    assert "my-vit" in preset_files()
    assert main(["models", "my-*", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed == [{"name": "my-vit", "family": "vm", "domain": "general", "adapter": "hf_vision",
                       "methods": ["linear_probe"], "source": str(vit_folder), "gated": False, "untrained": False,
                       "preset": str(folder / "my-vit.yaml")}]
    assert main(["models"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[-1] == "preset" and any(line.startswith("tiny-vit") and "built-in" in line
                                                      for line in table)
    (folder / "tiny-vit.yaml").write_text(text.replace("my-vit", "tiny-vit"))
    with pytest.raises(FocusError, match="model preset 'tiny-vit' is defined twice"):
        preset_files()
    (folder / "bad.yaml").write_text(text.replace("my-vit", "other"))
    with pytest.raises(FocusError, match="preset name 'other' does not match its file name 'bad'"):
        load_preset(str(folder / "bad.yaml"))


def test_an_adapter_class_outside_the_package_needs_trust_remote_code(tmp_path, monkeypatch):
    (tmp_path / "my_lab_adapter.py").write_text(ADAPTER_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "stats.yaml"
    path.write_text(PRESET.format(name="stats", adapter="my_lab_adapter:ChannelStats"))
    preset = load_preset(str(path))
    with pytest.raises(FocusError, match="names the Python adapter my_lab_adapter:ChannelStats, which is not part "
                                         "of focus-eval; .* pass --trust-remote-code"):
        load_adapter(preset)
    adapter = load_adapter(preset, trust_remote_code=True)
    assert adapter.embed_dim == 18 and adapter.transform.size == 32
    provenance = model_provenance(preset, adapter)
    assert provenance["adapter_class"] == "my_lab_adapter:ChannelStats" and provenance["no_weights"] is True
    path.write_text(PRESET.format(name="stats", adapter="my_lab_adapter:Missing"))
    with pytest.raises(FocusError, match="cannot import adapter my_lab_adapter:Missing"):
        load_adapter(load_preset(str(path)), trust_remote_code=True)


def test_hub_presets_record_hub_id_and_revision():
    preset = load_preset("dinov2-l")
    assert model_provenance(preset) == {"preset": "built-in", "adapter": "hf_vision", "local": False,
                                        "hub_id": "facebook/dinov2-large",
                                        "revision": "47b73eefe95e8d44ec3623f8890bd894b6ea2d6c"}


def test_an_unreachable_hub_fails_fast_with_what_to_do(monkeypatch, tmp_path):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setattr(hub, "_probed", {})
    probes = []  # the work done before the refusal: one bounded connection attempt, no download tried
    connect = hub.socket.create_connection
    monkeypatch.setattr(hub.socket, "create_connection",
                        lambda address, timeout=None, **kw: probes.append((address, timeout)) or connect(address, timeout,
                                                                                                        **kw))
    with pytest.raises(FocusError) as raised:
        load_preset("hf_vision", {"pretrained": "some-org/some-model"})
    assert probes == [(("127.0.0.1", 9), hub.PROBE_TIMEOUT_S)]
    message = str(raised.value)
    assert "the model hub http://127.0.0.1:9 cannot be reached" in message
    assert "set HF_HUB_OFFLINE=1" in message and str(tmp_path / "hf" / "hub") in message
    assert "http://127.0.0.1:9/some-org/some-model" in message and "'hf auth login'" in message
    with pytest.raises(FocusError, match="cannot be reached"):  # asked once: the second model does not wait
        load_adapter(load_preset("dinov2-l"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub.check_reachable("some-org/some-model") is None  # offline: the cache is read, no probe

"""Tiny offline encoders: built quickly and deterministically into the cache, loaded like hub models."""

import hashlib

import pytest
import torch

from focus_eval.adapters import load_adapter
from focus_eval.errors import FocusError
from focus_eval.presets import load_preset
from focus_eval.tiny import MARKER, build_tiny, ensure_tiny


pytestmark = pytest.mark.usefixtures("private_cache")


def _digest(folder):
    return hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()


def test_tiny_models_are_small_built_into_the_cache_and_reused(tmp_path):
    folders = {name: ensure_tiny(name) for name in ("tiny-vit", "tiny-clip")}
    for name, folder in folders.items():
        assert folder == tmp_path / "cache" / "tiny" / name and (folder / MARKER).is_file()
        # what keeps a build to a moment: weights of a few hundred thousand parameters at most
        assert (folder / "model.safetensors").stat().st_size < 4 * 2 ** 20
    stamp = (folders["tiny-vit"] / "model.safetensors").stat().st_mtime_ns
    assert ensure_tiny("tiny-vit") == folders["tiny-vit"]
    assert (folders["tiny-vit"] / "model.safetensors").stat().st_mtime_ns == stamp


def test_tiny_builds_are_deterministic_and_rebuilt_when_absent(tmp_path):
    import subprocess
    import sys

    first = _digest(build_tiny("tiny-clip", tmp_path / "one"))
    assert _digest(build_tiny("tiny-clip", tmp_path / "two")) == first
    # and in another interpreter, whose hash seed differs (a hash-ordered tokenizer trainer broke this)
    code = f"from focus_eval.tiny import build_tiny; build_tiny('tiny-clip', {str(tmp_path / 'three')!r})"
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    assert _digest(tmp_path / "three") == first
    folder = ensure_tiny("tiny-clip")
    (folder / MARKER).unlink()
    assert _digest(ensure_tiny("tiny-clip")) == first and (folder / MARKER).is_file()


def test_unknown_tiny_model_is_an_error():
    with pytest.raises(FocusError, match="unknown tiny model 'tiny-nope'"):
        ensure_tiny("tiny-nope")


def test_tiny_presets_load_through_the_hub_code_path_and_are_marked_untrained():
    from transformers import CLIPModel, ViTModel

    vit = load_adapter(load_preset("tiny-vit"))
    clip = load_adapter(load_preset("tiny-clip"))
    assert isinstance(vit.model, ViTModel) and isinstance(clip.model, CLIPModel)
    assert load_preset("tiny-vit").untrained and load_preset("tiny-clip").untrained
    assert vit.cache_key == load_adapter(load_preset("tiny-vit")).cache_key != clip.cache_key
    with torch.no_grad():
        assert tuple(clip.embed_texts(["a", "b", "c"]).shape) == (3, clip.embed_dim)


def test_one_registry_serves_every_tiny_source():
    from focus_eval.tiny import TINY_MODELS, tiny_names

    assert tiny_names("encoder") == ["tiny-clip", "tiny-vit"]
    assert tiny_names("mllm") == ["tiny-internvl", "tiny-janus", "tiny-llava", "tiny-llava-next", "tiny-medgemma",
                                  "tiny-qwen-vl", "tiny-qwen2-vl", "tiny-qwen2.5-vl"]
    assert set(tiny_names()) == set(TINY_MODELS.names())
    with pytest.raises(FocusError, match="unknown tiny model 'tiny-medgema'; did you mean tiny-medgemma"):
        load_adapter(load_preset("tiny-medgemma", {"source": "tiny:tiny-medgema"}))


def test_a_tiny_model_registered_at_run_time_is_a_preset_source(tmp_path):
    from focus_eval.tiny import TINY_MODELS, TinyBuilder
    from focus_eval.tiny.encoders import build_vit

    TINY_MODELS.register("tiny-vit-seed7", TinyBuilder(build_vit, seed=7, version=1, family="encoder"))
    try:
        other = load_adapter(load_preset("tiny-vit", {"source": "tiny:tiny-vit-seed7"}))
    finally:
        TINY_MODELS.unregister("tiny-vit-seed7")
    assert (tmp_path / "cache" / "tiny" / "tiny-vit-seed7" / MARKER).is_file()
    plain = load_adapter(load_preset("tiny-vit"))
    x = torch.rand(1, 3, 224, 224)
    with torch.no_grad():
        assert not torch.allclose(other.embed_images(x), plain.embed_images(x))
    assert other.cache_key != plain.cache_key

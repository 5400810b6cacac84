"""Tiny offline encoders: built quickly and deterministically into the cache, loaded like hub models."""

import hashlib
import time

import pytest
import torch

from focus_eval.adapters import load_adapter
from focus_eval.adapters.tiny import MARKER, build_tiny, ensure_tiny
from focus_eval.errors import FocusError
from focus_eval.presets import load_preset


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FOCUS_CACHE", str(tmp_path / "cache"))


def _digest(folder):
    return hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()


def test_tiny_models_build_fast_into_the_cache_and_are_reused(tmp_path):
    from transformers import CLIPModel, ViTModel  # noqa: F401  (import time is not build time)

    # CPU time of this process, so a busy shared machine does not make the check flaky.
    start = time.process_time()
    folders = {name: ensure_tiny(name) for name in ("tiny-vit", "tiny-clip")}
    assert time.process_time() - start < 3
    for name, folder in folders.items():
        assert folder == tmp_path / "cache" / "tiny" / name and (folder / MARKER).is_file()
    stamp = (folders["tiny-vit"] / "model.safetensors").stat().st_mtime_ns
    assert ensure_tiny("tiny-vit") == folders["tiny-vit"]
    assert (folders["tiny-vit"] / "model.safetensors").stat().st_mtime_ns == stamp


def test_tiny_builds_are_deterministic_and_rebuilt_when_absent(tmp_path):
    first = _digest(build_tiny("tiny-clip", tmp_path / "one"))
    assert _digest(build_tiny("tiny-clip", tmp_path / "two")) == first
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

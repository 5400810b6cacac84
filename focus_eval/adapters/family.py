"""Family adapters named directly, lm-eval style: ``--model hf_vision --model-args pretrained=ORG/NAME,revision=SHA``
(also ``timm``, ``open_clip``, ``hf_clip``, ``hf_mllm``). ``pretrained`` is a hub id, a local folder or a local
weights file; the preset is built from it, its preprocessing read from the checkpoint's own processor (or timm's
and open_clip's configuration of the named architecture) unless ``preprocessing.*`` arguments give it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from focus_eval.errors import FocusError

# Adapters that read a single weights file (a local file, or this file of a hub repository).
_FILE_ADAPTERS = {"timm_vision": "model.safetensors", "open_clip": "open_clip_model.safetensors"}
_REQUIRED_PREPROCESSING = ("size", "mean", "std", "resize")


@dataclass(frozen=True)
class FamilyPreset:
    """How ``--model <name> --model-args pretrained=...`` becomes a preset for one adapter and family."""

    name: str
    adapter: str
    family: str

    def preset(self, args: dict[str, Any]) -> dict[str, Any]:
        """The raw preset; consumes ``pretrained`` and ``name`` from ``args`` (the remaining arguments are
        applied as for any preset, then :meth:`complete` fills what they left open)."""
        pretrained = args.pop("pretrained", None)
        if not pretrained:
            raise FocusError(f"--model {self.name} needs --model-args pretrained=HUB_ID (e.g. ORG/NAME, with "
                             f"revision=COMMIT), or pretrained=PATH to a local model folder or weights file")
        pretrained = str(pretrained)
        raw: dict[str, Any] = {"name": str(args.pop("name", None) or default_name(self.name, pretrained)),
                               "family": self.family, "domain": "general", "adapter": self.adapter, "settings": {}}
        raw.update(self._weights(pretrained, raw["settings"]))
        if self.adapter == "timm_vision":
            # timm's pooled pre-classifier features: the class token for ViTs, the global pool for CNNs
            raw["settings"]["pooling"] = "pooled"
        return raw

    def _weights(self, pretrained: str, settings: dict[str, Any]) -> dict[str, str]:
        local = Path(pretrained).expanduser()
        if local.is_file():
            if self.adapter not in _FILE_ADAPTERS:
                raise FocusError(f"--model {self.name}: pretrained={pretrained} is a file; {self.name} reads a "
                                 f"model folder (save_pretrained output) or a hub id")
            return {"weights": str(local.resolve())}
        if local.is_dir():
            return {"source": str(local.resolve())}
        if pretrained.startswith((".", "/", "~")) or pretrained.count("/") != 1:
            raise FocusError(f"--model {self.name}: pretrained={pretrained} is neither a local folder or file nor a "
                             f"hub id like ORG/NAME")
        if self.adapter in _FILE_ADAPTERS:
            settings["weights_file"] = _FILE_ADAPTERS[self.adapter]
        return {"source": pretrained}

    def complete(self, raw: dict[str, Any]) -> None:
        """Fill what the arguments left open: the preprocessing, from the model's own configuration."""
        if self.adapter == "hf_mllm":
            return  # the model's processor prepares its images
        given = dict(raw.get("preprocessing") or {})
        if all(given.get(k) is not None for k in _REQUIRED_PREPROCESSING):
            return
        derive = {"hf_vision": _hf_preprocessing, "hf_clip": _hf_preprocessing, "timm_vision": _timm_preprocessing,
                  "open_clip": _open_clip_preprocessing}[self.adapter]
        raw["preprocessing"] = {**derive(raw), **given}


HF_VISION = FamilyPreset("hf_vision", "hf_vision", "vm")
TIMM = FamilyPreset("timm", "timm_vision", "vm")
OPEN_CLIP = FamilyPreset("open_clip", "open_clip", "vlm")
HF_CLIP = FamilyPreset("hf_clip", "hf_clip", "vlm")
HF_MLLM = FamilyPreset("hf_mllm", "hf_mllm", "mllm")


def default_name(model: str, pretrained: str) -> str:
    """``<family adapter>-<last part of pretrained>`` in the characters a results folder name may hold."""
    stem = Path(pretrained.rstrip("/")).name
    stem = Path(stem).stem if Path(pretrained).expanduser().is_file() else stem
    return f"{model}-" + (re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-.") or "model")


def _partial(raw: dict[str, Any]) -> SimpleNamespace:
    """Enough of a preset for the weight-finding helpers (name, source, revision, weights, gated, settings)."""
    return SimpleNamespace(name=raw["name"], source=raw.get("source"), revision=raw.get("revision"),
                           weights=raw.get("weights"), gated=bool(raw.get("gated")),
                           settings=dict(raw.get("settings") or {}))


def _hf_preprocessing(raw: dict[str, Any]) -> dict[str, Any]:
    from transformers import AutoImageProcessor

    from focus_eval.adapters.checkpoints import hf_load, resolve_source
    from focus_eval.adapters.preprocessing import POLICIES, processor_view

    preset = _partial(raw)
    source, revision = resolve_source(preset)
    view = processor_view(hf_load(AutoImageProcessor, preset, source, revision))
    if view.get("resize") not in POLICIES or not isinstance(view.get("size"), int):
        raise FocusError(f"model {raw['name']!r}: the image processor of {source} resizes as "
                         f"{view.get('resize')} {view.get('size')}, which focus-eval cannot reproduce; give the "
                         f"preprocessing with --model-args preprocessing.size=...,preprocessing.resize=squash,...")
    keys = ("size", "resize", "resize_to", "interpolation", "mean", "std")
    return {k: view[k] for k in keys if view.get(k) is not None}


def _timm_preprocessing(raw: dict[str, Any]) -> dict[str, Any]:
    from timm.models import get_pretrained_cfg

    name = (raw.get("settings") or {}).get("timm_model")
    if not name:
        raise FocusError(f"model {raw['name']!r}: --model timm needs the architecture, e.g. "
                         f"--model-args timm_model=vit_base_patch16_224.augreg_in21k")
    cfg = get_pretrained_cfg(str(name))
    if cfg is None:
        raise FocusError(f"model {raw['name']!r}: timm has no configuration for {name!r}; give the preprocessing "
                         f"with --model-args preprocessing.size=...,preprocessing.mean=... or a known timm_model")
    size = int(cfg.input_size[-1])
    out = {"size": size, "interpolation": cfg.interpolation or "bicubic", "mean": list(cfg.mean),
           "std": list(cfg.std)}
    if cfg.crop_mode == "center" and cfg.crop_pct and cfg.crop_pct < 1:
        # timm's eval transform: shorter side to floor(size / crop_pct), then a centred crop
        out.update(resize="shorter_side_then_center_crop", resize_to=int(size / cfg.crop_pct))
    else:
        out.update(resize="squash")
    return out


def _open_clip_preprocessing(raw: dict[str, Any]) -> dict[str, Any]:
    import open_clip
    from open_clip.constants import OPENAI_DATASET_MEAN, OPENAI_DATASET_STD

    settings = raw.get("settings") or {}
    config = settings.get("open_clip_config") or open_clip.get_model_config(str(settings.get("open_clip_model")))
    if not config:
        raise FocusError(f"model {raw['name']!r}: --model open_clip needs the architecture, e.g. "
                         f"--model-args open_clip_model=ViT-B-32")
    size = config["vision_cfg"]["image_size"]
    size = int(size[0] if isinstance(size, (list, tuple)) else size)
    # open_clip's evaluation transform for OpenAI-style towers: bicubic shorter side, centred crop
    return {"size": size, "resize": "shorter_side_then_center_crop", "resize_to": size, "interpolation": "bicubic",
            "mean": list(OPENAI_DATASET_MEAN), "std": list(OPENAI_DATASET_STD)}

"""A multimodal LLM's own vision tower as an image encoder (FunBench's E-mode I, the ``ve_probe`` method): the
tower's output before the projector into the language model, pooled to one vector per image as the preset's
``settings.vision_pooling`` says (``mean`` of the patch tokens the projector reads, or the tower's ``cls``
token), so that the runner's embedding path, embedding cache and linear probe run on it unchanged.

Images take the model's own route: decoded at the preset's size as for every other method, then the MLLM's
processor (its image half, as in ``MLLMScorer.process_images``), then the tower.

Architectures are looked up in ``VISION_TOWERS`` by the loaded model's ``config.model_type``. Adding one:

1. write ``def _my_arch(model, inputs) -> TowerOutput``: run the vision tower on ``inputs`` (the processor's
   image tensors of a batch on the model's device: ``pixel_values`` and whatever the processor adds, e.g.
   ``image_grid_thw``) and return, per image, the tokens the projector reads (``[tokens, width]``) and, for a
   tower with a class token, that token (``[images, width]``), else None;
2. add one line below: ``VISION_TOWERS.register("<model_type>", VisionTower(_my_arch, ("mean",), "mean"))``
   (the poolings it supports, the one a preset would name when it has no reason to choose another);
3. give each preset of that architecture a ``vision_pooling`` line with a comment saying why (CLIP towers are
   trained with their class token as the image summary; SigLIP, Qwen's and InternViT towers have none).

The tower's output width is ``config.vision_config.hidden_size`` unless the entry gives ``width`` (a function
of the model config).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from focus_eval.adapters.preprocessing import ImageTransform
from focus_eval.digests import json_digest
from focus_eval.errors import FocusError
from focus_eval.registry import Registry

POOLINGS = ("mean", "cls")
SETTING = "vision_pooling"


@dataclass(frozen=True)
class TowerOutput:
    """One batch through a vision tower: per image, the tokens the projector reads; the class tokens or None."""

    tokens: list[torch.Tensor]
    cls: torch.Tensor | None = None


@dataclass(frozen=True)
class VisionTower:
    """How to read one architecture's vision tower: ``read(model, inputs) -> TowerOutput``, the poolings it
    supports (``POOLINGS``), its default pooling, and optionally its output width from the model config."""

    read: Callable[[Any, dict[str, torch.Tensor]], TowerOutput]
    poolings: tuple[str, ...]
    default: str
    width: Callable[[Any], int] | None = None

    def output_width(self, config) -> int:
        return int(self.width(config) if self.width else config.vision_config.hidden_size)


def _inner(model):
    """The multimodal core (``model.model`` of a ``...ForConditionalGeneration``), or the model itself."""
    return getattr(model, "model", model)


def _siglip_gemma3(model, inputs) -> TowerOutput:
    # Gemma 3 feeds the projector (which pools 4x4 and projects) the last hidden state of its SigLIP tower
    hidden = _inner(model).vision_tower(pixel_values=inputs["pixel_values"], return_dict=True).last_hidden_state
    return TowerOutput(list(hidden))


def _qwen_vl(model, inputs) -> TowerOutput:
    # Qwen2-VL, Qwen2.5-VL, Qwen3-VL: the blocks' output before the patch merger (the projector); each image's
    # patches are contiguous rows (Qwen2.5-VL orders them by attention window within the image)
    grid = inputs["image_grid_thw"]
    out = _inner(model).visual(inputs["pixel_values"], grid_thw=grid, return_dict=True)
    return TowerOutput(list(torch.split(out.last_hidden_state, grid.prod(-1).tolist())))


def _llava_next(model, inputs) -> TowerOutput:
    # LLaVA-NeXT's projector reads the CLIP hidden state of vision_feature_layer (class token dropped under
    # the "default" strategy) of every view: the whole image resized, then the tiles of its anyres grid
    from transformers.models.llava_next.modeling_llava_next import image_size_to_num_patches

    config = _inner(model).config
    views = [image_size_to_num_patches(size, config.image_grid_pinpoints, config.vision_config.image_size)
             for size in inputs["image_sizes"]]
    pixels = inputs["pixel_values"]
    hidden = _clip_hidden(model, torch.cat([p[:n] for p, n in zip(pixels, views)]) if pixels.dim() == 5 else pixels)
    starts = np.cumsum([0] + views[:-1]).tolist()
    cls = hidden[starts, 0]  # the class token of each image's whole-image view
    if config.vision_feature_select_strategy == "default":
        hidden = hidden[:, 1:]
    tokens = [hidden[s:s + n].reshape(-1, hidden.shape[-1]) for s, n in zip(starts, views)]
    return TowerOutput(tokens, cls)


def _clip_hidden(model, pixels: torch.Tensor) -> torch.Tensor:
    """The CLIP hidden state a LLaVA projector reads: layer ``vision_feature_layer`` (several concatenated)."""
    out = _inner(model).vision_tower(pixels, output_hidden_states=True, return_dict=True)
    layers = _inner(model).config.vision_feature_layer
    layers = [layers] if isinstance(layers, int) else list(layers)
    return torch.cat([out.hidden_states[i] for i in layers], dim=-1)


def _llava(model, inputs) -> TowerOutput:
    # LLaVA-1.5 and its conversions (LLaVA-Med, HuatuoGPT-Vision): one centre-cropped CLIP view per image
    hidden = _clip_hidden(model, inputs["pixel_values"])
    default = _inner(model).config.vision_feature_select_strategy == "default"
    return TowerOutput(list(hidden[:, 1:] if default else hidden), hidden[:, 0])


def _internvl(model, inputs) -> TowerOutput:
    # InternViT's hidden state of vision_feature_layer, whose patch tokens the pixel shuffle and projector read
    # (one row per image: the presets switch dynamic tiling off)
    config = _inner(model).config
    out = _inner(model).vision_tower(pixel_values=inputs["pixel_values"], output_hidden_states=True,
                                     return_dict=True)
    layer = config.vision_feature_layer
    hidden = out.last_hidden_state if layer == -1 else out.hidden_states[layer]
    default = config.vision_feature_select_strategy == "default"
    return TowerOutput(list(hidden[:, 1:] if default else hidden), hidden[:, 0])


def _janus(model, inputs) -> TowerOutput:
    # the SigLIP encoder's last hidden state, which Janus's aligner (the projector) reads
    return TowerOutput(list(_inner(model).vision_model(inputs["pixel_values"], return_dict=True).last_hidden_state))


def _llava_width(config) -> int:
    layers = config.vision_feature_layer
    return config.vision_config.hidden_size * (1 if isinstance(layers, int) else len(layers))


#: ``config.model_type`` -> ``VisionTower``
VISION_TOWERS = Registry("vision tower")
VISION_TOWERS.register("gemma3", VisionTower(_siglip_gemma3, ("mean",), "mean"))
VISION_TOWERS.register("qwen3_vl", VisionTower(_qwen_vl, ("mean",), "mean"))
VISION_TOWERS.register("llava_next", VisionTower(_llava_next, ("cls", "mean"), "cls", width=_llava_width))
VISION_TOWERS.register("llava", VisionTower(_llava, ("cls", "mean"), "cls", width=_llava_width))
# Qwen2-VL's vision_config.hidden_size is the merger's output (the language model's width); its blocks are embed_dim
VISION_TOWERS.register("qwen2_vl", VisionTower(_qwen_vl, ("mean",), "mean", width=lambda c: c.vision_config.embed_dim))
VISION_TOWERS.register("qwen2_5_vl", VisionTower(_qwen_vl, ("mean",), "mean"))
VISION_TOWERS.register("internvl", VisionTower(_internvl, ("mean", "cls"), "mean"))
VISION_TOWERS.register("janus", VisionTower(_janus, ("mean",), "mean"))


def pool(output: TowerOutput, pooling: str) -> torch.Tensor:
    """One float32 vector per image: the mean of its tokens, or its class token."""
    if pooling == "cls":
        if output.cls is None:
            raise FocusError("this vision tower has no class token; use vision_pooling: mean")
        return output.cls.float()
    return torch.stack([t.float().mean(dim=0) for t in output.tokens])


def tower_for(model, preset) -> tuple[str, VisionTower, str]:
    """(architecture, its ``VisionTower``, the pooling) for a loaded model and its preset: the preset's
    ``vision_pooling``, else the architecture's default; an architecture or pooling not in the table is a
    FocusError naming the preset."""
    arch = str(getattr(model.config, "model_type", type(model).__name__))
    if arch not in VISION_TOWERS:
        raise FocusError(f"preset {preset.name!r}: focus-eval cannot read the vision tower of {arch!r} models "
                         f"(ve_probe supports {', '.join(sorted(VISION_TOWERS.names()))}); see "
                         f"focus_eval/adapters/mllm_vision.py to add it")
    tower = VISION_TOWERS.get(arch)
    pooling = str((preset.settings or {}).get(SETTING) or tower.default)
    if pooling not in tower.poolings:
        raise FocusError(f"preset {preset.name!r} ({preset.path}): settings.{SETTING} {pooling!r} is not "
                         f"available for {arch} vision towers; use one of {', '.join(tower.poolings)}")
    return arch, tower, pooling


def check_pooling(preset) -> None:
    """A preset's ``vision_pooling``, when given, must be one of ``POOLINGS`` (checked without loading)."""
    value = (preset.settings or {}).get(SETTING)
    if value is not None and value not in POOLINGS:
        raise FocusError(f"preset {preset.name!r} ({preset.path}): settings.{SETTING} must be one of "
                         f"{', '.join(POOLINGS)}, got {value!r}")


@dataclass(frozen=True)
class DecodedPixels(ImageTransform):
    """The worker half for the vision tower: the preset's squash to uint8 [3, size, size] (``ImageTransform``'s
    ``pixels``), left for the MLLM's processor to resize and normalise (``normalize`` is the identity)."""

    mean: tuple[float, float, float] = (0.0, 0.0, 0.0)
    std: tuple[float, float, float] = (1.0, 1.0, 1.0)

    def normalize(self, pixels):
        return pixels

    def to_dict(self) -> dict[str, Any]:
        return {"decode_size": self.size, "then": "the model's processor"}


class MLLMVisionEncoder:
    """The encoder view of a loaded MLLM adapter (an ``MLLMScorer``): ``transform``, ``embed_images``,
    ``cache_key``, ``embed_dim``, ``device``, ``model``, ``preset``, as the embedding path expects."""

    def __init__(self, scorer, preset):
        self.scorer, self.preset = scorer, preset
        self.architecture, self.tower, self.pooling = tower_for(scorer.model, preset)
        size = (preset.preprocessing or {}).get("size")
        if not size:
            raise FocusError(f"preset {preset.name!r}: preprocessing.size (the side images are decoded at) is "
                             f"needed for ve_probe")
        self.transform = DecodedPixels(int(size))
        self.device = scorer.device
        self.model = scorer.model
        self.embed_dim = self.tower.output_width(scorer.model.config)
        self.cache_key = self._cache_key()

    def _cache_key(self) -> str:
        """Never equal to an encoder preset's key: the payload names this kind of encoder, the architecture
        and the pooling, besides the model's source, revision, LoRA adapter and processor settings."""
        info = getattr(self.scorer, "info", {}) or {}
        settings = self.preset.settings or {}
        payload = {"kind": "mllm_vision_tower", "adapter": self.preset.adapter, "source": info.get("source"),
                   "preset_source": self.preset.source, "revision": info.get("revision"),
                   "lora": info.get("adapter_path"), "architecture": self.architecture, "pooling": self.pooling,
                   "processor": settings.get("processor"), "preprocessing": self.transform.to_dict()}
        return json_digest(payload)[:32]

    @torch.inference_mode()
    def embed_images(self, pixels: torch.Tensor) -> torch.Tensor:
        """uint8 [N, 3, S, S] -> float32 [N, width]: the processor's image half, the tower, the pooling."""
        from PIL import Image

        arrays = pixels.to("cpu", torch.uint8).permute(0, 2, 3, 1).numpy()
        batch = self.scorer.place_images(self.scorer.process_images([Image.fromarray(a) for a in arrays]))
        vectors = pool(self.tower.read(self.model, dict(batch.tensors)), self.pooling)
        if vectors.shape[0] != len(arrays):  # a processor that splits images into tiles (InternVL's)
            raise FocusError(f"preset {self.preset.name!r}: the {self.architecture} vision tower gave "
                             f"{vectors.shape[0]} vectors for {len(arrays)} images; ve_probe needs the processor to "
                             f"keep each image whole (InternVL: --model-args processor.crop_to_patches=false)")
        return vectors

    def describe(self) -> dict[str, Any]:
        return {"vision_tower": self.architecture, "vision_pooling": self.pooling, "cache_key": self.cache_key,
                "embed_dim": self.embed_dim}

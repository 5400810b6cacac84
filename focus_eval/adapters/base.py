"""What every preset adapter shares (:class:`PresetAdapter`: family check, declared settings, remote-code gate),
and the encoder adapter API the runner calls: vision encoders (``vm``) and CLIP-style dual encoders (``vlm``).

    adapter = load_adapter(preset, device="cpu", trust_remote_code=False)
    adapter.transform          picklable PIL.Image (RGB) -> FloatTensor [3, H, W], the model's own preprocessing
    adapter.cache_key          stable hash of source, revision, weight-file sha256, preprocessing, pooling
    adapter.embed_images(x)    FloatTensor [N, 3, H, W] on adapter.device -> float32 [N, D], not normalised
    adapter.embed_texts(t)     (dual encoders) list[str] -> float32 [N, D], tokenised as the text tower was trained
    adapter.final_texts(t)     (dual encoders) the exact strings the text tower receives
    adapter.logit_scale        (dual encoders) the model's own scale, already exponentiated
    adapter.logit_bias         (dual encoders) float for sigmoid models (SigLIP), else None
    adapter.embed_dim, adapter.device (torch.device), adapter.model (nn.Module), adapter.preset

The runner owns ``no_grad``/autocast, batching and devices; adapters hold weights in float32 and return float32.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from focus_eval.adapters.checkpoints import KeyMap
from focus_eval.adapters.preprocessing import ImageTransform, transform_from_preset
from focus_eval.digests import json_digest
from focus_eval.errors import FocusError
from focus_eval.presets import PRESET_FIELDS
from focus_eval.registry import suggest

# Settings that steer loading checks only; they never change an embedding, so they stay out of the cache key.
_NOT_IN_CACHE_KEY = frozenset({"check_processor", "trust_pickle"})


class PresetAdapter:
    """The base of every adapter class: the preset's family must be one it serves, every key of
    ``preset.settings`` (where ``--model-args`` keys that are not preset fields land) must be one it declares,
    and a preset that runs code from its model repository needs the user's ``--trust-remote-code``."""

    #: preset families this adapter can serve
    families: tuple[str, ...] = ()
    #: the settings this adapter class reads; anything else in ``preset.settings`` is a typo and an error
    settings_keys: frozenset[str] = frozenset()

    def __init__(self, preset, trust_remote_code: bool = False):
        self.validate(preset)
        self.preset = preset
        self.settings: dict[str, Any] = dict(preset.settings or {})
        self.trust_remote_code = remote_code_allowed(preset, trust_remote_code)

    @classmethod
    def valid_settings(cls) -> frozenset[str]:
        return frozenset(cls.settings_keys)

    @classmethod
    def validate(cls, preset) -> None:
        """Check the preset against this adapter class without loading anything (typos fail here)."""
        if preset.family not in cls.families:
            raise FocusError(f"preset {preset.name!r}: adapter {preset.adapter!r} serves families "
                             f"{list(cls.families)}, not {preset.family!r}")
        check_settings(preset, cls.valid_settings())


def check_settings(preset, valid: frozenset[str]) -> None:
    """A FocusError naming every key of ``preset.settings`` outside ``valid``, with a close-name hint (a
    mistyped preset field such as ``revison`` lands in settings too) and the list of valid settings."""
    unknown = sorted(set(preset.settings or {}) - set(valid))
    if not unknown:
        return
    hints = [suggest(key, set(valid) | PRESET_FIELDS) for key in unknown]
    close = "".join(h for h in hints if h.startswith("; did you mean"))
    raise FocusError(f"preset {preset.name!r} ({preset.path}): unknown setting{'s' if len(unknown) > 1 else ''} "
                     f"{', '.join(unknown)} for adapter {preset.adapter!r}{close or '.'} "
                     f"Valid settings: {', '.join(sorted(valid)) or '(none)'}")


def remote_code_allowed(preset, requested: bool) -> bool:
    """Whether the model repository's own code may run: only when the preset needs it and the user allowed it."""
    if preset.trust_remote_code and not requested:
        raise FocusError(f"preset {preset.name!r} runs code from its model repository; "
                         f"pass --trust-remote-code to allow it")
    return bool(preset.trust_remote_code and requested)


@runtime_checkable
class VisionEncoder(Protocol):
    preset: Any
    transform: ImageTransform
    cache_key: str
    embed_dim: int
    device: Any
    model: Any

    def embed_images(self, pixels): ...


@runtime_checkable
class DualEncoder(VisionEncoder, Protocol):
    logit_scale: float
    logit_bias: float | None

    def embed_texts(self, texts: list[str]): ...

    def final_texts(self, texts: list[str]) -> list[str]: ...


class EncoderAdapter(PresetAdapter):
    """Shared set-up: preset checks, device, transform, cache key. Subclasses load ``self.model``."""

    families = ("vm",)  # a dual encoder also serves as a plain vision encoder
    #: loading checks every encoder understands (they stay out of the cache key)
    loading_settings: frozenset[str] = _NOT_IN_CACHE_KEY

    def __init__(self, preset, device: str = "cpu", trust_remote_code: bool = False, adapter_dir=None,
                 **unused: Any):
        import torch

        if adapter_dir:
            raise FocusError(f"preset {preset.name!r}: --adapter (LoRA) applies to multimodal LLM presets only")
        if unused:
            raise FocusError(f"preset {preset.name!r}: unsupported adapter options {sorted(unused)}")
        super().__init__(preset, trust_remote_code)
        self.device = torch.device(device)
        self.transform = transform_from_preset(preset)
        self.load_notes: list[str] = []
        self.weights_sha256: str | None = None
        self.resolved_revision: str | None = preset.revision
        self.model = None
        self.embed_dim = 0
        self.load()
        self.model.eval().requires_grad_(False).to(self.device)
        self.cache_key = self._cache_key()

    @classmethod
    def valid_settings(cls) -> frozenset[str]:
        return frozenset(cls.settings_keys) | cls.loading_settings

    @classmethod
    def validate(cls, preset) -> None:
        """Check a preset's settings and preprocessing without loading anything (typos fail here)."""
        super().validate(preset)
        transform_from_preset(preset)
        if "checkpoint" in (preset.settings or {}):
            KeyMap.from_settings(preset.settings["checkpoint"], f"preset {preset.name!r}")

    # -- subclasses -------------------------------------------------------------------------------
    def load(self) -> None:
        raise NotImplementedError

    def embedding_settings(self) -> dict[str, Any]:
        """Settings that may change image embeddings; text-tower settings (``text*`` keys) cannot."""
        return {k: v for k, v in self.settings.items() if k not in _NOT_IN_CACHE_KEY and not k.startswith("text")}

    def embed_images(self, pixels):
        raise NotImplementedError

    # -- shared -----------------------------------------------------------------------------------
    def _cache_key(self) -> str:
        p = self.preset
        payload = {"adapter": p.adapter, "source": p.source, "revision": self.resolved_revision,
                   "weights_sha256": self.weights_sha256, "preprocessing": self.transform.to_dict(),
                   "settings": self.embedding_settings()}
        return json_digest(payload)[:32]

    def load_checkpoint(self, model, path) -> None:
        """Verify, read and strictly load a publisher checkpoint into ``model`` per ``settings.checkpoint``."""
        from focus_eval.adapters import checkpoints as ck

        preset = self.preset
        self.weights_sha256 = ck.verify_sha256(preset, path)
        where = f"model {preset.name!r}, weights {path}"
        keymap = KeyMap.from_settings(self.settings.get("checkpoint"), f"preset {preset.name!r}")
        raw = ck.read_checkpoint(path, bool(self.settings.get("trust_pickle")))
        state, dropped = ck.map_keys(ck.select_container(raw, keymap, where), keymap)
        self.load_notes += ck.load_state_strict(model, state, keymap, where)
        if dropped:
            self.load_notes.append(f"dropped {len(dropped)} allow-listed checkpoint tensors (patterns {keymap.drop})")

    def _pixels(self, pixels):
        """Move pixels to the model's parameter dtype (the runner may autocast around the call)."""
        dtype = next(self.model.parameters()).dtype
        return pixels.to(device=self.device, dtype=dtype) if pixels.dtype != dtype else pixels.to(self.device)

    def describe(self) -> dict[str, Any]:
        """What was loaded, for the run manifest."""
        return {"adapter": self.preset.adapter, "source": self.preset.source, "revision": self.resolved_revision,
                "weights_sha256": self.weights_sha256, "cache_key": self.cache_key,
                "preprocessing": self.transform.to_dict(), "embed_dim": self.embed_dim, "notes": self.load_notes}


class DualEncoderAdapter(EncoderAdapter):
    """Adds the text tower: ``embed_texts``, ``final_texts``, ``logit_scale``, ``logit_bias``."""

    families = ("vm", "vlm")
    logit_scale: float = 1.0
    logit_bias: float | None = None

    @classmethod
    def validate(cls, preset) -> None:
        super().validate(preset)
        text_spec(preset)

    def text_settings(self) -> dict[str, Any]:
        return text_spec(self.preset)

    def final_texts(self, texts: list[str]) -> list[str]:
        """The exact strings given to the tokenizer: the preset's template around each text, as written."""
        spec = self.text_settings()
        out = [spec.get("template", "{text}").replace("{text}", t) for t in texts]
        return [t.lower() for t in out] if spec.get("lowercase") else out

    def embed_texts(self, texts: list[str]):
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "logit_scale": self.logit_scale, "logit_bias": self.logit_bias,
                "text": self.text_settings()}


TEXT_KEYS = {"padding", "padding_side", "max_length", "truncation", "lowercase", "template", "attention_mask"}


def text_spec(preset) -> dict[str, Any]:
    """A dual-encoder preset's ``settings.text``: padding (``max_length``, ``longest`` or false), padding_side,
    max_length, truncation, lowercase, template (around ``{text}``) and attention_mask (pass the mask on)."""
    spec = dict((preset.settings or {}).get("text") or {})
    unknown = set(spec) - TEXT_KEYS
    if unknown:
        raise FocusError(f"preset {preset.name!r}: unknown settings.text keys {sorted(unknown)}; "
                         f"known: {sorted(TEXT_KEYS)}")
    if spec.get("padding") not in (None, False, "max_length", "longest"):
        raise FocusError(f"preset {preset.name!r}: settings.text.padding must be max_length, longest or false")
    if spec.get("padding_side") not in (None, "left", "right"):
        raise FocusError(f"preset {preset.name!r}: settings.text.padding_side must be left or right")
    if spec.get("padding") == "max_length" and not spec.get("max_length"):
        raise FocusError(f"preset {preset.name!r}: settings.text.padding max_length needs max_length")
    if "{text}" not in spec.get("template", "{text}"):
        raise FocusError(f"preset {preset.name!r}: settings.text.template must contain {{text}}")
    return spec

"""timm backbones loaded from publisher checkpoints (RETFound, VisionFM, EfficientNet-Lite0) with declared key maps."""

from __future__ import annotations

from focus_eval.adapters.base import EncoderAdapter
from focus_eval.adapters.checkpoints import resolve_weights
from focus_eval.errors import FocusError

POOLINGS = ("cls", "pooled")


class TimmVisionAdapter(EncoderAdapter):
    """A timm model built without downloads (``pretrained=False``, no classifier), then loaded strictly.

    ``pooling: cls`` is the class token after the final norm (ViTs with their global pool off);
    ``pooling: pooled`` is timm's pooled pre-classifier features (CNNs).
    """

    settings_keys = frozenset({"timm_model", "timm_kwargs", "pooling", "weights_file", "checkpoint"})

    def load(self) -> None:
        import timm

        preset = self.preset
        name = self.settings.get("timm_model")
        if not name:
            raise FocusError(f"preset {preset.name!r}: settings.timm_model is required")
        pooling = self.settings.get("pooling", "cls")
        if pooling not in POOLINGS:
            raise FocusError(f"preset {preset.name!r}: settings.pooling must be one of {list(POOLINGS)}")
        kwargs = dict(self.settings.get("timm_kwargs") or {})
        path = resolve_weights(preset)
        try:
            model = timm.create_model(name, pretrained=False, num_classes=0, **kwargs)
        except (RuntimeError, TypeError, ValueError) as exc:
            raise FocusError(f"preset {preset.name!r}: timm cannot build {name} with {kwargs}: {exc}") from None
        if pooling == "cls" and not hasattr(model, "num_prefix_tokens"):
            raise FocusError(f"preset {preset.name!r}: pooling 'cls' needs a transformer with a class token")
        self.load_checkpoint(model, path)
        self.model = model
        self.embed_dim = int(model.num_features)

    def embed_images(self, pixels):
        pixels = self._pixels(pixels)
        if self.settings.get("pooling", "cls") == "cls":
            return self.model.forward_features(pixels)[:, 0].float()
        return self.model(pixels).float()

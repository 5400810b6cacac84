"""Hugging Face ``AutoModel`` vision backbones (ViT, DINOv2, DINOv3): the CLS token after the final layer norm."""

from __future__ import annotations

from focus_eval.adapters.base import EncoderAdapter
from focus_eval.adapters.checkpoints import check_hf_loading, hf_load, resolve_source, resolved_revision
from focus_eval.adapters.preprocessing import check_against_processor
from focus_eval.digests import folder_digest
from focus_eval.errors import FocusError

POOLINGS = ("cls",)


class HFVisionAdapter(EncoderAdapter):
    """``last_hidden_state[:, 0]``: every supported backbone applies its final norm before that output.

    ``pooler_output`` is never used: ViT's pooler is a freshly initialised Linear+tanh on most checkpoints,
    so presets load ViT with ``model_kwargs: {add_pooling_layer: false}`` and allow-list the pooler keys.
    """

    settings_keys = frozenset({"pooling", "model_kwargs", "allow_missing", "allow_unexpected"})

    def load(self) -> None:
        from transformers import AutoImageProcessor, AutoModel

        preset = self.preset
        pooling = self.settings.get("pooling", "cls")
        if pooling not in POOLINGS:
            raise FocusError(f"preset {preset.name!r}: settings.pooling must be one of {list(POOLINGS)}")
        source, revision = resolve_source(preset)
        where = f"model {preset.name!r} from {source}"
        model, info = hf_load(AutoModel, preset, source, revision, trust_remote_code=self.trust_remote_code,
                              output_loading_info=True, dtype="float32", **(self.settings.get("model_kwargs") or {}))
        check_hf_loading(info, self.settings.get("allow_missing", []), self.settings.get("allow_unexpected", []),
                         where)
        if self.settings.get("check_processor", True):
            processor = hf_load(AutoImageProcessor, preset, source, revision)
            check_against_processor(self.transform, processor, where)
        self.model = model
        self.embed_dim = int(model.config.hidden_size)
        self.resolved_revision = resolved_revision(source, revision)
        if self.resolved_revision is None:
            self.weights_sha256 = folder_digest(source)

    def embed_images(self, pixels):
        hidden = self.model(pixel_values=self._pixels(pixels)).last_hidden_state
        return hidden[:, 0].float()

"""Hugging Face dual encoders (CLIP, SigLIP, SigLIP 2, MedSigLIP): projected image and text embeddings."""

from __future__ import annotations

from focus_eval.adapters.base import DualEncoderAdapter
from focus_eval.adapters.checkpoints import check_hf_loading, hf_load, resolve_source, resolved_revision
from focus_eval.adapters.preprocessing import check_against_processor
from focus_eval.digests import folder_digest
from focus_eval.errors import FocusError


def _features(output):
    """``get_*_features`` returns a tensor in older transformers, an output whose pooler is projected in v5."""
    return output if hasattr(output, "shape") else output.pooler_output


class HFDualEncoderAdapter(DualEncoderAdapter):
    """``get_image_features`` / ``get_text_features``, with the model's own ``logit_scale`` and ``logit_bias``."""

    settings_keys = frozenset({"text", "model_kwargs", "allow_missing", "allow_unexpected"})

    def load(self) -> None:
        from transformers import AutoImageProcessor, AutoModel, AutoTokenizer

        preset = self.preset
        source, revision = resolve_source(preset)
        where = f"model {preset.name!r} from {source}"
        model, info = hf_load(AutoModel, preset, source, revision, trust_remote_code=self.trust_remote_code,
                              output_loading_info=True, dtype="float32", **(self.settings.get("model_kwargs") or {}))
        self.tokenizer = hf_load(AutoTokenizer, preset, source, revision, trust_remote_code=self.trust_remote_code)
        check_hf_loading(info, self.settings.get("allow_missing", []), self.settings.get("allow_unexpected", []),
                         where)
        if not hasattr(model, "get_image_features") or not hasattr(model, "get_text_features"):
            raise FocusError(f"{where}: {type(model).__name__} is not a dual encoder")
        if self.settings.get("check_processor", True):
            check_against_processor(self.transform, hf_load(AutoImageProcessor, preset, source, revision), where)
        self._check_text_length(model, where)
        side = self.text_settings().get("padding_side")
        if side:
            self.tokenizer.padding_side = side
        self.model = model
        config = model.config
        self.embed_dim = int(getattr(config, "projection_dim", None) or config.vision_config.hidden_size)
        self.logit_scale = float(model.logit_scale.detach().exp())
        bias = getattr(model, "logit_bias", None)
        self.logit_bias = float(bias.detach()) if bias is not None else None
        self.resolved_revision = resolved_revision(source, revision)
        if self.resolved_revision is None:
            self.weights_sha256 = folder_digest(source)

    def _check_text_length(self, model, where: str) -> None:
        spec = self.text_settings()
        limit = getattr(model.config.text_config, "max_position_embeddings", None)
        if spec.get("max_length") and limit and int(spec["max_length"]) > int(limit):
            raise FocusError(f"{where}: settings.text.max_length {spec['max_length']} exceeds the text tower's "
                             f"{limit} positions")

    def tokenize(self, texts: list[str]) -> dict:
        """Token tensors exactly as the text tower was trained (padding, length, mask as the preset declares)."""
        spec = self.text_settings()
        encoded = self.tokenizer(self.final_texts(texts), padding=spec.get("padding", "longest"),
                                 max_length=spec.get("max_length"), truncation=spec.get("truncation", True),
                                 return_tensors="pt")
        keep = {"input_ids"} | ({"attention_mask"} if spec.get("attention_mask", True) else set())
        return {k: v.to(self.device) for k, v in encoded.items() if k in keep}

    def embed_images(self, pixels):
        return _features(self.model.get_image_features(pixel_values=self._pixels(pixels))).float()

    def embed_texts(self, texts: list[str]):
        return _features(self.model.get_text_features(**self.tokenize(texts))).float()

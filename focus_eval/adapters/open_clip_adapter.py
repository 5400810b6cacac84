"""open_clip dual encoders loaded from a publisher weight file (EyeCLIP: OpenAI CLIP ViT-B/32 layout)."""

from __future__ import annotations

from focus_eval.adapters.base import DualEncoderAdapter
from focus_eval.adapters.checkpoints import resolve_weights
from focus_eval.errors import FocusError


class OpenCLIPAdapter(DualEncoderAdapter):
    """``open_clip.model.CLIP`` built from a named open_clip config (or an explicit one), weights loaded strictly.

    Text is tokenised with open_clip's CLIP BPE tokenizer, zero-padded to the tower's context length as trained.
    """

    settings_keys = frozenset({"open_clip_model", "open_clip_config", "weights_file", "checkpoint", "text"})

    def load(self) -> None:
        import open_clip

        preset = self.preset
        config = self.settings.get("open_clip_config")
        name = self.settings.get("open_clip_model")
        if config is None:
            config = open_clip.get_model_config(name) if name else None
            if config is None:
                raise FocusError(f"preset {preset.name!r}: settings.open_clip_model {name!r} is not an open_clip "
                                 f"model config")
        path = resolve_weights(preset)
        try:
            model = open_clip.model.CLIP(**config)
        except TypeError as exc:
            raise FocusError(f"preset {preset.name!r}: open_clip cannot build {config}: {exc}") from None
        self.load_checkpoint(model, path)
        context = int(config["text_cfg"].get("context_length", 77))
        spec = self.text_settings()
        if spec.get("max_length") and int(spec["max_length"]) != context:
            raise FocusError(f"preset {preset.name!r}: settings.text.max_length {spec['max_length']} differs from "
                             f"the text tower's context length {context}")
        self.tokenizer = open_clip.tokenizer.SimpleTokenizer(context_length=context)
        self.model = model
        self.embed_dim = int(config["embed_dim"])
        self.logit_scale = float(model.logit_scale.detach().exp())
        bias = getattr(model, "logit_bias", None)
        self.logit_bias = float(bias.detach()) if bias is not None else None

    def embed_images(self, pixels):
        return self.model.encode_image(self._pixels(pixels)).float()

    def embed_texts(self, texts: list[str]):
        tokens = self.tokenizer(self.final_texts(texts)).to(self.device)
        return self.model.encode_text(tokens).float()

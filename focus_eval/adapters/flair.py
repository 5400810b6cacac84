"""FLAIR: a torchvision ResNet-50 image tower and a Bio_ClinicalBERT text tower with linear projection heads.

The module layout mirrors the publisher's ``flair/modeling/model.py`` (``vision_model.model``,
``vision_model.projection_head_vision.projection``, ``text_model.model``,
``text_model.projection_head_text.projection``, ``logit_scale``) so its checkpoint keys load by name.
Each projection head L2-normalises its input, applies the bias-free Linear, and L2-normalises again.
"""

from __future__ import annotations

from pathlib import Path

from focus_eval.adapters.base import DualEncoderAdapter
from focus_eval.adapters.checkpoints import resolve_weights
from focus_eval.adapters.hub import check_reachable
from focus_eval.errors import FocusError

# FLAIR clamps its log temperature to [0, ln 100] before exponentiating, in training and inference alike.
LOGIT_SCALE_MAX = 4.6052


def build_model(text_config, proj_dim: int, resnet_layers: list[int]):
    """The FLAIR module tree with random weights (loaded from a checkpoint afterwards)."""
    import torch
    from torch import nn
    from torchvision.models.resnet import Bottleneck, ResNet
    from transformers import BertModel

    class Projection(nn.Module):
        def __init__(self, width: int):
            super().__init__()
            self.projection = nn.Linear(width, proj_dim, bias=False)

        def forward(self, x):
            x = x / x.norm(dim=-1, keepdim=True)
            x = self.projection(x)
            return x / x.norm(dim=-1, keepdim=True)

    class Vision(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = ResNet(Bottleneck, list(resnet_layers))
            self.model.fc = nn.Identity()
            self.projection_head_vision = Projection(512 * Bottleneck.expansion)

        def forward(self, pixels):
            return self.projection_head_vision(self.model(pixels))

    class Text(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = BertModel(text_config, add_pooling_layer=True)
            self.projection_head_text = Projection(text_config.hidden_size)

        def forward(self, input_ids, attention_mask):
            states = self.model(input_ids=input_ids, attention_mask=attention_mask,
                                output_hidden_states=True).hidden_states
            # Mean over tokens (padding included, as published) of layers 1, 2 and the last, then over layers.
            stacked = torch.stack([states[1], states[2], states[-1]])
            return self.projection_head_text(stacked.permute(1, 0, 2, 3).mean(2).mean(1))

    class FLAIR(nn.Module):
        def __init__(self):
            super().__init__()
            self.vision_model = Vision()
            self.text_model = Text()
            self.logit_scale = nn.Parameter(torch.zeros([]))

    return FLAIR()


class FLAIRAdapter(DualEncoderAdapter):
    """Images: the projected, normalised ResNet-50 feature. Texts: one forward per text (no padding), so an
    embedding never depends on which other prompts share its batch; each text is used exactly as written."""

    settings_keys = frozenset({"text_tower", "proj_dim", "resnet_layers", "weights_file", "checkpoint", "text"})

    @classmethod
    def validate(cls, preset) -> None:
        super().validate(preset)
        if ((preset.settings or {}).get("text") or {}).get("padding"):
            raise FocusError(f"preset {preset.name!r}: FLAIR averages over padding tokens, so texts are encoded one "
                             f"at a time; settings.text.padding must be false")
        if not ((preset.settings or {}).get("text_tower") or {}).get("source"):
            raise FocusError(f"preset {preset.name!r}: settings.text_tower.source (the BERT config and tokenizer) "
                             f"is required")

    def load(self) -> None:
        from transformers import AutoConfig, AutoTokenizer

        preset, s = self.preset, self.settings
        path = resolve_weights(preset)
        tower = dict(s["text_tower"])
        if not Path(str(tower["source"])).is_dir():
            check_reachable(str(tower["source"]), what=f"preset {preset.name!r}: text tower")
        try:
            config = AutoConfig.from_pretrained(tower["source"], revision=tower.get("revision"))
            self.tokenizer = AutoTokenizer.from_pretrained(tower["source"], revision=tower.get("revision"))
        except (OSError, ValueError) as exc:
            raise FocusError(f"preset {preset.name!r}: cannot load the text tower config/tokenizer "
                             f"{tower['source']} ({str(exc).splitlines()[0]})") from None
        if config.model_type != "bert":
            raise FocusError(f"preset {preset.name!r}: text tower {tower['source']} is {config.model_type}, not bert")
        model = build_model(config, int(s.get("proj_dim", 512)), list(s.get("resnet_layers", [3, 4, 6, 3])))
        self.load_checkpoint(model, path)
        self.model = model
        self.embed_dim = int(s.get("proj_dim", 512))
        self.logit_scale = float(model.logit_scale.detach().clamp(0, LOGIT_SCALE_MAX).exp())
        self.logit_bias = None

    def embed_images(self, pixels):
        return self.model.vision_model(self._pixels(pixels)).float()

    def embed_texts(self, texts: list[str]):
        import torch

        spec = self.text_settings()
        rows = []
        for text in self.final_texts(texts):
            encoded = self.tokenizer([text], truncation=spec.get("truncation", True),
                                     max_length=spec.get("max_length"), return_tensors="pt")
            rows.append(self.model.text_model(encoded["input_ids"].to(self.device),
                                              encoded["attention_mask"].to(self.device)))
        return torch.cat(rows).float()

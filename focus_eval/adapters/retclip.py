"""RET-CLIP: a CLIP ViT-B/16 image tower and a Chinese RoBERTa-wwm-ext-base text tower with per-eye projections.

The module layout (``visual``, ``bert``, ``text_projection[_left|_right]``, ``logit_scale[_left|_right]``,
``{global,left,right}_feature_mapping``) mirrors the publisher's ``RET_CLIP/clip/model.py`` so its checkpoint
keys load by name. Training pairs each eye's mapped image feature with that eye's text projection; a single
fundus photograph goes through one declared eye branch (``settings.eye_branch``) on both sides.
"""

from __future__ import annotations

from pathlib import Path

from focus_eval.adapters.base import DualEncoderAdapter
from focus_eval.adapters.checkpoints import resolve_weights
from focus_eval.adapters.hub import check_reachable
from focus_eval.errors import FocusError

BRANCHES = ("left", "right")


def build_model(vision: dict, text_config: dict, embed_dim: int):
    """The RET-CLIP module tree with random weights (loaded from a checkpoint afterwards)."""
    import torch
    from open_clip.transformer import QuickGELU, VisionTransformer
    from torch import nn
    from transformers import BertConfig, BertModel

    class RETCLIP(nn.Module):
        def __init__(self):
            super().__init__()
            width = int(vision["width"])
            self.visual = VisionTransformer(
                image_size=int(vision["image_size"]), patch_size=int(vision["patch_size"]), width=width,
                layers=int(vision["layers"]), heads=width // int(vision.get("head_width", 64)), mlp_ratio=4.0,
                output_dim=embed_dim, act_layer=QuickGELU)
            config = BertConfig(**text_config)
            self.bert = BertModel(config, add_pooling_layer=False)
            hidden = config.hidden_size
            for side in ("", "_left", "_right"):
                setattr(self, f"text_projection{side}",
                        nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, embed_dim)))
                setattr(self, f"logit_scale{side}", nn.Parameter(torch.ones([])))
            self.global_feature_mapping = nn.Linear(2 * embed_dim, embed_dim, bias=False)
            self.left_feature_mapping = nn.Linear(embed_dim, embed_dim, bias=False)
            self.right_feature_mapping = nn.Linear(embed_dim, embed_dim, bias=False)

    return RETCLIP()


class RETCLIPAdapter(DualEncoderAdapter):
    """Image: ``<eye>_feature_mapping(visual(x))``; text: ``text_projection_<eye>`` of BERT's [CLS] state."""

    settings_keys = frozenset({"vision", "text_config", "embed_dim", "eye_branch", "tokenizer", "weights_file",
                               "checkpoint", "text"})

    @classmethod
    def validate(cls, preset) -> None:
        super().validate(preset)
        s = preset.settings or {}
        if s.get("eye_branch") not in BRANCHES:
            raise FocusError(f"preset {preset.name!r}: settings.eye_branch must be one of {list(BRANCHES)}")
        for key in ("vision", "text_config", "embed_dim", "tokenizer"):
            if not s.get(key):
                raise FocusError(f"preset {preset.name!r}: settings.{key} is required")

    def load(self) -> None:
        from transformers import AutoTokenizer

        preset, s = self.preset, self.settings
        branch = s["eye_branch"]
        path = resolve_weights(preset)
        model = build_model(s["vision"], s["text_config"], int(s["embed_dim"]))
        self.load_checkpoint(model, path)
        self.tokenizer = _tokenizer(preset, s["tokenizer"], AutoTokenizer)
        if len(self.tokenizer) != model.bert.config.vocab_size:
            raise FocusError(f"preset {preset.name!r}: tokenizer has {len(self.tokenizer)} tokens, the text tower "
                             f"{model.bert.config.vocab_size}; not the vocabulary the model was trained with")
        self.model = model
        self.branch = branch
        self.embed_dim = int(s["embed_dim"])
        self.logit_scale = float(getattr(model, f"logit_scale_{branch}").detach().exp())
        self.logit_bias = None

    def embed_images(self, pixels):
        features = self.model.visual(self._pixels(pixels))
        return getattr(self.model, f"{self.branch}_feature_mapping")(features).float()

    def embed_texts(self, texts: list[str]):
        spec = self.text_settings()
        encoded = self.tokenizer(self.final_texts(texts), padding=spec.get("padding", "max_length"),
                                 max_length=spec.get("max_length"), truncation=spec.get("truncation", True),
                                 return_tensors="pt")
        ids = encoded["input_ids"].to(self.device)
        mask = ids.ne(self.tokenizer.pad_token_id).long()
        hidden = self.model.bert(input_ids=ids, attention_mask=mask).last_hidden_state
        return getattr(self.model, f"text_projection_{self.branch}")(hidden[:, 0]).float()


def _tokenizer(preset, spec: dict, auto):
    """The text tower's WordPiece tokenizer from a hub id (tokenizer files only) or a local folder."""
    source, revision = spec.get("source"), spec.get("revision")
    if not source:
        raise FocusError(f"preset {preset.name!r}: settings.tokenizer.source is required")
    if not Path(str(source)).is_dir():
        check_reachable(str(source), what=f"preset {preset.name!r}: tokenizer")
    try:
        return auto.from_pretrained(source, revision=revision)
    except (OSError, ValueError) as exc:
        raise FocusError(f"preset {preset.name!r}: cannot load the tokenizer {source}@{revision or 'main'} "
                         f"({str(exc).splitlines()[0]})") from None

"""Tiny untrained encoders of the real classes (ViT, CLIP), built offline in about a second for tests and the demo.

Each is a randomly initialised ``transformers`` model with a tiny config, saved with ``save_pretrained`` next
to its real processor classes (and, for CLIP, a BPE tokenizer trained on the spot), so presets reach it through
``source: tiny:<name>`` and the very same ``from_pretrained`` path as a hub model.
"""

from __future__ import annotations

import json
from pathlib import Path

from focus_eval.tiny import TinyBuilder

# Bump when a builder changes what it writes, so cached copies are rebuilt.
BUILD_VERSION = 1
SEED = 20240611

CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]

# Words the tiny tokenizers learn: zero-shot prompt vocabulary, so prompts split into a handful of pieces.
CORPUS = [
    "A fundus photograph of a healthy retina without diabetic retinopathy.",
    "A fundus photograph of a retina with diabetic retinopathy.",
    "A fundus photograph showing no referable diabetic retinopathy.",
    "A fundus photograph showing referable diabetic retinopathy.",
    "A fundus photograph of a healthy eye without glaucoma.",
    "A fundus photograph showing signs of glaucoma.",
    "optic disc cup macula vessels haemorrhage exudate microaneurysm normal abnormal photo image",
]


def train_bpe_vocab(vocab_size: int = 300, suffix: str = "</w>", special: list[str] | None = None):
    """(vocab, merges) of a lowercase byte-level BPE trained on :data:`CORPUS` with the ``tokenizers`` library."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(end_of_word_suffix=suffix))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Whitespace(), pre_tokenizers.ByteLevel(add_prefix_space=False)])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(special or []), end_of_word_suffix=suffix,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(CORPUS * 4, trainer=trainer)
    model = json.loads(tokenizer.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return model["vocab"], merges


def build_vit(folder: Path, seed: int | None = None) -> None:
    """A random 2-layer ViTModel with its image processor, saved as a hub checkpoint would be (torch seeded
    with ``seed`` first when one is given, else drawn from the current random state)."""
    import torch
    from transformers import ViTConfig, ViTImageProcessor, ViTModel

    if seed is not None:
        torch.manual_seed(seed)
    config = ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                       image_size=224, patch_size=32)
    # Saved with its (random) pooler, like hub ViT checkpoints; the preset loads it without one.
    ViTModel(config, add_pooling_layer=True).save_pretrained(folder)
    ViTImageProcessor(size={"height": 224, "width": 224}, resample=2, image_mean=[0.5] * 3,
                      image_std=[0.5] * 3).save_pretrained(folder)


def _build_clip(folder: Path) -> None:
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer

    special = ["<|startoftext|>", "<|endoftext|>"]
    vocab, merges = train_bpe_vocab(special=special)
    tokenizer = CLIPTokenizer(vocab=vocab, merges=merges)
    image_processor = CLIPImageProcessor(size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224},
                                         resample=3, do_center_crop=True, image_mean=CLIP_MEAN, image_std=CLIP_STD)
    ids = dict(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
               pad_token_id=tokenizer.pad_token_id)
    config = CLIPConfig(
        text_config=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                         vocab_size=len(tokenizer), max_position_embeddings=77, **ids),
        vision_config=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                           image_size=224, patch_size=32),
        projection_dim=16)
    CLIPModel(config).save_pretrained(folder)
    CLIPProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(folder)


TINY_VIT = TinyBuilder(build_vit, seed=SEED, version=BUILD_VERSION, family="encoder")
TINY_CLIP = TinyBuilder(_build_clip, seed=SEED, version=BUILD_VERSION, family="encoder")

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
BUILD_VERSION = 2
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


def byte_symbols() -> list[str]:
    """The 256 printable stand-ins byte-level BPE tokenizers (GPT-2, CLIP) use for the bytes, in byte order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("\u00a1"), ord("\u00ac") + 1),
                 *range(ord("\u00ae"), ord("\u00ff") + 1)]
    extra = iter(range(256, 512))
    return [chr(b) if b in printable else chr(next(extra)) for b in range(256)]


def train_bpe_vocab(merges_wanted: int = 80, suffix: str = "</w>", special: list[str] | None = None):
    """(vocab, merges) of a lowercase byte-level BPE learned on :data:`CORPUS`: every byte symbol (plain and
    word-final) plus ``merges_wanted`` merges, the most frequent pair first and ties broken by the pair itself,
    so two builds always give the same tokenizer (a hash-ordered trainer does not)."""
    import re
    from collections import Counter

    symbols = byte_symbols()
    vocab = [*(special or []), *symbols, *(c + suffix for c in symbols)]
    words: Counter = Counter()
    for line in CORPUS:
        for word in re.findall(r"[a-z]+|[0-9]|[^\sa-z0-9]+", line.lower()):
            pieces = [symbols[b] for b in word.encode("utf-8")]
            pieces[-1] += suffix
            words[tuple(pieces)] += 1
    merges = []
    for _ in range(merges_wanted):
        pairs: Counter = Counter()
        for word, count in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += count
        if not pairs:
            break
        best = min(pairs, key=lambda pair: (-pairs[pair], pair))
        merges.append(best)
        vocab.append(best[0] + best[1])
        words = Counter({_merge(word, best): count for word, count in words.items()})
    return {token: i for i, token in enumerate(dict.fromkeys(vocab))}, merges


def _merge(word: tuple, pair: tuple) -> tuple:
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(word[i] + word[i + 1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


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

"""Builders for tiny encoders of the real architecture classes, saved in each publisher's format for adapter tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]
WORDS = ["a", "fundus", "photograph", "of", "healthy", "retina", "without", "with", "diabetic", "retinopathy",
         "showing", "no", "referable", "eye", "glaucoma", "signs", ".", "normal"]


def image(seed: int = 0, size=(320, 240)) -> Image.Image:
    rng = np.random.RandomState(seed)
    return Image.fromarray((rng.rand(size[1], size[0], 3) * 255).astype("uint8"), "RGB")


def pixels(adapter, seeds=(0, 1)):
    import torch

    return torch.stack([adapter.transform(image(s)) for s in seeds])


def save_vit(folder: Path, seed: int = 0) -> Path:
    from focus_eval.tiny.encoders import build_vit

    build_vit(folder, seed=seed)
    return folder


def save_dinov2(folder: Path) -> Path:
    import torch
    from transformers import BitImageProcessor, Dinov2Config, Dinov2Model

    torch.manual_seed(1)
    config = Dinov2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, image_size=224, patch_size=32)
    Dinov2Model(config).save_pretrained(folder)
    BitImageProcessor(size={"shortest_edge": 256}, crop_size={"height": 224, "width": 224}, do_center_crop=True,
                      resample=3, image_mean=IMAGENET_MEAN, image_std=IMAGENET_STD,
                      do_convert_rgb=True).save_pretrained(folder)
    return folder


def save_dinov3(folder: Path) -> Path:
    import torch
    from transformers import DINOv3ViTConfig, DINOv3ViTImageProcessor, DINOv3ViTModel

    torch.manual_seed(2)
    config = DINOv3ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                             image_size=224, patch_size=32, num_register_tokens=4)
    DINOv3ViTModel(config).save_pretrained(folder)
    DINOv3ViTImageProcessor(size={"height": 224, "width": 224}, resample=2, image_mean=IMAGENET_MEAN,
                            image_std=IMAGENET_STD).save_pretrained(folder)
    return folder


def fast_tokenizer(pad: str = "<pad>", eos: str = "<eos>"):
    """A lowercase BPE tokenizer trained on the spot, in transformers' generic fast-tokenizer class."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=120, special_tokens=[pad, eos, "<unk>"], show_progress=False)
    tok.train_from_iterator([" ".join(WORDS)] * 8, trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(single=f"$A {eos}", special_tokens=[(eos, tok.token_to_id(eos))])
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=pad, eos_token=eos, unk_token="<unk>")


def save_siglip(folder: Path) -> Path:
    import torch
    from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel

    tokenizer = fast_tokenizer()
    torch.manual_seed(3)
    config = SiglipConfig(
        text_config=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                         vocab_size=len(tokenizer), max_position_embeddings=64,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id),
        vision_config=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                           image_size=224, patch_size=32))
    SiglipModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    SiglipImageProcessor(size={"height": 224, "width": 224}, resample=2, image_mean=[0.5] * 3,
                         image_std=[0.5] * 3).save_pretrained(folder)
    return folder


def save_bert_tokenizer(folder: Path, extra: list[str] = ()) -> Path:
    """A WordPiece vocabulary in BERT's format ([PAD] first, as in the Chinese RoBERTa and ClinicalBERT files)."""
    from transformers import BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *extra]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    BertTokenizer(str(folder / "vocab.txt"), do_lower_case=True).save_pretrained(folder)
    return folder


def tiny_bert_config(vocab_size: int) -> dict:
    return dict(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                intermediate_size=64, max_position_embeddings=128, type_vocab_size=2, hidden_act="gelu",
                layer_norm_eps=1e-12)

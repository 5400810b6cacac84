"""Zero-shot scoring for dual encoders: cosine similarity to the negative and positive prompt embeddings
(mean over each prompt list), scaled by the model's own logit scale and bias, two-way softmax."""

from __future__ import annotations

import numpy as np


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def zero_shot_scores(image_vectors: np.ndarray, negative: np.ndarray, positive: np.ndarray, *,
                     scale: float, bias: float | None = None) -> np.ndarray:
    """P(positive) per image. ``negative``/``positive`` are [k, D] text embeddings of each prompt list."""
    img = _unit(np.asarray(image_vectors, dtype=np.float64))
    cos_neg = (img @ _unit(np.asarray(negative, dtype=np.float64)).T).mean(axis=1)
    cos_pos = (img @ _unit(np.asarray(positive, dtype=np.float64)).T).mean(axis=1)
    b = 0.0 if bias is None else float(bias)
    logits = np.stack([scale * cos_neg + b, scale * cos_pos + b], axis=1)
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return p[:, 1] / p.sum(axis=1)

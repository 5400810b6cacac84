"""Zero-shot scoring for dual encoders: cosine similarity to the negative and positive prompt embeddings
(mean over each prompt list), scaled by the model's own logit scale and bias, two-way softmax."""

from __future__ import annotations

import numpy as np

from focus_eval.errors import FocusError
from focus_eval.runner.methods.base import EmbeddingMethod, RunContext
from focus_eval.runner.units import Unit


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


class ZeroShot(EmbeddingMethod):
    """``zero_shot``: the task's negative and positive prompt lists against the image embeddings."""

    name = "zero_shot"
    families = ("vlm",)
    hard_label = "pred = argmax over the negative and positive prompts"

    def predict(self, context: RunContext, unit: Unit, x_test: np.ndarray, memo: dict):
        task = unit.task
        prompts = task.zero_shot or {}
        if not prompts.get("negative") or not prompts.get("positive"):
            raise FocusError(f"task {task.name} defines no zero_shot prompts")
        adapter = context.adapter()
        embedded = [self.embed_prompts(adapter, tuple(prompts[side]), memo) for side in ("negative", "positive")]
        if context.options.zs_scale is not None:
            scale, bias = float(context.options.zs_scale), None
        else:
            scale, bias = float(adapter.logit_scale), adapter.logit_bias
        extra = {"zs_scale": scale, "zs_bias": bias, "zs_convention": "compat" if context.options.zs_scale else "model"}
        probs = zero_shot_scores(x_test, embedded[0], embedded[1], scale=scale, bias=bias)
        return probs, (probs >= 0.5).astype(int), extra

    @staticmethod
    def embed_prompts(adapter, prompts: tuple[str, ...], memo: dict) -> np.ndarray:
        if prompts not in memo:
            import torch

            with torch.inference_mode():
                memo[prompts] = adapter.embed_texts(list(prompts)).float().cpu().numpy()
        return memo[prompts]

"""Zero-shot scoring for dual encoders: cosine similarity to the negative and positive prompt embeddings
(mean over each prompt list), scaled by the model's own logit scale and bias, two-way softmax. Multi-class
tasks: the same over one prompt list per class, a K-way softmax; the class with the largest probability, or
for a multi-answer task every class at or above 1/K (above the uniform share)."""

from __future__ import annotations

import numpy as np

from focus_eval.errors import FocusError
from focus_eval.runner.methods.base import EmbeddingMethod, RunContext
from focus_eval.runner.units import Unit


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def class_scores(image_vectors: np.ndarray, prompts: list[np.ndarray], *, scale: float,
                 bias: float | None = None) -> np.ndarray:
    """Class probabilities per image (rows x classes); ``prompts[k]`` are the [m, D] text embeddings of class k."""
    img = _unit(np.asarray(image_vectors, dtype=np.float64))
    b = 0.0 if bias is None else float(bias)
    logits = np.stack([scale * (img @ _unit(np.asarray(p, dtype=np.float64)).T).mean(axis=1) + b for p in prompts],
                      axis=1)
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return p / p.sum(axis=1, keepdims=True)


def zero_shot_scores(image_vectors: np.ndarray, negative: np.ndarray, positive: np.ndarray, *,
                     scale: float, bias: float | None = None) -> np.ndarray:
    """P(positive) per image. ``negative``/``positive`` are [k, D] text embeddings of each prompt list."""
    return class_scores(image_vectors, [negative, positive], scale=scale, bias=bias)[:, 1]


class ZeroShot(EmbeddingMethod):
    """``zero_shot``: the task's negative and positive prompt lists against the image embeddings."""

    name = "zero_shot"
    families = ("vlm",)
    hard_label = "pred = argmax over the negative and positive prompts"
    output_types = ("binary", "multiclass", "multilabel", "multiple_choice")

    def predict(self, context: RunContext, unit: Unit, x_test: np.ndarray, memo: dict):
        task = unit.task
        prompts = task.zero_shot or {}
        sides = ("negative", "positive") if task.binary else tuple(task.class_names)
        if not all(prompts.get(side) for side in sides):
            raise FocusError(f"task {task.name} defines no zero_shot prompts")
        adapter = context.adapter()
        embedded = [self.embed_prompts(adapter, tuple(prompts[side]), memo) for side in sides]
        if context.options.zs_scale is not None:
            scale, bias = float(context.options.zs_scale), None
        else:
            scale, bias = float(adapter.logit_scale), adapter.logit_bias
        extra = {"zs_scale": scale, "zs_bias": bias, "zs_convention": "compat" if context.options.zs_scale else "model"}
        probs = class_scores(x_test, embedded, scale=scale, bias=bias)
        if task.binary:
            return probs[:, 1], (probs[:, 1] >= 0.5).astype(int), extra
        if task.multilabel:
            return probs, (probs >= 1.0 / task.n_classes).astype(int), {**extra, "class_rule": "every class at P >= 1/K"}
        return probs, probs.argmax(axis=1), {**extra, "class_rule": "argmax over the class prompts"}

    @staticmethod
    def embed_prompts(adapter, prompts: tuple[str, ...], memo: dict) -> np.ndarray:
        if prompts not in memo:
            import torch

            with torch.inference_mode():
                memo[prompts] = adapter.embed_texts(list(prompts)).float().cpu().numpy()
        return memo[prompts]

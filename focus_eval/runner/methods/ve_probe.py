"""The ``ve_probe`` method (FunBench's E-mode I): the linear probe of ``linear_probe`` on a multimodal LLM's own
vision tower, its output before the projector pooled per image as the preset's ``vision_pooling`` says
(``focus_eval.adapters.mllm_vision``). The runner embeds and caches the images as for any encoder; the probe and
its C selection are ``linear_probe``'s, and the results line also names the tower and the pooling."""

from __future__ import annotations

import numpy as np

from focus_eval.runner.methods.base import RunContext
from focus_eval.runner.methods.linear_probe import LinearProbe
from focus_eval.runner.units import Unit


class VisionEncoderProbe(LinearProbe):
    """``ve_probe``: a linear probe on the MLLM's vision-tower features (train split, C chosen on val)."""

    name = "ve_probe"
    families = ("mllm",)
    on_request = True

    def predict_splits(self, context: RunContext, unit: Unit, xs: dict[str, np.ndarray], memo: dict):
        predicted, extra = super().predict_splits(context, unit, xs, memo)
        encoder = context.adapter().image_encoder()  # mllm_interface.VisionFeatures
        return predicted, {**extra, "vision_tower": encoder.architecture, "vision_pooling": encoder.pooling}

"""The ``ve_probe`` method (FunBench's E-mode I): the linear probe of ``linear_probe`` on a multimodal LLM's own
vision tower, its output before the projector pooled per image as the preset's ``vision_pooling`` says
(``focus_eval.adapters.mllm_vision``). The runner embeds and caches the images as for any encoder; the probe,
its C selection and its results-line notes are ``linear_probe``'s."""

from __future__ import annotations

from focus_eval.runner.methods.linear_probe import LinearProbe


class VisionEncoderProbe(LinearProbe):
    """``ve_probe``: a linear probe on the MLLM's vision-tower features (train split, C chosen on val)."""

    name = "ve_probe"
    families = ("mllm",)
    on_request = True

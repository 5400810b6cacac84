"""The adapters shipped with focus-eval (name -> implementation); importing this module imports no model code."""

from focus_eval.adapters import register

register("hf_mllm", "focus_eval.adapters.mllm:HFMLLMAdapter")
register("hf_vision", "focus_eval.adapters.hf_vision:HFVisionAdapter")
register("hf_clip", "focus_eval.adapters.hf_clip:HFDualEncoderAdapter")
register("timm_vision", "focus_eval.adapters.timm_vision:TimmVisionAdapter")
register("open_clip", "focus_eval.adapters.open_clip_adapter:OpenCLIPAdapter")
register("retclip", "focus_eval.adapters.retclip:RETCLIPAdapter")
register("flair", "focus_eval.adapters.flair:FLAIRAdapter")

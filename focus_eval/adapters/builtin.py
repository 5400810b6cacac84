"""The adapters shipped with focus-eval (name -> lazy "module:Class" target); imports nothing."""

BUILTIN_ADAPTERS = {
    "hf_mllm": "focus_eval.adapters.mllm:HFMLLMAdapter",
    "hf_vision": "focus_eval.adapters.hf_vision:HFVisionAdapter",
    "hf_clip": "focus_eval.adapters.hf_clip:HFDualEncoderAdapter",
    "timm_vision": "focus_eval.adapters.timm_vision:TimmVisionAdapter",
    "open_clip": "focus_eval.adapters.open_clip_adapter:OpenCLIPAdapter",
    "retclip": "focus_eval.adapters.retclip:RETCLIPAdapter",
    "flair": "focus_eval.adapters.flair:FLAIRAdapter",
    "openai_chat": "focus_eval.adapters.openai_chat:OpenAIChatAdapter",
}

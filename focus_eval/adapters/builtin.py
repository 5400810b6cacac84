"""The adapters shipped with focus-eval (name -> implementation); importing this module imports no model code."""

from focus_eval.adapters import register

# Filled by each adapter module's author: register("hf_vision", "focus_eval.adapters.hf_vision:HFVisionAdapter")

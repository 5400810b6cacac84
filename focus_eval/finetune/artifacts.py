"""The adapter folder's files and training record, defined in ``focus_eval.adapters.lora`` (the layer that
both evaluation runs and ``focus-eval sft`` import); re-exported here for existing imports."""

from focus_eval.adapters.lora import (  # noqa: F401
    CHECKPOINTS_DIR, INFO_FILE, INFO_FORMAT, LOG_FILE, adapter_training_fields, read_adapter_info)

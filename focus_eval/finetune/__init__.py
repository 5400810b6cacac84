"""LoRA fine-tuning of multimodal LLMs (``focus-eval sft``) and fine-tuned vs base comparisons (``compare``)."""

"""The run options ``focus-eval sft`` shares with runs, where they mean the same thing: one declaration
(``focus_eval.options``) for the command line and ``SFTConfig``, with what differs for training. A light
module: the command line reads it without importing the trainer."""

from __future__ import annotations

from typing import Any

from focus_eval.options import shared

# run option -> what differs for sft (its default or help); everything else is the run option's declaration
SHARED: dict[str, dict[str, Any]] = {
    "data_root": {}, "model_args": {}, "include_path": {},
    "seed": {"default": 42, "help": "seed of the adapter's initialisation, the data order and dropout"},
    "device": {}, "num_workers": {}, "use_prepared": {},
    "trust_remote_code": {"help": "allow presets that declare remote code"}, "progress": {},
}


def sft_field(name: str) -> Any:
    """SFTConfig's field for the shared run option ``name``."""
    return shared(name, **SHARED[name])

"""What ``focus-eval sft`` writes beside a LoRA adapter, and how runs read it back.

    <adapter dir>/adapter_config.json, adapter_model.safetensors   the peft adapter (save_pretrained)
    <adapter dir>/focus_eval_adapter.json                          training record, written last (= finished)
    <adapter dir>/training_log.jsonl                               one line per logged step / validation
    <adapter dir>/checkpoints/step-NNNNNN/                         the latest checkpoint while training runs
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from focus_eval.errors import FocusError

INFO_FILE = "focus_eval_adapter.json"
LOG_FILE = "training_log.jsonl"
CHECKPOINTS_DIR = "checkpoints"
INFO_FORMAT = 1


def read_adapter_info(adapter_dir: str | Path) -> dict[str, Any] | None:
    """The training record of an adapter folder; None for an adapter trained elsewhere (no record)."""
    path = Path(adapter_dir).expanduser() / INFO_FILE
    if not path.is_file():
        return None
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise FocusError(f"{path}: cannot read the adapter's training record: {exc}") from None
    if not isinstance(info, dict):
        raise FocusError(f"{path}: the adapter's training record is not a JSON object")
    return info


def adapter_training_fields(adapter_dir: str | Path) -> dict[str, Any]:
    """The fields a run adds to the meta (and so to the results line's extra) of an adapter evaluation; the
    training time tells a resumed run that the adapter in a folder was trained again."""
    info = read_adapter_info(adapter_dir) or {}
    return {"adapter_train_dataset": info.get("train_dataset"), "adapter_train_target": info.get("train_target"),
            "adapter_trained_at": info.get("created")}

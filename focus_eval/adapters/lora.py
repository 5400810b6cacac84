"""LoRA adapters: loading a peft adapter folder onto a base model, and the training record that
``focus-eval sft`` writes beside it (read back by evaluation runs).

    <adapter dir>/adapter_config.json, adapter_model.safetensors   the peft adapter (save_pretrained)
    <adapter dir>/focus_eval_adapter.json                          training record, written last (= finished)
    <adapter dir>/training_log.jsonl                               one line per logged step / validation
    <adapter dir>/checkpoints/step-NNNNNN/                         the latest checkpoint while training runs
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from focus_eval.digests import file_sha256
from focus_eval.errors import FocusError

INFO_FILE = "focus_eval_adapter.json"
LOG_FILE = "training_log.jsonl"
CHECKPOINTS_DIR = "checkpoints"
INFO_FORMAT = 1
WEIGHT_FILES = ("adapter_model.safetensors", "adapter_model.bin")


# ----- the training record


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


# ----- loading


def model_basename(name_or_path: str) -> str:
    """``google/medgemma-4b-it``, ``/models/medgemma-4b-it`` and a Hub cache snapshot of it all give
    ``medgemma-4b-it``."""
    parts = [p for p in str(name_or_path).replace("\\", "/").split("/") if p]
    for i, part in enumerate(parts):
        if part.startswith("models--") and i + 1 < len(parts) and parts[i + 1] == "snapshots":
            return part.split("--")[-1].lower()
    return parts[-1].lower() if parts else ""


def _check_adapter_base(path: Path, base: str, where: str) -> None:
    """An adapter trained on another model can still fit by shape (layers of the same width), so the base
    model named in adapter_config.json must be the one being evaluated."""
    try:
        config = json.loads((path / "adapter_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FocusError(f"{where}: unreadable adapter_config.json: {exc}") from exc
    if not isinstance(config, dict):
        raise FocusError(f"{where}: adapter_config.json is not a JSON object")
    trained_on = config.get("base_model_name_or_path")
    if trained_on and model_basename(trained_on) != model_basename(base):
        raise FocusError(f"{where}: trained on {trained_on!r}, but the model being evaluated is {base!r}")


def _adapter_weights(path: Path, where: str) -> Path:
    """The adapter folder's weight file, after checking that the folder is one peft wrote."""
    if not path.is_dir():
        raise FocusError(f"{where}: not a folder")
    if not (path / "adapter_config.json").is_file():
        raise FocusError(f"{where}: no adapter_config.json (expected a folder written by peft's save_pretrained)")
    weights = next((path / n for n in WEIGHT_FILES if (path / n).is_file()), None)
    if weights is None:
        raise FocusError(f"{where}: no {' or '.join(WEIGHT_FILES)}")
    return weights


def load_lora(model, adapter_dir: str | Path, base: str):
    """Apply the peft LoRA adapter in ``adapter_dir`` to ``model`` and merge it; returns (model, id, path).

    Every tensor in the adapter file must find its place in the model, and the adapter must change weights:
    an adapter that fails to load is an error, never a silent evaluation of the base model.
    """
    path = Path(adapter_dir).expanduser().resolve()
    where = f"adapter {path}"
    weights = _adapter_weights(path, where)
    _check_adapter_base(path, base, where)
    try:
        from peft import PeftModel
        from peft.utils import get_peft_model_state_dict, load_peft_weights

        peft_model = PeftModel.from_pretrained(model, str(path), is_trainable=False)
        stored = set(load_peft_weights(str(path), device="cpu"))
        placed = set(get_peft_model_state_dict(peft_model))
    except Exception as exc:  # peft raises many types (ValueError, KeyError, RuntimeError, safetensors errors)
        raise FocusError(f"{where}: cannot be loaded onto {base}: {type(exc).__name__}: {exc}") from exc
    unplaced, missing = stored - placed, placed - stored
    if unplaced or missing:
        detail = ", ".join(sorted(unplaced or missing)[:3])
        raise FocusError(f"{where}: adapter weights do not match {base} "
                         f"({len(unplaced)} unused, {len(missing)} missing; e.g. {detail})")
    return peft_model.merge_and_unload(), f"{path.name}@{file_sha256(weights)[:12]}", str(path)

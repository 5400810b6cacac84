"""Training checkpoints: adapter weights, optimiser and schedule state, and every process's random state,
written atomically so that an interrupted run resumes from the last complete checkpoint."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from focus_eval.adapters.lora import CHECKPOINTS_DIR
from focus_eval.errors import FocusError

STATE_FILE = "state.json"  # written last: a folder with it is complete
WEIGHTS_FILE = "adapter_weights.safetensors"
TRAINER_FILE = "trainer.pt"


def checkpoints_dir(output: Path) -> Path:
    return Path(output) / CHECKPOINTS_DIR


def latest_checkpoint(output: Path) -> Path | None:
    """The complete checkpoint with the highest step, or None."""
    folder = checkpoints_dir(output)
    done = [p for p in folder.glob("step-*") if (p / STATE_FILE).is_file()] if folder.is_dir() else []
    return max(done, key=lambda p: int(p.name.split("-")[1]), default=None)


def read_state(folder: Path) -> dict[str, Any]:
    try:
        return json.loads((Path(folder) / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise FocusError(f"checkpoint {folder}: cannot read {STATE_FILE}: {exc}") from None


def rng_state() -> dict[str, Any]:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])


def save_checkpoint(accelerator, output: Path, step: int, peft_model, optimizer, scheduler,
                    state: dict[str, Any]) -> Path:
    """Write checkpoint ``step`` (every process calls this); older checkpoints are removed afterwards."""
    from peft.utils import get_peft_model_state_dict
    from safetensors.torch import save_file

    final = checkpoints_dir(output) / f"step-{step:06d}"
    staging = checkpoints_dir(output) / f".step-{step:06d}.partial"
    if accelerator.is_main_process:
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
    accelerator.wait_for_everyone()
    torch.save(rng_state(), staging / f"rng-{accelerator.process_index}.pt")
    if accelerator.is_main_process:
        weights = {k: v.detach().cpu().contiguous() for k, v in get_peft_model_state_dict(peft_model).items()}
        save_file(weights, str(staging / WEIGHTS_FILE))
        torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()},
                   staging / TRAINER_FILE)
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        (staging / STATE_FILE).write_text(json.dumps(dict(state, step=step), indent=1) + "\n", encoding="utf-8")
        shutil.rmtree(final, ignore_errors=True)
        staging.rename(final)
        for old in checkpoints_dir(output).glob("step-*"):
            if old != final:
                shutil.rmtree(old, ignore_errors=True)
    accelerator.wait_for_everyone()
    return final


def load_checkpoint(accelerator, folder: Path, peft_model, optimizer, scheduler) -> dict[str, Any]:
    """Restore a checkpoint into the model, optimiser, schedule and this process's random state."""
    from peft.utils import set_peft_model_state_dict
    from safetensors.torch import load_file

    state = read_state(folder)
    weights = load_file(str(folder / WEIGHTS_FILE), device="cpu")
    result = set_peft_model_state_dict(peft_model, weights)
    unexpected = list(getattr(result, "unexpected_keys", []) or [])
    if unexpected:
        raise FocusError(f"checkpoint {folder}: {len(unexpected)} adapter tensors do not fit the model "
                         f"(e.g. {unexpected[0]})")
    trainer = torch.load(folder / TRAINER_FILE, map_location="cpu", weights_only=False)
    optimizer.load_state_dict(trainer["optimizer"])
    scheduler.load_state_dict(trainer["scheduler"])
    rng = folder / f"rng-{accelerator.process_index}.pt"
    if not rng.is_file():
        raise FocusError(f"checkpoint {folder} was written by fewer processes (no {rng.name}); resume with the "
                         f"same number of processes, or start again with --no-resume")
    set_rng_state(torch.load(rng, weights_only=False))
    return state

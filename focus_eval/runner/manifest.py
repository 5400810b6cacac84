"""The run manifest: what ran, with which code, weights, tasks, options and machine, and how long it took."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from focus_eval.redact import redact

_PACKAGES = ("focus-eval", "torch", "torchvision", "transformers", "timm", "open_clip_torch", "accelerate", "peft",
             "numpy", "scikit-learn", "pillow")


def versions() -> dict[str, str | None]:
    out = {"python": platform.python_version()}
    for name in _PACKAGES:
        if name == "focus-eval":  # the code that runs, whatever copy of it is installed
            from focus_eval.version import __version__

            out[name] = __version__
            continue
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_commit() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True,
                              timeout=5, check=True).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def environment(state) -> dict:
    import torch

    env = {"platform": platform.platform(), "device": str(state.device), "num_processes": state.num_processes,
           "cuda": torch.version.cuda, "hf_hub_offline": os.environ.get("HF_HUB_OFFLINE")}
    if torch.cuda.is_available():
        env["gpu"] = torch.cuda.get_device_name(0)
        env["gpu_count"] = torch.cuda.device_count()
    return env


def build_manifest(runner) -> dict:
    from focus_eval.options import recorded

    o = runner.options
    adapter = runner.adapter
    return {
        "argv": [redact(arg) for arg in o.argv or sys.argv],  # a credential typed on the command line stays out
        "started": runner.started.isoformat(timespec="seconds"),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "versions": versions(),
        "git_commit": git_commit(),
        "preset": runner.preset.to_dict(),
        "preset_hash": runner.preset.hash,
        "adapter": runner.adapter_id,
        "encoder_cache_key": getattr(adapter, "cache_key", None) if adapter is not None else None,
        "tasks": {t.name: {"hash": t.hash, "version": t.metadata.get("version"), "path": str(t.path)}
                  for t in runner.tasks},
        "options": recorded(o),  # as a --config file reads them
        "environment": environment(runner.state),
        "units": {"finished": runner.report.finished, "skipped_as_done": runner.report.skipped,
                  "failed": {stem: redact(reason) for stem, reason in runner.report.failed.items()},
                  "skipped_by_task": runner.report.skipped_by_task},
        "timings_s": runner.timings,
    }

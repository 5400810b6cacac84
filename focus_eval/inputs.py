"""What a run needs in place before it starts, checked once so that a mistake is one message and no output
folder: a data root, a GPU when one is asked for, the user's preset folders and dataset cards."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

from focus_eval.errors import FocusError

NO_DATA_ROOT = ("no data root: pass --data-root DIR (or set FOCUS_DATA) - the folder holding one sub-folder per "
                "dataset (user datasets may also be given with --dataset-path NAME=DIR); nothing was run")


def _as_list(value: Any) -> list[str]:
    if not value:
        return []
    return [str(value)] if isinstance(value, (str, os.PathLike)) else [str(v) for v in value]


def prepare_run(model: str, options: dict[str, Any]) -> str:
    """Check and complete run options in place; consumes ``models_path`` and ``dataset_path`` (registering the
    dataset cards) and returns ``model`` as the runner's preset loader reads it."""
    from focus_eval.data.cards import register_manifests
    from focus_eval.data.registry import DATA_ROOT_ENV
    from focus_eval.presets import resolve_model

    models_path = _as_list(options.pop("models_path", None))
    dataset_path = dataset_paths(_as_list(options.pop("dataset_path", None)))
    data_root = options.get("data_root") or os.environ.get(DATA_ROOT_ENV)
    if not data_root:
        raise FocusError(NO_DATA_ROOT)
    options["data_root"] = Path(data_root).expanduser().resolve()
    check_device(options.get("device"))
    register_manifests(options["data_root"], dataset_path)
    return resolve_model(model, models_path)


def check_device(device: str | None) -> None:
    """A GPU asked for must be visible: a run never falls back to the CPU silently."""
    if not device or not str(device).startswith("cuda"):
        return
    import torch

    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    index = str(device).partition(":")[2]
    if not visible or (index.isdigit() and int(index) >= visible):
        shown = os.environ.get("CUDA_VISIBLE_DEVICES")
        raise FocusError(f"--device {device}: {visible} GPU(s) visible to torch"
                         f"{f' (CUDA_VISIBLE_DEVICES={shown})' if shown is not None else ''}; "
                         f"pass --device cpu to run on the CPU, or omit --device to use a GPU when there is one")


def dataset_paths(values: Iterable[str] = ()) -> list[str]:
    """``--dataset-path`` values, then those in ``$FOCUS_DATASETS_PATH`` (separated like PATH)."""
    env = [v for v in os.environ.get("FOCUS_DATASETS_PATH", "").split(os.pathsep) if v.strip()]
    return [*values, *env]


def entry_point_folders(group: str) -> list[Path]:
    """Folders installed packages contribute to ``group`` (``focus_eval.models``: preset files,
    ``focus_eval.tasks``: task files): each entry point names a path, e.g. ``my_pkg:MODELS_DIR``."""
    from importlib.metadata import entry_points

    folders = []
    for ep in entry_points(group=group):
        try:
            folder = Path(str(ep.load()))
        except (ImportError, AttributeError) as exc:
            raise FocusError(f"entry point {ep.name} = {ep.value} ({group}): cannot import it: {exc}") from None
        if not folder.is_dir():
            raise FocusError(f"entry point {ep.name} = {ep.value} ({group}) names {folder}, which is not a folder")
        folders.append(folder.resolve())
    return folders

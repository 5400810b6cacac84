"""Tiny untrained models of the real classes, built offline in seconds for tests and the demo: one registry of
every ``tiny:<name>`` source, one way to build a model into a folder, and one cached build per name."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from focus_eval.registry import Registry

MARKER = "focus_tiny.json"  # written last into a built folder: its name, build version and seed


@dataclass(frozen=True)
class TinyBuilder:
    """How one tiny model is written: ``build(folder)`` runs with torch seeded to ``seed``; ``version`` is
    bumped whenever ``build`` changes what it writes, so cached copies are rebuilt."""

    build: Callable[[Path], None]
    seed: int
    version: int
    family: str  # "encoder" or "mllm"
    # The marker's field name for the version: kept per family so that folders already in a cache stay current
    # (and, since a local folder's digest covers its JSON files, so do the encoders' cache keys).
    version_key: str = "version"

    def write(self, name: str, folder: Path | str, seed: int | None = None) -> Path:
        """Write tiny model ``name`` into ``folder`` (created); the same seed gives the same weights."""
        import torch
        from transformers.utils import logging as hf_logging

        seed = self.seed if seed is None else int(seed)
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        bars_were_on = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        # fork_rng keeps the caller's random state untouched by the weight initialisation
        try:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                self.build(folder)
        finally:
            if bars_were_on:
                hf_logging.enable_progress_bar()
        from focus_eval.files import atomic_write_text

        atomic_write_text(folder / MARKER, json.dumps({"name": name, self.version_key: self.version, "seed": seed}))
        return folder

    def is_current(self, name: str, folder: Path) -> bool:
        """Whether ``folder`` holds a finished build of ``name`` at this build version."""
        try:
            info = json.loads((Path(folder) / MARKER).read_text())
        except (OSError, ValueError):
            return False
        return isinstance(info, dict) and info.get("name") == name and info.get(self.version_key) == self.version


def _builtin() -> None:
    for name, target in {
        "tiny-vit": "focus_eval.tiny.encoders:TINY_VIT",
        "tiny-clip": "focus_eval.tiny.encoders:TINY_CLIP",
        "tiny-medgemma": "focus_eval.tiny.mllm:TINY_MEDGEMMA",
        "tiny-qwen-vl": "focus_eval.tiny.mllm:TINY_QWEN_VL",
        "tiny-llava-next": "focus_eval.tiny.mllm:TINY_LLAVA_NEXT",
        "tiny-llava": "focus_eval.tiny.mllm_lineup:TINY_LLAVA",
        "tiny-qwen2-vl": "focus_eval.tiny.mllm_lineup:TINY_QWEN2_VL",
        "tiny-qwen2.5-vl": "focus_eval.tiny.mllm_lineup:TINY_QWEN2_5_VL",
        "tiny-internvl": "focus_eval.tiny.mllm_lineup:TINY_INTERNVL",
        "tiny-janus": "focus_eval.tiny.mllm_lineup:TINY_JANUS",
    }.items():
        TINY_MODELS.register(name, target)


#: name (as in ``source: tiny:<name>``) -> :class:`TinyBuilder`; other packages add theirs through the
#: ``focus_eval.tiny`` entry-point group
TINY_MODELS = Registry("tiny model", entry_point_group="focus_eval.tiny", builtin=_builtin)


def tiny_names(family: str | None = None) -> list[str]:
    """The registered tiny models, optionally only those of one family ("encoder" or "mllm")."""
    return sorted(n for n, builder in TINY_MODELS.loaded() if family is None or builder.family == family)


def build_tiny(name: str, folder: Path | str, seed: int | None = None) -> Path:
    """Write tiny model ``name`` into ``folder``, deterministically for a given seed and build version."""
    return TINY_MODELS.get(name).write(name, folder, seed)


def ensure_tiny(name: str) -> Path:
    """The folder of tiny model ``name`` under ``cache_dir('tiny')``, built first if absent or stale."""
    from focus_eval.tiny.cache import build_once

    builder = TINY_MODELS.get(name)
    return build_once(name, lambda folder: builder.write(name, folder),
                      lambda folder: builder.is_current(name, folder))

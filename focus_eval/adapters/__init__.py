"""Model adapters: narrow primitives over transformers, timm and open_clip. The runner owns devices,
batching, caching and processes; an adapter only turns pixels or texts into numbers.

Adapter modules are imported lazily, by the name a preset gives in its ``adapter`` field.
"""

from __future__ import annotations

import importlib
from typing import Any

from focus_eval.errors import FocusError

# preset ``adapter`` value -> "module:class"
ADAPTERS: dict[str, str] = {}


def register(name: str, target: str) -> None:
    ADAPTERS[name] = target


def load_adapter(preset, device: str = "cpu", **kwargs: Any):
    """Instantiate the adapter a preset names; weights load strictly or raise FocusError."""
    _ensure_builtin()
    if preset.adapter not in ADAPTERS:
        raise FocusError(f"preset {preset.name!r}: unknown adapter {preset.adapter!r}; known: {sorted(ADAPTERS)}")
    module_name, cls_name = ADAPTERS[preset.adapter].split(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    return cls(preset, device=device, **kwargs)


def _ensure_builtin() -> None:
    from focus_eval.adapters import builtin  # noqa: F401  (registers the shipped adapters)

"""Model adapters: narrow primitives over transformers, timm and open_clip. The runner owns devices,
batching, caching and processes; an adapter only turns pixels or texts into numbers.

Adapter classes are imported lazily, by the name a preset gives in its ``adapter`` field; other packages add
theirs through the ``focus_eval.adapters`` entry-point group, or at run time with :func:`register`.
"""

from __future__ import annotations

from typing import Any

from focus_eval.errors import FocusError
from focus_eval.registry import Registry, suggest


def _builtin() -> None:
    from focus_eval.adapters.builtin import BUILTIN_ADAPTERS

    for name, target in BUILTIN_ADAPTERS.items():
        ADAPTERS.register(name, target)


#: preset ``adapter`` value -> adapter class (or its lazy ``"module:Class"`` target)
ADAPTERS = Registry("adapter", entry_point_group="focus_eval.adapters", builtin=_builtin)


def register(name: str, target: str | type, *, replace: bool = False) -> None:
    """Make ``name`` usable as a preset's ``adapter``: ``target`` is a class or ``"module:Class"``."""
    ADAPTERS.register(name, target, replace=replace)


def load_adapter(preset, device: str = "cpu", **kwargs: Any):
    """Instantiate the adapter a preset names; weights load strictly or raise FocusError."""
    if preset.adapter not in ADAPTERS:
        raise FocusError(f"preset {preset.name!r}: unknown adapter {preset.adapter!r}"
                         f"{suggest(str(preset.adapter), ADAPTERS.names())}")
    return ADAPTERS.get(preset.adapter)(preset, device=device, **kwargs)

"""Model adapters: narrow primitives over transformers, timm and open_clip. The runner owns devices,
batching, caching and processes; an adapter only turns pixels or texts into numbers.

Adapter classes are imported lazily, by the name a preset gives in its ``adapter`` field; other packages add
theirs through the ``focus_eval.adapters`` entry-point group, or at run time with :func:`register`; a preset may
also name a class of any module (``adapter: my_package.module:MyAdapter``), imported only behind
``--trust-remote-code``.
"""

from __future__ import annotations

from typing import Any

from focus_eval.errors import FocusError
from focus_eval.registry import Registry, import_target, require_trust, suggest


def _builtin() -> None:
    from focus_eval.adapters.builtin import BUILTIN_ADAPTERS

    for name, target in BUILTIN_ADAPTERS.items():
        ADAPTERS.register(name, target)


#: preset ``adapter`` value -> adapter class (or its lazy ``"module:Class"`` target)
ADAPTERS = Registry("adapter", entry_point_group="focus_eval.adapters", builtin=_builtin)


def register(name: str, target: str | type, *, replace: bool = False) -> None:
    """Make ``name`` usable as a preset's ``adapter``: ``target`` is a class or ``"module:Class"``."""
    ADAPTERS.register(name, target, replace=replace)


def adapter_class(preset, trust_remote_code: bool = False) -> type:
    """The class a preset's ``adapter`` names: a registered name (shipped or from an installed package's entry
    point), or ``"module:Class"`` of any importable module, imported only with ``trust_remote_code``."""
    name = str(preset.adapter)
    if name in ADAPTERS:
        return ADAPTERS.get(name)
    if ":" not in name:
        raise FocusError(f"preset {preset.name!r}: unknown adapter {name!r}{suggest(name, ADAPTERS.names())}; "
                         f"a Python adapter outside focus-eval is named as module:Class")
    require_trust(f"preset {preset.name!r} (field 'adapter')", name, trust_remote_code, noun="adapter")
    try:
        found = import_target(name)
    except (ImportError, AttributeError) as exc:
        raise FocusError(f"preset {preset.name!r}: cannot import adapter {name}: {exc}") from None
    if not isinstance(found, type):
        raise FocusError(f"preset {preset.name!r}: adapter {name} is a {type(found).__name__}, not a class")
    return found


def check_code(preset, trust_remote_code: bool = False) -> None:
    """Every preset field that makes focus-eval import a module outside it passes the trust gate here, before
    anything is imported: ``adapter: module:Class`` and ``source: package:pkg.sub/file`` (finding the submodule
    ``pkg.sub`` imports the package ``pkg``; a top-level ``package:pkg/file`` is found without importing), and
    ``settings.trust_pickle`` (unpickling any object runs code)."""
    name = str(preset.adapter)
    if ":" in name and name not in ADAPTERS:
        require_trust(f"preset {preset.name!r} (field 'adapter')", name, trust_remote_code, noun="adapter")
    module = packaged_module(preset.source)
    if module is not None and "." in module:
        require_trust(f"preset {preset.name!r} (field 'source': {preset.source})", module, trust_remote_code,
                      noun="package")
    if (preset.settings or {}).get("trust_pickle"):
        require_trust(f"preset {preset.name!r} (settings.trust_pickle)", "pickle", trust_remote_code,
                      effect="lets its weights file unpickle any object, which can run any code")


def packaged_module(source: object) -> str | None:
    """The module of a ``package:<module>/<file>`` source; None for any other source."""
    text = str(source or "")
    return text[len("package:"):].partition("/")[0] if text.startswith("package:") else None


def load_adapter(preset, device: str = "cpu", **kwargs: Any):
    """Instantiate the adapter a preset names; weights load strictly or raise FocusError. The preset's code
    fields pass the trust gate first (``check_code``)."""
    check_code(preset, bool(kwargs.get("trust_remote_code")))
    cls = adapter_class(preset, bool(kwargs.get("trust_remote_code")))
    return cls(preset, device=device, **kwargs)

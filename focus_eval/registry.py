"""One registry idiom for everything pluggable (adapters, datasets, methods, tiny builders): names map to lazy
``"module:attr"`` targets imported on first use, unknown names get close-name suggestions, and other packages
add entries through an entry-point group."""

from __future__ import annotations

import difflib
import importlib
from typing import Any, Callable, Iterable

from focus_eval.errors import FocusError


def suggest(name: str, known: Iterable[str], *, cutoff: float = 0.6, listing: str | None = None) -> str:
    """The hint appended to an unknown-name error: close matches, else ``listing`` (or every known name)."""
    known = sorted(set(known))
    close = difflib.get_close_matches(name, known, n=3, cutoff=cutoff)
    if close:
        return f"; did you mean {', '.join(close)}?"
    return f"; {listing}" if listing else f"; known: {', '.join(known)}"


def import_target(target: str) -> Any:
    """Import ``"module:attr"`` (or a plain module path) and return the attribute (or module)."""
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    if not attr:
        return module
    obj = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class Registry:
    """Name -> lazy target. ``kind`` names the things in messages ("adapter", "dataset", "method")."""

    def __init__(self, kind: str, *, entry_point_group: str | None = None,
                 builtin: Callable[[], None] | None = None):
        self.kind = kind
        self.entry_point_group = entry_point_group
        self._targets: dict[str, str | Any] = {}
        self._loaded: dict[str, Any] = {}
        self._builtin = builtin
        self._entry_points_read = False

    # --- filling ---------------------------------------------------------------------------------------
    def register(self, name: str, target: str | Any, *, replace: bool = False) -> None:
        """Add ``name``; ``target`` is ``"module:attr"`` (imported on first use) or the object itself."""
        self._fill()
        if name in self._targets and not replace and self._targets[name] != target:
            raise FocusError(f"{self.kind} {name!r} is already registered (as {self._targets[name]!r})")
        self._targets[name] = target
        self._loaded.pop(name, None)

    def unregister(self, name: str) -> None:
        self._targets.pop(name, None)
        self._loaded.pop(name, None)

    def _fill(self) -> None:
        if self._builtin is not None:
            builtin, self._builtin = self._builtin, None
            builtin()
        if self.entry_point_group and not self._entry_points_read:
            self._entry_points_read = True
            from importlib.metadata import entry_points

            for ep in entry_points(group=self.entry_point_group):
                self._targets.setdefault(ep.name, ep.value)

    # --- reading ---------------------------------------------------------------------------------------
    def names(self) -> list[str]:
        self._fill()
        return list(self._targets)

    def __contains__(self, name: str) -> bool:
        self._fill()
        return name in self._targets

    def target(self, name: str) -> str | Any:
        self.check(name)
        return self._targets[name]

    def check(self, name: str) -> str:
        """``name`` itself when registered, else a FocusError with close-name suggestions."""
        self._fill()
        if name not in self._targets:
            raise FocusError(f"unknown {self.kind} {name!r}{suggest(name, self._targets)}")
        return name

    def get(self, name: str) -> Any:
        """The registered object, importing its module on first use."""
        self.check(name)
        if name not in self._loaded:
            target = self._targets[name]
            if isinstance(target, str):
                try:
                    target = import_target(target)
                except (ImportError, AttributeError) as exc:
                    raise FocusError(f"{self.kind} {name!r}: cannot import {self._targets[name]!r}: {exc}") from None
            self._loaded[name] = target
        return self._loaded[name]


def entry_point_folders(group: str) -> list:
    """Folders that installed packages contribute to ``group`` (``focus_eval.models``: preset files,
    ``focus_eval.tasks``: task files); each entry point names a path, e.g. ``my_pkg:MODELS_DIR``."""
    from importlib.metadata import entry_points
    from pathlib import Path

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

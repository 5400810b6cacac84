"""One registry idiom for everything pluggable (adapters, datasets, methods, tiny builders): names map to lazy
``"module:attr"`` targets imported on first use, unknown names get close-name suggestions, and other packages
add entries through an entry-point group.

One trust gate, :func:`require_trust`, stands before every import of code that focus-eval does not ship:
a preset's ``adapter: module:Class``, a preset ``source: package:pkg.sub/file`` (locating a submodule imports
its parent package), and entry points of other packages. Code named by a file or an argument needs
``--trust-remote-code``; an entry point is trusted when an installed distribution declares it (installing
the package was the consent). An entry point that fails to import is skipped with one warning naming it and
its distribution, so a broken plugin breaks only what uses it, and every listing of its group names it beneath
itself (``unlisted``)."""

from __future__ import annotations

import difflib
import importlib
import sys
import threading
from typing import Any, Callable, Iterable

from focus_eval.errors import FocusError

TRUST_FLAG = "--trust-remote-code"
_WARNED: set[str] = set()
_WARN_LOCK = threading.Lock()
# (group, name) -> why the entry point was skipped: every listing of that group names it (``unlisted``)
_BROKEN: dict[tuple[str, str], str] = {}


def require_trust(what: str, target: str, trusted: bool, noun: str = "module", effect: str | None = None) -> None:
    """The gate before focus-eval imports ``target`` (``module``, ``module:attr`` or ``module/file``) because
    ``what`` (a preset field, an entry point) names it: nothing happens when ``trusted``; otherwise a
    FocusError naming the field, the module and the flag, raised before anything of the module (its
    packages' ``__init__`` included) is imported. ``effect`` replaces the default description of what
    allowing it does (for code that runs other than by import: unpickling a weights file)."""
    if not trusted:
        module = target.partition(":")[0].partition("/")[0]
        effect = effect or (f"names the Python {noun} {target}, which is not part of focus-eval; importing it runs "
                            f"the code of module {module!r} (its packages' __init__ included)")
        raise FocusError(f"{what} {effect}, so pass {TRUST_FLAG} to allow it")


def warn_once(message: str) -> None:
    """Print ``message`` to stderr the first time it is given in this process."""
    with _WARN_LOCK:
        if message in _WARNED:
            return
        _WARNED.add(message)
    print(f"focus-eval: warning: {message}", file=sys.stderr)


def entry_point_origin(ep) -> str:
    """``entry point NAME = VALUE (GROUP) of distribution DIST VERSION``, for messages."""
    dist = getattr(ep, "dist", None)
    owner = f"distribution {dist.name} {dist.version}" if dist is not None else "no installed distribution"
    return f"entry point {ep.name} = {ep.value} ({ep.group}) of {owner}"


def load_entry_point(ep) -> Any:
    """What entry point ``ep`` names, imported behind the trust gate; None (and one warning naming the entry
    point and its distribution) when it cannot be imported, whatever it raises."""
    origin = entry_point_origin(ep)
    try:
        require_trust(origin, ep.value, getattr(ep, "dist", None) is not None, noun="entry point")
        return ep.load()
    except Exception as exc:  # a plugin's import may raise anything; it must not take the command down
        first = str(exc).splitlines()[0] if str(exc) else ""
        skip(ep, f"cannot import it ({type(exc).__name__}: {first})")
        return None


def skip(ep, why: str) -> None:
    """Record that entry point ``ep`` is left out (``why``), and warn once."""
    with _WARN_LOCK:
        _BROKEN[(ep.group, ep.name)] = f"{entry_point_origin(ep)}: {why}"
    warn_once(f"skipped {entry_point_origin(ep)}: {why}")


def unlisted(*groups: str) -> list[str]:
    """One line for each entry point of ``groups`` left out so far in this process (it cannot be imported, or
    names no folder), for a listing to print beneath itself every time, so that a broken plugin is named
    where its entries would have been."""
    with _WARN_LOCK:
        found = sorted((key, why) for key, why in _BROKEN.items() if key[0] in groups)
    return [f"not listed: {why}" for _, why in found]


def print_unlisted(*groups: str) -> None:
    """Print ``unlisted(*groups)`` to stderr (beneath a listing; its table on stdout stays as it was)."""
    for line in unlisted(*groups):
        print(f"focus-eval: {line}", file=sys.stderr)


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
        self._plugins: dict[str, Any] = {}  # name -> the entry point that registered it

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
        self._plugins.pop(name, None)

    def _fill(self) -> None:
        if self._builtin is not None:
            builtin, self._builtin = self._builtin, None
            builtin()
        if self.entry_point_group and not self._entry_points_read:
            self._entry_points_read = True
            from importlib.metadata import entry_points

            for ep in entry_points(group=self.entry_point_group):
                if ep.name not in self._targets:
                    self._targets[ep.name] = ep.value
                    self._plugins[ep.name] = ep

    # --- reading ---------------------------------------------------------------------------------------
    def names(self) -> list[str]:
        self._fill()
        return list(self._targets)

    def __contains__(self, name: str) -> bool:
        self._fill()
        return name in self._targets

    def loaded(self) -> list[tuple[str, Any]]:
        """(name, object) of every entry, imported, for listings: an entry point of another package that
        cannot be imported is left out (warned once and named by ``unlisted(group)``), so one broken plugin
        does not break the listing; an entry of focus-eval's own that fails still raises."""
        found = []
        for name in self.names():
            try:
                found.append((name, self.get(name)))
            except FocusError:
                if name not in self._plugins:
                    raise
        return found

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
            if name in self._plugins and self._plugins[name].value == target:
                target = load_entry_point(self._plugins[name])
                if target is None:
                    raise FocusError(f"{self.kind} {name!r}: {entry_point_origin(self._plugins[name])} cannot be "
                                     f"imported (see the warning above); reinstall or remove that package")
            elif isinstance(target, str):
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
        found = load_entry_point(ep)
        if found is None:
            continue
        folder = Path(str(found))
        if not folder.is_dir():
            skip(ep, f"it names {folder}, which is not a folder")
            continue
        folders.append(folder.resolve())
    return folders

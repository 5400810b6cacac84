"""Locate the shipped data folders (tasks/, models/, leaderboard/) in a checkout or an installed wheel."""

from __future__ import annotations

from pathlib import Path

_FOLDERS = ("tasks", "models", "leaderboard")


def resource_dir(name: str) -> Path:
    """Return the folder holding the shipped ``tasks``, ``models`` or ``leaderboard`` files."""
    if name not in _FOLDERS:
        raise ValueError(f"unknown resource folder {name!r}")
    checkout = Path(__file__).resolve().parent.parent / name
    if checkout.is_dir() and (checkout.parent / "setup.cfg").is_file():
        return checkout
    installed = Path(__file__).resolve().parent / f"_{name}"
    if installed.is_dir():
        return installed
    raise FileNotFoundError(f"focus-eval's {name}/ folder is not installed (looked in {checkout} and {installed})")


def cache_dir(*parts: str) -> Path:
    """focus-eval's cache folder (``$FOCUS_CACHE``, else ``~/.cache/focus-eval``), created on demand."""
    import os

    root = Path(os.environ.get("FOCUS_CACHE") or Path.home() / ".cache" / "focus-eval")
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path

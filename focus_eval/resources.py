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

"""Build a tiny offline model into the cache at most once, also when several processes ask at the same time
(torchrun, DataLoader workers, parallel test runs): a file lock serialises the builders, and a finished build
is moved into place in one rename so that readers never see a half-written folder."""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path
from typing import Callable

from focus_eval.resources import cache_dir


def build_once(name: str, build: Callable[[Path], None], is_current: Callable[[Path], bool]) -> Path:
    """The folder ``cache_dir('tiny')/name``; ``build(folder)`` runs only when ``is_current`` says it must."""
    root = cache_dir("tiny")
    folder = root / name
    if is_current(folder):
        return folder
    with open(root / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not is_current(folder):  # another process may have built it while this one waited
                staging = root / f".{name}.building-{os.getpid()}"
                shutil.rmtree(staging, ignore_errors=True)
                build(staging)
                shutil.rmtree(folder, ignore_errors=True)
                os.replace(staging, folder)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return folder

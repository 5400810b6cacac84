"""Model-hub reachability: probed once per process, with a short timeout, before anything is fetched, so that a
machine without network fails in seconds with what to do instead of retrying each file for minutes."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from focus_eval.errors import FocusError

DEFAULT_ENDPOINT = "https://huggingface.co"
PROBE_TIMEOUT_S = 3.0
_probed: dict[str, str | None] = {}  # endpoint -> None (reachable) or why not


def offline() -> bool:
    """Whether the user asked for the local cache only (``HF_HUB_OFFLINE`` set to a true value)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def endpoint() -> str:
    return os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT


def unreachable(url: str | None = None, timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """None when a TCP connection to the hub opens within ``timeout``, else the reason; asked once per endpoint."""
    url = url or endpoint()
    if url not in _probed:
        parsed = urlparse(url)
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        try:
            with socket.create_connection((parsed.hostname or "", port), timeout=timeout):
                _probed[url] = None
        except OSError as exc:
            _probed[url] = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return _probed[url]


def cache_folder() -> Path:
    """The hub cache that ``from_pretrained`` reads (``HF_HUB_CACHE``, else ``HF_HOME/hub``)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return Path(home).expanduser() / "hub"


def cached(repo_id: str, revision: str | None = None) -> Path | None:
    """The folder of ``repo_id``'s snapshot in the local hub cache (at ``revision`` when it is a commit or a
    branch the cache has a ref for, else any snapshot), or None when the cache has none."""
    repo = cache_folder() / f"models--{repo_id.replace('/', '--')}"
    snapshots = repo / "snapshots"
    if not snapshots.is_dir():
        return None
    if revision:
        ref = repo / "refs" / revision
        commit = ref.read_text(encoding="utf-8").strip() if ref.is_file() else revision
        return snapshots / commit if (snapshots / commit).is_dir() else None
    found = sorted(p for p in snapshots.iterdir() if p.is_dir() and any(p.iterdir()))
    return found[0] if found else None


def offline_missing(repo_id: str) -> str:
    """What to do when offline mode is on and ``repo_id`` is not in the cache."""
    return (f"offline mode is on (HF_HUB_OFFLINE={os.environ.get('HF_HUB_OFFLINE', '')}) and the weights of "
            f"{repo_id} are not in the cache at {cache_folder()}; download them on a machine with network: "
            f"`hf download {repo_id}` (then copy the cache folder here, or point HF_HOME at it), or give a local "
            f"copy with --model-args source=DIR")


def advice(repo_id: str, gated: bool = False) -> str:
    """What to do when a hub repository cannot be read: offline mode and its cache (when it is on already: that
    the files are not there and how to get them), the licence page, login."""
    if offline():
        return offline_missing(repo_id) + "."
    page = f"{endpoint().rstrip('/')}/{repo_id}"
    text = (f"To run from files already downloaded, set HF_HUB_OFFLINE=1 (the cache read is {cache_folder()}); "
            f"a local copy of the model can also be given as a folder (--model-args source=DIR or pretrained=DIR).")
    licence = (f" The model is gated: accept its licence at {page} and log in with 'hf auth login' "
               f"(or set HF_TOKEN)." if gated else
               f" If the model is gated, accept its licence at {page} and log in with 'hf auth login'.")
    return text + licence


def check_reachable(repo_id: str, gated: bool = False, what: str = "model") -> None:
    """Before fetching ``repo_id`` from the hub: nothing when offline mode is on (the cache is read) or the hub
    answers; otherwise a FocusError saying so and what to do."""
    if offline():
        return
    reason = unreachable()
    if reason is not None:
        raise FocusError(f"{what} {repo_id}: the model hub {endpoint()} cannot be reached ({reason}; probed once "
                         f"with a {PROBE_TIMEOUT_S:g} s timeout). {advice(repo_id, gated)}")

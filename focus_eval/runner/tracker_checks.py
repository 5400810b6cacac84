"""The ``--log-to`` targets checked before a run starts (the preflight's, with or without ``--check``): the
tracker's package installed at its floor version; for MLflow a store MLflow accepts (a database, or a server
that answers; never a file store, which MLflow 3 refuses); for W&B online, an API key and a server that answers.
Each problem comes with its fix. Nothing is written: a sqlite database is only looked at, a server only asked."""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import os
import re
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

from focus_eval.errors import FocusError

# the oldest versions that have what focus-eval uses (W&B: reinit="create_new" came with 0.19.10)
FLOORS = {"mlflow": (3, 0), "wandb": (0, 19, 10)}
# the preflight asks once and does not wait long
CHECK_BOUNDS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"}
WANDB_OFFLINE = ("offline", "disabled", "dryrun")


def target_problems(targets: list[str], output: Path) -> list[str]:
    """Every problem of the ``--log-to`` targets, each with its fix (an empty list: all can be used)."""
    problems = []
    for target in targets:
        kind, _, uri = target.partition(":")
        try:
            require(kind)
            if kind == "mlflow":
                check_mlflow(mlflow_uri(uri or None, output))
            else:
                check_wandb()
        except FocusError as exc:
            problems.append(f"--log-to {target}: {exc}")
    return problems


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def require(kind: str) -> None:
    """The tracker's package, importable and at least at its floor version."""
    try:
        importlib.import_module(kind)
        installed = importlib.metadata.version(kind)
    except (ImportError, importlib.metadata.PackageNotFoundError):
        raise FocusError(f"{kind} is not installed: pip install 'focus-eval[{kind}]'") from None
    floor = FLOORS[kind]
    if _version(installed) < floor:
        wanted = ".".join(map(str, floor))
        raise FocusError(f"{kind} {installed} is older than {wanted}, the oldest focus-eval works with: "
                         f"pip install '{kind}>={wanted}'")


def mlflow_uri(uri: str | None, output: Path) -> str:
    """The store to log to: the URI given, else MLFLOW_TRACKING_URI, else a database beside the results."""
    found = uri or os.environ.get("MLFLOW_TRACKING_URI")
    return found or f"sqlite:///{Path(output).expanduser().resolve() / 'mlflow.db'}"


def sqlite_path(uri: str) -> Path:
    return Path(uri[len("sqlite:///"):] if uri.startswith("sqlite:///") else uri[len("sqlite://"):])


@contextlib.contextmanager
def _bounded(bounds: dict[str, str]):
    """MLflow's request retries and timeout held to ``bounds`` (the user's own settings win)."""
    added = {k: v for k, v in bounds.items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


def check_mlflow(uri: str) -> None:
    """A store MLflow accepts: a database (its folder there) or a server that answers; never a file store."""
    scheme = urlparse(uri).scheme
    if scheme in ("", "file") or re.match(r"^[A-Za-z]:[\\/]", uri):
        raise FocusError(f"MLflow no longer takes a file store ({uri}); log to a database "
                         f"(--log-to mlflow:sqlite:///PATH/mlflow.db) or to a server (--log-to mlflow:http://HOST:5000)")
    if scheme == "sqlite":
        blocked = [p for p in sqlite_path(uri).expanduser().resolve().parents if p.exists() and not p.is_dir()]
        if blocked:
            raise FocusError(f"the MLflow database {sqlite_path(uri)} cannot be made: {blocked[0]} is a file, not a "
                             f"folder; give another path")
        return
    import mlflow

    with _bounded(CHECK_BOUNDS):
        try:
            mlflow.MlflowClient(tracking_uri=uri).search_experiments(max_results=1)
        except Exception as exc:  # MLflow's errors for a store it cannot reach or use are of many types
            reason = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
            raise FocusError(f"the MLflow store {uri} does not answer ({reason}); start the server or correct the "
                             f"URI (--log-to mlflow:URI, else MLFLOW_TRACKING_URI)") from None


def check_wandb() -> None:
    """Offline W&B needs nothing more; online it needs an API key and a server that answers."""
    if os.environ.get("WANDB_MODE", "online").lower() in WANDB_OFFLINE:
        return
    base = os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")
    if not (os.environ.get("WANDB_API_KEY") or _netrc_key(urlparse(base).hostname or "")):
        raise FocusError(f"W&B is online and has no API key for {base}: run `wandb login`, set WANDB_API_KEY, or "
                         f"set WANDB_MODE=offline (and `wandb sync` later)")
    try:
        urllib.request.urlopen(base, timeout=10).close()
    except urllib.error.HTTPError:
        return  # the server answered
    except (urllib.error.URLError, OSError) as exc:
        raise FocusError(f"the W&B server {base} cannot be reached ({getattr(exc, 'reason', exc)}); check the "
                         f"network or WANDB_BASE_URL, or set WANDB_MODE=offline (and `wandb sync` later)") from None


def _netrc_key(host: str) -> str | None:
    import netrc

    path = os.environ.get("NETRC") or str(Path.home() / ".netrc")
    try:
        found = netrc.netrc(path).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        return None
    return found[2] if found else None

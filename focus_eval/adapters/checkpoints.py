"""Finding weights (hub, local folder, packaged file, tiny model) and loading weights strictly: one rule, for
publisher checkpoints and ``from_pretrained`` reports alike, turns any key outside a preset's allow-lists into
an error naming the keys."""

from __future__ import annotations

import fnmatch
import importlib.util
import pickle
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from focus_eval.adapters.hub import advice, check_reachable, offline, offline_missing
from focus_eval.digests import cached_file_sha256
from focus_eval.errors import FocusError

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


# ---------------------------------------------------------------------------------------------- sources
def resolve_source(preset) -> tuple[str, str | None]:
    """(local folder or hub id, revision) that ``from_pretrained`` should read for this preset. A
    ``tiny:<name>`` source is built offline on first use, by its builder in ``focus_eval.tiny``."""
    if preset.weights:
        raise FocusError(f"preset {preset.name!r} loads a whole model folder, not one weights file: pass "
                         f"--model-args source=DIR instead of weights=PATH")
    source = preset.source
    if not source:
        raise FocusError(f"preset {preset.name!r} has no source; pass --model-args source=DIR")
    source = str(source)
    if source.startswith("tiny:"):
        from focus_eval.tiny import ensure_tiny

        return str(ensure_tiny(source[len("tiny:"):])), None
    path = Path(source).expanduser()
    if path.is_dir():
        return str(path.resolve()), None
    if path.is_absolute() or source.startswith((".", "~")) or not _HUB_ID.match(source):
        raise FocusError(f"preset {preset.name!r}: source folder {source} does not exist")
    check_reachable(source, bool(preset.gated), f"model {preset.name!r} from")
    return source, preset.revision or None


def resolve_weights(preset, file_name: str | None = None) -> Path:
    """The checkpoint file: ``--model-args weights=PATH``, a packaged file, or ``file_name`` in a local
    ``source`` folder or hub repository."""
    return _not_empty(preset, _weights_path(preset, file_name or preset.settings.get("weights_file")))


def _weights_path(preset, file_name: str | None) -> Path:
    if preset.weights:
        path = Path(str(preset.weights)).expanduser()
        if not path.is_file():
            raise FocusError(f"preset {preset.name!r}: weights file {path} does not exist")
        return path.resolve()
    source = str(preset.source or "")
    if source.startswith("package:"):
        return packaged_file(preset, source[len("package:"):])
    if source and file_name and Path(source).expanduser().is_dir():
        path = Path(source).expanduser() / file_name
        if not path.is_file():
            raise FocusError(f"preset {preset.name!r}: folder {source} has no {file_name}")
        return path.resolve()
    if not source or not _HUB_ID.match(source) or not file_name:
        what = f"its weights file {file_name}" if file_name else "a weights file"
        raise FocusError(f"preset {preset.name!r} needs {what}, which no model hub serves: download it from the "
                         f"publisher and pass --model-args weights=PATH")
    return hub_file(preset, source, file_name)


def _not_empty(preset, path: Path) -> Path:
    if path.stat().st_size == 0:
        raise FocusError(f"preset {preset.name!r}: weights file {path} is empty (0 bytes), e.g. an interrupted "
                         "download or copy; fetch it again")
    return path


def hub_file(preset, repo_id: str, file_name: str, revision: str | None = None) -> Path:
    """Download (or find in the local cache) one file of a hub repository at the preset's revision."""
    from huggingface_hub import hf_hub_download

    revision = revision or preset.revision or None
    check_reachable(repo_id, bool(preset.gated), f"model {preset.name!r} from")
    try:
        return Path(hf_hub_download(repo_id=repo_id, filename=file_name, revision=revision))
    except Exception as exc:  # network, gating and missing-file errors all end the same way for the user
        if offline():  # the hub's own text says it "couldn't connect": offline mode did not try
            raise FocusError(f"preset {preset.name!r}: {offline_missing(repo_id)}") from None
        raise FocusError(f"preset {preset.name!r}: cannot fetch {file_name} from {repo_id}@{revision or 'main'} "
                         f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}). "
                         f"{advice(repo_id, bool(preset.gated))} Or pass --model-args weights=PATH") from None


def packaged_file(preset, spec: str) -> Path:
    """The file ``relative`` of a ``package:<module>/<relative>`` source. Finding a dotted module imports its
    parent package, so a caller passes the trust gate first (``adapters.check_code``)."""
    module, _, relative = spec.partition("/")
    found = importlib.util.find_spec(module)
    if found is None or not found.submodule_search_locations:
        raise FocusError(f"preset {preset.name!r}: Python package {module!r} is not installed "
                         f"(pip install {module.replace('_', '-')})")
    path = Path(list(found.submodule_search_locations)[0]) / relative
    if not path.is_file():
        raise FocusError(f"preset {preset.name!r}: package {module!r} has no file {relative}")
    return path


def resolved_revision(source: str, revision: str | None) -> str | None:
    """The commit a hub revision points at (from the local cache when offline); None for local folders."""
    if Path(source).is_dir():
        return None
    if revision and re.fullmatch(r"[0-9a-f]{40}", revision):
        return revision
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(repo_id=source, filename="config.json", revision=revision)).parent.name
    except Exception:
        return revision


def verify_sha256(preset, path: Path) -> str:
    """Hash ``path`` and compare with the preset's ``weights_sha256`` when it declares one."""
    digest = cached_file_sha256(path)
    expected = preset.weights_sha256
    if expected and digest != str(expected).lower():
        raise FocusError(f"preset {preset.name!r}: {path} has sha256 {digest}, expected {expected}; a different "
                         f"file than the preset was written for. Pass --model-args weights_sha256=null to load it "
                         f"anyway (its hash is recorded)")
    return digest


# ---------------------------------------------------------------------------------------------- loading
@dataclass
class KeyMap:
    """How a publisher's checkpoint keys become the model's: all rules come from the preset's settings."""

    container: list[str | None] = field(default_factory=lambda: [None])
    strip_prefixes: list[str] = field(default_factory=list)
    rename: list[tuple[str, str]] = field(default_factory=list)
    drop: list[str] = field(default_factory=list)
    allow_missing: list[str] = field(default_factory=list)
    mapping: str = "names"
    resample_pos_embed: bool = False

    @classmethod
    def from_settings(cls, spec: dict[str, Any] | None, where: str) -> "KeyMap":
        spec = dict(spec or {})
        known = {"container", "strip_prefixes", "rename", "drop", "allow_missing", "mapping", "resample_pos_embed"}
        unknown = set(spec) - known
        if unknown:
            raise FocusError(f"{where}: unknown checkpoint settings {sorted(unknown)}; known: {sorted(known)}")
        container = spec.get("container")
        container = container if isinstance(container, list) else [container]
        rename = [tuple(pair) for pair in spec.get("rename") or []]
        if any(len(pair) != 2 for pair in rename):
            raise FocusError(f"{where}: checkpoint.rename takes [pattern, replacement] pairs")
        mapping = spec.get("mapping", "names")
        if mapping not in ("names", "ordered"):
            raise FocusError(f"{where}: checkpoint.mapping must be 'names' or 'ordered'")
        return cls(container=container, strip_prefixes=list(spec.get("strip_prefixes") or []), rename=rename,
                   drop=list(spec.get("drop") or []), allow_missing=list(spec.get("allow_missing") or []),
                   mapping=mapping, resample_pos_embed=bool(spec.get("resample_pos_embed", False)))


def read_checkpoint(path: Path, trust_pickle: bool = False) -> Any:
    """Load a .safetensors file, or a torch pickle restricted to tensors and plain values.

    Publisher training checkpoints often pickle their argparse options and numpy scalars next to the weights;
    those types are allowed. Anything else needs ``--model-args trust_pickle=true``, because unpickling an
    arbitrary object can run code.
    """
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        try:
            return load_file(str(path))
        except Exception as exc:  # the Rust reader raises its own error type for a damaged file
            raise FocusError(f"{path}: not a readable safetensors file ({_first_line(exc)})") from None
    import argparse

    import numpy as np
    import torch

    allowed = [argparse.Namespace, np.dtype, np.ndarray, type(np.dtype("float64")), type(np.dtype("int64"))]
    scalar = getattr(getattr(np, "_core", np), "multiarray", None)
    if scalar is not None and hasattr(scalar, "scalar"):
        allowed.append(scalar.scalar)
    try:
        if trust_pickle:
            return torch.load(str(path), map_location="cpu", weights_only=False)
        with torch.serialization.safe_globals(allowed):
            return torch.load(str(path), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise FocusError(f"{path}: the file pickles objects beyond tensors and plain values "
                         f"({_first_line(exc)}). If you trust its source, pass "
                         f"--model-args trust_pickle=true --trust-remote-code") from None
    except (OSError, EOFError, RuntimeError, ValueError) as exc:  # truncated or not a torch checkpoint
        raise FocusError(f"{path}: cannot be read as a torch checkpoint ({_first_line(exc)})") from None


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:200] if lines else type(exc).__name__


def select_container(checkpoint: Any, keymap: KeyMap, where: str) -> dict:
    """The state dict inside a checkpoint, following the declared container keys in order."""
    for key in keymap.container:
        node = checkpoint if key is None else (checkpoint.get(key) if isinstance(checkpoint, dict) else None)
        if isinstance(node, dict) and node and all(hasattr(v, "shape") for v in node.values()):
            return dict(node)
    top = sorted(checkpoint)[:12] if isinstance(checkpoint, dict) else type(checkpoint).__name__
    raise FocusError(f"{where}: no state dict under {keymap.container} (top-level keys: {top})")


def map_keys(state: dict, keymap: KeyMap) -> tuple[dict, list[str]]:
    """Apply prefix stripping, renames and the drop allow-list; return (state, dropped keys)."""
    out, dropped = {}, []
    for key, value in state.items():
        for prefix in keymap.strip_prefixes:
            if key.startswith(prefix):
                key = key[len(prefix):]
        for pattern, replacement in keymap.rename:
            key = re.sub(pattern, replacement, key)
        if _matches(key, keymap.drop):
            dropped.append(key)
            continue
        out[key] = value
    return out, dropped


def _matches(key: str, patterns: Iterable[str], regex: bool = False) -> bool:
    if regex:
        return any(re.search(p, key) for p in patterns)
    return any(fnmatch.fnmatchcase(key, p) for p in patterns)


def _listing(keys, limit: int = 25) -> str:
    keys = sorted(keys)
    more = f" ... and {len(keys) - limit} more" if len(keys) > limit else ""
    return ", ".join(keys[:limit]) + more


def check_loaded_keys(where: str, *, missing: Iterable = (), unexpected: Iterable = (), mismatched: Iterable = (),
                      errors: Iterable = (), allow_missing: Iterable[str] = (), allow_unexpected: Iterable[str] = (),
                      allow_mismatched: Iterable[str] = (), regex: bool = False,
                      problem: str = "weights did not load") -> None:
    """The strict-loading rule of every adapter family: a missing, unexpected or shape-mismatched key outside
    its allow-list, or a loader error, is a FocusError that names the keys. Allow-lists hold glob patterns
    (``pooler.*``), or regular expressions searched in the key when ``regex``."""
    parts = []
    for label, keys, allowed in (("missing keys", missing, allow_missing),
                                 ("unexpected keys", unexpected, allow_unexpected),
                                 ("mismatched shapes", mismatched, allow_mismatched)):
        allowed = list(allowed or ())
        bad = [str(k) for k in keys or () if not _matches(str(k), allowed, regex)]
        if bad:
            parts.append(f"{label} ({len(bad)}): {_listing(bad)}")
    parts += [str(e) for e in errors or ()]
    if parts:
        raise FocusError(f"{where}: {problem}: " + "; ".join(parts))


def load_state_strict(module, state: dict, keymap: KeyMap, where: str) -> list[str]:
    """Load ``state`` into ``module``; any key outside the allow-lists, or a shape mismatch, is a FocusError.

    Returns notes describing declared conversions that were applied (for the run manifest).
    """
    target = module.state_dict()
    notes: list[str] = []
    if keymap.mapping == "ordered":
        state = _ordered(state, target, where)
        notes.append("checkpoint tensors mapped onto the model in order, shapes checked one by one")
    check_loaded_keys(where, missing=[k for k in target if k not in state],
                      unexpected=[k for k in state if k not in target], allow_missing=keymap.allow_missing,
                      problem="the checkpoint does not match the model")
    for key, value in list(state.items()):
        if tuple(value.shape) == tuple(target[key].shape):
            continue
        if keymap.resample_pos_embed and key.endswith("pos_embed"):
            state[key] = _resample_pos_embed(value, target[key], module)
            notes.append(f"{key} resampled from {tuple(value.shape)} to {tuple(target[key].shape)}")
            continue
        raise FocusError(f"{where}: shape mismatch for {key}: checkpoint {tuple(value.shape)}, "
                         f"model {tuple(target[key].shape)}")
    module.load_state_dict(state, strict=not keymap.allow_missing)
    return notes


def _ordered(state: dict, target: dict, where: str) -> dict:
    source, names = list(state.items()), list(target)
    if len(source) != len(names):
        raise FocusError(f"{where}: the checkpoint has {len(source)} tensors, the model {len(names)}")
    out = {}
    for (key, value), name in zip(source, names):
        if tuple(value.shape) != tuple(target[name].shape):
            raise FocusError(f"{where}: checkpoint tensor {key} {tuple(value.shape)} does not fit model tensor "
                             f"{name} {tuple(target[name].shape)} at the same position")
        out[name] = value
    return out


def _resample_pos_embed(value, reference, module):
    """Resize a ViT position-embedding grid the way the publishers' fine-tuning code does (bicubic)."""
    from timm.layers import resample_abs_pos_embed

    prefix = getattr(module, "num_prefix_tokens", 1)
    grid = getattr(getattr(module, "patch_embed", None), "grid_size", None)
    old = int(round((value.shape[1] - prefix) ** 0.5))
    return resample_abs_pos_embed(value.float(), new_size=list(grid), old_size=[old, old], num_prefix_tokens=prefix,
                                  interpolation="bicubic", antialias=False).to(reference.dtype)


@contextmanager
def quiet_transformers():
    """Silence transformers' own load report: ``check_hf_loading`` decides, and names every offending key."""
    from transformers.utils import logging

    level = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        yield
    finally:
        logging.set_verbosity(level)


def hf_load(loader, preset, source: str, revision: str | None, **kwargs):
    """``loader.from_pretrained`` with transformers' own report silenced and load failures as FocusError."""
    try:
        with quiet_transformers():
            return loader.from_pretrained(source, revision=revision, **kwargs)
    except (OSError, ValueError) as exc:
        local = Path(source).is_dir()
        if not local and offline():  # the hub's own text says it "couldn't connect": offline mode did not try
            raise FocusError(f"model {preset.name!r}: {offline_missing(source)}") from None
        hint = "" if local else " " + advice(source, bool(preset.gated))
        raise FocusError(f"model {preset.name!r}: cannot load {source}@{revision or 'local'} "
                         f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}).{hint}") from None


def check_hf_loading(info: dict, allow_missing: Iterable[str], allow_unexpected: Iterable[str], where: str, *,
                     allow_mismatched: Iterable[str] = (), regex: bool = False) -> None:
    """:func:`check_loaded_keys` over a ``from_pretrained(..., output_loading_info=True)`` report."""
    check_loaded_keys(where, missing=info.get("missing_keys"), unexpected=info.get("unexpected_keys"),
                      mismatched=info.get("mismatched_keys"), errors=info.get("error_msgs"),
                      allow_missing=allow_missing, allow_unexpected=allow_unexpected,
                      allow_mismatched=allow_mismatched, regex=regex)

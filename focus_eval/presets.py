"""Model presets: one YAML file per ``--model`` name under ``models/`` and in user preset folders
(``--models-path``, ``$FOCUS_MODELS_PATH``), a preset file given by its path, or a family adapter named with
its arguments (``--model hf_vision --model-args pretrained=ORG/NAME``); a name is a complete configuration."""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

from focus_eval.digests import json_digest
from focus_eval.errors import FocusError
from focus_eval.files import load_yaml, load_yaml_file
from focus_eval.registry import Registry, entry_point_folders, suggest
from focus_eval.resources import resource_dir

FAMILIES = {"vm": ("linear_probe",), "vlm": ("zero_shot", "linear_probe"), "mllm": ("prompt",)}
DOMAINS = ("general", "ophthalmic", "medical")
# The fields of a preset file; any other ``--model-args`` key goes to ``settings`` (checked by the adapter).
PRESET_FIELDS = frozenset({"name", "family", "domain", "adapter", "source", "revision", "dtype", "methods",
                           "preprocessing", "gated", "licence", "untrained", "settings", "description", "paper_name",
                           "trust_remote_code", "weights", "weights_sha256", "contamination"})
# The dtypes a preset may ask for (the weights' compute precision on a GPU; CPUs compute in float32).
DTYPES = ("bfloat16", "float16", "float32")
MODELS_PATH_ENV = "FOCUS_MODELS_PATH"
PRESET_SUFFIXES = (".yaml", ".yml")


def _families() -> None:
    for name in ("hf_vision", "timm", "open_clip", "hf_clip", "hf_mllm"):
        FAMILY_PRESETS.register(name, f"focus_eval.adapters.family:{name.upper()}")
    FAMILY_PRESETS.register("openai_chat", "focus_eval.adapters.openai_chat:OPENAI_CHAT")


#: ``--model`` names of family adapters taking ``--model-args pretrained=...`` -> their ``FamilyPreset``
#: (``focus_eval.adapters.family``); packages add theirs through the ``focus_eval.families`` entry-point group
FAMILY_PRESETS = Registry("family adapter", entry_point_group="focus_eval.families", builtin=_families)


@dataclass
class Preset:
    """A model preset after ``--model-args`` overrides. ``settings`` holds adapter-specific fields."""

    name: str
    family: str
    domain: str
    adapter: str
    source: str | None = None
    revision: str | None = None
    dtype: str = "bfloat16"
    methods: list[str] = field(default_factory=list)
    preprocessing: dict[str, Any] = field(default_factory=dict)
    gated: bool = False
    licence: str | None = None
    untrained: bool = False
    trust_remote_code: bool = False
    weights: str | None = None
    weights_sha256: str | None = None
    description: str | None = None
    paper_name: str | None = None
    contamination: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    path: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def hash(self) -> str:
        d = self.to_dict()
        d.pop("path", None)
        return json_digest(d)[:16]

    @property
    def origin(self) -> str:
        """``built-in`` (a shipped preset), ``family`` (a family adapter with arguments) or ``user`` (a file)."""
        if self.path is None:
            return "family"
        return "built-in" if Path(self.path).parent == resource_dir("models") else "user"


# ------------------------------------------------------------------------------------------------- finding
def models_paths(extra: Iterable[str | os.PathLike] = ()) -> list[Path]:
    """User preset folders: ``extra`` (``--models-path``, in order), those in ``$FOCUS_MODELS_PATH``, then those
    installed packages declare in the ``focus_eval.models`` entry-point group."""
    env = [p for p in os.environ.get(MODELS_PATH_ENV, "").split(os.pathsep) if p.strip()]
    folders = []
    for value in [*extra, *env]:
        folder = Path(value).expanduser()
        if not folder.is_dir():
            where = "--models-path" if value not in env else MODELS_PATH_ENV
            raise FocusError(f"{where} {value}: not a folder of model preset files")
        folders.append(folder.resolve())
    return list(dict.fromkeys([*folders, *entry_point_folders("focus_eval.models")]))


def preset_files(models_path: Iterable[str | os.PathLike] = ()) -> dict[str, Path]:
    """Preset name -> file: the shipped presets, then every ``*.yaml`` in the user folders. A user preset never
    replaces a shipped one (a name defined twice is an error naming both files), so a name means one model."""
    files = {p.stem: p for p in sorted(resource_dir("models").glob("*.yaml"))}
    for folder in models_paths(models_path):
        for path in sorted(p for p in folder.iterdir() if p.suffix in PRESET_SUFFIXES and p.is_file()):
            if path.stem in files and files[path.stem] != path:
                raise FocusError(f"model preset {path.stem!r} is defined twice: {files[path.stem]} and {path}; "
                                 f"give yours its own name")
            files[path.stem] = path
    return files


def list_presets(models_path: Iterable[str | os.PathLike] = ()) -> list[Preset]:
    return [load_preset(str(path)) for path in preset_files(models_path).values()]


def is_preset_path(model: str) -> bool:
    """Whether ``--model`` names a preset file rather than a preset or a family adapter."""
    return model.endswith(PRESET_SUFFIXES) or "/" in model or os.sep in model


def resolve_model(model: str, models_path: Iterable[str | os.PathLike] = ()) -> str:
    """``model`` as ``load_preset`` reads it without the user folders: a user preset's name becomes its path."""
    if is_preset_path(model) or model in FAMILY_PRESETS:
        return model
    files = preset_files(models_path)
    if model in files and files[model].parent != resource_dir("models"):
        return str(files[model])
    return model


# ------------------------------------------------------------------------------------------------- reading
def _coerce(value: str) -> Any:
    """A --model-args value: YAML scalar rules (true, 3, 0.5, null), else the string itself."""
    try:
        parsed = load_yaml(value)
    except yaml.YAMLError:
        return value
    return parsed if isinstance(parsed, (bool, int, float, type(None))) else value


def parse_model_args(text: str | None) -> dict[str, Any]:
    """``k=v,k2=v2`` -> dict. Dotted keys (``preprocessing.size=448``) address nested fields."""
    out: dict[str, Any] = {}
    if not text:
        return out
    for part in text.split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise FocusError(f"--model-args: {part!r} is not key=value")
        key, value = part.split("=", 1)
        out[key.strip()] = _coerce(value.strip())
    return out


def read_preset_file(path: Path) -> dict[str, Any]:
    """The raw mapping of one preset file; a missing file, bad YAML or an unknown key names the file."""
    try:
        raw = load_yaml_file(path) or {}
    except OSError as exc:
        raise FocusError(f"model preset file {path}: cannot read ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise FocusError(f"model preset file {path}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise FocusError(f"model preset file {path}: expected a mapping of preset fields")
    unknown = set(raw) - PRESET_FIELDS
    if unknown:
        raise FocusError(f"{path}: unknown preset keys {sorted(unknown)}{suggest(sorted(unknown)[0], PRESET_FIELDS)}")
    return raw


def apply_model_args(raw: dict[str, Any], model_args: dict[str, Any], where: str) -> None:
    """``--model-args`` onto a raw preset: preset fields by name (dotted keys reach nested fields), any other
    key into ``settings``."""
    for key, value in model_args.items():
        target = raw
        parts = key.split(".")
        if parts[0] not in PRESET_FIELDS:
            # adapter-specific keys go to settings
            target = raw.setdefault("settings", {})
        for i, p in enumerate(parts[:-1]):
            target = target.setdefault(p, {})
            if not isinstance(target, dict):
                raise FocusError(f"--model-args {key}: {'.'.join(parts[:i + 1])} is {target!r} in {where}, "
                                 f"not a mapping")
        target[parts[-1]] = value


def load_preset(model: str, model_args: dict[str, Any] | None = None,
                models_path: Iterable[str | os.PathLike] = ()) -> Preset:
    """The preset ``model`` names: a preset name (shipped or in a user folder), a preset file path, or a family
    adapter (``hf_vision``, ``timm``, ``open_clip``, ``hf_clip``, ``hf_mllm``) given ``pretrained=`` in
    ``model_args``; ``model_args`` then override any field."""
    args = dict(model_args or {})
    if model in FAMILY_PRESETS:
        family = FAMILY_PRESETS.get(model)
        raw = family.preset(args)
        apply_model_args(raw, args, f"--model {model}")
        family.complete(raw)
        return _validated(raw, None, f"--model {model}")
    if is_preset_path(model):
        path = Path(model).expanduser()
        if not path.is_file():
            raise FocusError(f"model preset file {model} not found")
    else:
        files = preset_files(models_path)
        if model not in files:
            hint = suggest(model, [*files, *FAMILY_PRESETS.names()], cutoff=0.5,
                           listing="'focus-eval models' lists them; a family adapter (hf_vision, timm, open_clip, "
                                   "hf_clip, hf_mllm) takes --model-args pretrained=HUB_ID_OR_PATH")
            raise FocusError(f"unknown model {model!r}{hint}")
        path = files[model]
    raw = read_preset_file(path)
    raw.setdefault("name", path.stem)
    if raw["name"] != path.stem:
        raise FocusError(f"{path}: preset name {raw['name']!r} does not match its file name {path.stem!r}")
    apply_model_args(raw, args, str(path))
    return _validated(raw, path.resolve(), str(path))


def _validated(raw: dict[str, Any], path: Path | None, where: str) -> Preset:
    family = raw.get("family")
    if family not in FAMILIES:
        raise FocusError(f"{where}: family must be one of {list(FAMILIES)}, got {family!r}")
    if raw.get("domain") not in DOMAINS:
        raise FocusError(f"{where}: domain must be one of {list(DOMAINS)}, got {raw.get('domain')!r}")
    if not raw.get("adapter"):
        raise FocusError(f"{where}: 'adapter' is required (e.g. hf_vision, or my_package.module:MyAdapter)")
    dtype = raw.get("dtype", Preset.dtype)
    if dtype not in DTYPES:
        raise FocusError(f"{where}: dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    methods = raw.get("methods") or list(FAMILIES[family])
    if isinstance(methods, str):  # one method, e.g. from --model-args methods=zero_shot
        methods = [methods]
    # a shipped method on the wrong family is a preset error; other names are registered methods, which the
    # runner checks against the method registry (each method says which families it serves)
    shipped = {m for family_methods in FAMILIES.values() for m in family_methods}
    bad = [m for m in methods if not isinstance(m, str) or (m in shipped and m not in FAMILIES[family])]
    if bad:
        raise FocusError(f"{where}: methods {bad} are not available for family {family!r}")
    raw["methods"] = list(methods)
    raw["path"] = None if path is None else str(path)
    return Preset(**raw)


# ------------------------------------------------------------------------------------------------- provenance
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


def model_provenance(preset: Preset, adapter: Any = None) -> dict[str, Any]:
    """Where a model came from, for its results lines: the preset's origin (``built-in``, ``user`` file or
    ``family`` adapter), the adapter, and either the hub id and revision or, for weights that are local files,
    ``local: true`` with the file or folder digest. ``adapter`` (when loaded) supplies the resolved revision
    and the digest it computed, so nothing is hashed twice."""
    source = str(preset.source or "")
    weights = str(preset.weights or "")
    out: dict[str, Any] = {"preset": preset.origin, "adapter": preset.adapter, "local": False}
    if preset.origin == "user":
        out["preset_file"] = Path(str(preset.path)).name
    digest = getattr(adapter, "weights_sha256", None)
    if weights or (source and Path(source).expanduser().exists()):
        local = Path(weights or source).expanduser()
        out.update(local=True, weights=local.name, digest=digest or _local_digest(local))
    elif source.startswith(("tiny:", "package:")):
        kind, _, name = source.partition(":")
        out.update(kind=kind, name=name, digest=digest)
    elif _HUB_ID.match(source):
        revision = getattr(adapter, "resolved_revision", None) or preset.revision
        out.update(hub_id=source, revision=revision)
    else:
        out["no_weights"] = True  # what it computes is the adapter's code alone
    # an adapter that calls a remote model (an API endpoint) says which endpoint and model answered
    out.update(getattr(adapter, "provenance", None) or {})
    if type(adapter).__module__.split(".")[0] not in ("focus_eval", "builtins"):
        out["adapter_class"] = f"{type(adapter).__module__}:{type(adapter).__qualname__}"
        out["adapter_package"] = _adapter_package(preset.adapter)
    return out


def _adapter_package(name: str) -> str | None:
    """``distribution version`` of the installed package whose entry point registers adapter ``name``."""
    from importlib.metadata import entry_points

    for ep in entry_points(group="focus_eval.adapters"):
        if ep.name == name and ep.dist is not None:
            return f"{ep.dist.name} {ep.dist.version}"
    return None


def _local_digest(path: Path) -> str:
    from focus_eval.digests import cached_file_sha256, folder_digest

    return folder_digest(path) if path.is_dir() else cached_file_sha256(path)

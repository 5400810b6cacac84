"""Model presets: one YAML file per ``--model`` name under ``models/``; a name is a complete configuration."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from focus_eval.digests import json_digest
from focus_eval.errors import FocusError
from focus_eval.registry import suggest
from focus_eval.resources import resource_dir

FAMILIES = {"vm": ("linear_probe",), "vlm": ("zero_shot", "linear_probe"), "mllm": ("prompt",)}
DOMAINS = ("general", "ophthalmic", "medical")
# The fields of a preset file; any other ``--model-args`` key goes to ``settings`` (checked by the adapter).
PRESET_FIELDS = frozenset({"name", "family", "domain", "adapter", "source", "revision", "dtype", "methods",
                           "preprocessing", "gated", "licence", "untrained", "settings", "description", "paper_name",
                           "trust_remote_code", "weights", "weights_sha256", "contamination"})


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


def preset_files() -> dict[str, Path]:
    return {p.stem: p for p in sorted(resource_dir("models").glob("*.yaml"))}


def list_presets() -> list[Preset]:
    return [load_preset(name) for name in preset_files()]


def _coerce(value: str) -> Any:
    """A --model-args value: YAML scalar rules (true, 3, 0.5, null), else the string itself."""
    try:
        parsed = yaml.safe_load(value)
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


def load_preset(name: str, model_args: dict[str, Any] | None = None) -> Preset:
    files = preset_files()
    if name not in files:
        hint = suggest(name, files, cutoff=0.5, listing="'focus-eval models' lists them")
        raise FocusError(f"unknown model {name!r}{hint}")
    path = files[name]
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    unknown = set(raw) - PRESET_FIELDS
    if unknown:
        raise FocusError(f"{path}: unknown preset keys {sorted(unknown)}")
    for key, value in (model_args or {}).items():
        target = raw
        parts = key.split(".")
        if parts[0] not in PRESET_FIELDS:
            # adapter-specific keys go to settings
            target = raw.setdefault("settings", {})
        for i, p in enumerate(parts[:-1]):
            target = target.setdefault(p, {})
            if not isinstance(target, dict):
                raise FocusError(f"--model-args {key}: {'.'.join(parts[:i + 1])} is {target!r} in {path}, "
                                 f"not a mapping")
        target[parts[-1]] = value
    if raw.get("name") != name:
        raise FocusError(f"{path}: preset name {raw.get('name')!r} does not match its file name {name!r}")
    family = raw.get("family")
    if family not in FAMILIES:
        raise FocusError(f"{path}: family must be one of {list(FAMILIES)}, got {family!r}")
    if raw.get("domain") not in DOMAINS:
        raise FocusError(f"{path}: domain must be one of {list(DOMAINS)}, got {raw.get('domain')!r}")
    methods = raw.get("methods") or list(FAMILIES[family])
    bad = [m for m in methods if m not in FAMILIES[family]]
    if bad:
        raise FocusError(f"{path}: methods {bad} are not available for family {family!r}")
    raw["methods"] = list(methods)
    raw["path"] = str(path)
    return Preset(**raw)

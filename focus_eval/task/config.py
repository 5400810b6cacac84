"""Task YAML files: safe parsing, ``include`` resolution and key checks, before any object is built."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any, Sequence

import yaml

from focus_eval.errors import FocusError
from focus_eval.files import load_yaml_file

TASK_KEYS = ("task", "tag", "dataset", "target", "cohort", "proxy", "splits", "prompt", "zero_shot",
             "metric_list", "include", "metadata",
             # multi-class, multi-label and multiple-choice tasks (focus_eval.task.outputs, .questions)
             "output_type", "classes", "ordinal", "question",
             # methods that do not score this task, each with the reason recorded in its place
             "skip_methods",
             # named paraphrases of the yes/no prompt (--prompt-variants; focus_eval.task.variants)
             "prompt_variants",
             # named alternative harmonisations of the label (--label-rules; focus_eval.task.variants)
             "label_rules")
METADATA_KEYS = ("version", "label_rule", "description")
GROUP_KEYS = ("group", "task", "aggregation", "metadata")
GROUPS_FILE = "_groups.yaml"


def read_yaml(path: Path) -> dict[str, Any]:
    """One YAML mapping, read with the safe loader; anything else is an error naming the file."""
    try:
        data = load_yaml_file(path)
    except yaml.YAMLError as exc:
        raise FocusError(f"{path}: not valid YAML: {exc}") from None
    except OSError as exc:
        raise FocusError(f"{path}: cannot read: {exc.strerror}") from None
    if not isinstance(data, dict):
        raise FocusError(f"{path}: a task file must be a YAML mapping (key: value), got {type(data).__name__}")
    return data


def check_keys(data: dict[str, Any], path: Path) -> None:
    """Unknown top-level or metadata keys are errors: a typo must not silently fall back to a default."""
    unknown = [k for k in data if k not in TASK_KEYS]
    if unknown:
        raise FocusError(f"{path}: unknown key(s) {', '.join(map(str, unknown))}; "
                         f"allowed: {', '.join(TASK_KEYS)}")
    metadata = data.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise FocusError(f"{path}: 'metadata' must be a mapping")
        unknown = [k for k in metadata if k not in METADATA_KEYS]
        if unknown:
            raise FocusError(f"{path}: unknown metadata key(s) {', '.join(map(str, unknown))}; "
                             f"allowed: {', '.join(METADATA_KEYS)}")


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``override`` on top of ``base``: mappings merge key by key, lists and scalars are replaced whole."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def yaml_files(root: Path) -> list[Path]:
    """Every ``.yaml``/``.yml`` file under ``root`` at any depth, sorted, skipping hidden and ``__`` folders."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
        found += [Path(dirpath) / f for f in sorted(filenames) if f.endswith((".yaml", ".yml"))]
    return found


def find_include(name: str, including: Path, roots: Sequence[Path]) -> Path:
    """An include is looked up next to the including file first (so ``../dr/_base_dr.yaml`` works), then at
    the top of each task folder (user folders before the shipped one), then by file name below each task
    folder, so user tasks can include the shipped base files, which live in the target folders, by name.
    Whatever it names must lie inside one of ``roots`` (the task search path) once links are followed."""
    candidates = [including.parent / name] + [root / name for root in roots]
    for candidate in candidates:
        if candidate.is_file():
            return confined(candidate.resolve(), name, including, roots)
    bare = Path(name).name == name  # a plain file name, not a path
    for root in roots if bare else ():
        found = [p.resolve() for p in yaml_files(root) if p.name == name]
        if len(found) > 1:
            raise FocusError(f"{including}: included file {name!r} is ambiguous: {', '.join(map(str, found))} "
                             f"(include it by its path relative to {including.parent})")
        if found:
            return confined(found[0], name, including, roots)
    looked = ", ".join(str(c) for c in candidates)
    if bare and roots:
        looked += ", then below " + ", ".join(str(r) for r in roots)
    raise FocusError(f"{including}: included file {name!r} not found (looked in {looked})")


def confined(found: Path, name: str, including: Path, roots: Sequence[Path]) -> Path:
    """``found`` if it lies inside a task folder of ``roots``; else an error naming the including file (a task
    file must not read files elsewhere, e.g. ``../../secret.yaml`` or an absolute path or a link out)."""
    if any(root == found or root in found.parents for root in roots):
        return found
    raise FocusError(f"{including}: included file {name!r} resolves to {found}, outside the task search path "
                     f"({', '.join(map(str, roots))}); includes must stay inside the shipped tasks folder and the "
                     "--include-path folders")


def _include_list(value: Any, path: Path) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise FocusError(f"{path}: 'include' must be a file name or a list of file names")


def resolve(path: Path, roots: Sequence[Path] = (), _chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The task config of ``path`` with its includes applied in order, the file's own keys last. Includes
    resolve inside ``roots`` only; a task file named on its own (outside them) may include files of its folder."""
    path = path.resolve()
    if not _chain and not any(root in path.parents for root in roots):
        roots = (*roots, path.parent)
    if path in _chain:
        cycle = " -> ".join(str(p) for p in (*_chain, path))
        raise FocusError(f"{_chain[-1]}: include cycle: {cycle}")
    raw = read_yaml(path)
    check_keys(raw, path)
    merged: dict[str, Any] = {}
    for name in _include_list(raw.pop("include", None), path):
        merged = merge(merged, resolve(find_include(name, path, roots), roots, (*_chain, path)))
    return merge(merged, raw)


def read_groups(path: Path) -> list[dict[str, Any]]:
    """The group entries of a ``_groups.yaml`` file, with their keys checked."""
    data = read_yaml(path)
    if set(data) != {"groups"} or not isinstance(data["groups"], list):
        raise FocusError(f"{path}: a groups file holds one key, 'groups', with a list of groups")
    for i, entry in enumerate(data["groups"], start=1):
        if not isinstance(entry, dict):
            raise FocusError(f"{path}: group #{i} must be a mapping")
        unknown = [k for k in entry if k not in GROUP_KEYS]
        if unknown:
            raise FocusError(f"{path}: group #{i}: unknown key(s) {', '.join(map(str, unknown))}; "
                             f"allowed: {', '.join(GROUP_KEYS)}")
    return data["groups"]

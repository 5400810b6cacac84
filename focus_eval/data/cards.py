"""Dataset cards: the small YAML file beside a user's manifest (CSV or JSONL) that names its columns, the label
coding of each target, the sex, quality and laterality codings and the cohort filter. A card may also map the
FunBench fields (``laterality``, ``dr_grade``, ``abnormal``, ``conditions`` with the condition names it uses,
``findings.<lesion>``), read with the shipped readers' cell rules (``data.cells``); the generated tasks then
include the FunBench tasks those fields allow (``task.generated``). A card makes the folder a
``manifest`` dataset (``focus_eval.data.manifests`` registers it, ``focus_eval.data.readers.manifest`` reads it).
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from focus_eval.data.files import require_regular
from focus_eval.data.records import SPLITS, TARGETS
from focus_eval.errors import DataError, FocusError
from focus_eval.files import load_yaml_file
from focus_eval.registry import suggest

CARD_FILE = "dataset.yaml"
# what a card's 'manifest' may name: a CSV/JSONL manifest, or a dataset in a Hugging Face format (data/hf_sources.py)
FORMATS = ("manifest", "hf_disk", "imagefolder", "parquet")
HF_PACKAGES = ("datasets", "pyarrow")  # the hf extra: what the Hugging Face formats are read with
INSTALL_HF = "pip install 'focus-eval[hf]'"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # as task names: it becomes part of them
CARD_KEYS = ("name", "kind", "description", "version", "manifest", "columns", "targets", "sex", "quality",
             "laterality", "cohort", "conditions", "format", "data_files")
FIELDS = ("image", "patient_id", "split", "age", "sex", "quality", "laterality")
# FunBench fields a card may map in ``columns`` (read only when mapped), besides laterality
FUNBENCH_FIELDS = ("dr_grade", "abnormal", "conditions")
FINDING = re.compile(r"^findings\.([a-z][a-z0-9_]*)$")
CONDITION_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
TARGET_KEYS = ("column", "positive", "negative", "exclude", "label_rule")
DEFAULT_CODINGS = {
    "sex": {"male": ["male", "m"], "female": ["female", "f"]},
    "quality": {"adequate": ["adequate"], "inadequate": ["inadequate"]},
    "laterality": {"OD": ["OD", "R", "right"], "OS": ["OS", "L", "left"]},
    "split": {split: [split] for split in SPLITS} | {"val": ["val", "valid", "validation"]},
}
# YAML reads an unquoted yes/no as a boolean; a card means the word it wrote.
_BOOL_WORDS = {True: ("yes", "true", "y"), False: ("no", "false", "n")}


@dataclass(frozen=True)
class TargetCoding:
    """How one target is read: the manifest column and which of its codes are positive, negative or excluded."""

    target: str
    column: str
    codes: dict[str, int | None]  # code -> 1, 0 or None (excluded)
    label_rule: str


@dataclass(frozen=True)
class DatasetCard:
    """A validated card. ``manifest`` is absolute; the dataset folder is the manifest's folder."""

    name: str
    path: Path
    manifest: Path
    description: str
    version: Any
    columns: dict[str, str]
    targets: dict[str, TargetCoding]
    codings: dict[str, dict[str, str]] = field(default_factory=dict)  # field -> code -> harmonized value
    cohort: tuple[str, tuple[str, ...]] | None = None  # (column, kept codes)
    # FunBench field (dr_grade, abnormal, conditions, findings.<lesion>) -> manifest column, where mapped
    funbench: dict[str, str] = field(default_factory=dict)
    condition_names: tuple[str, ...] = ()  # the conditions a ``conditions`` cell may name (besides normal)
    laterality_mapped: bool = False  # laterality named in ``columns`` or given a coding
    format: str = "manifest"  # what 'manifest' names: a CSV/JSONL file or a dataset (data/hf_sources.py)
    # parquet and imagefolder: datasets.load_dataset's data_files (a pattern, a list, or split -> patterns)
    data_files: str | tuple[str, ...] | dict[str, tuple[str, ...]] | None = None

    @property
    def lesions(self) -> tuple[str, ...]:
        return tuple(FINDING.match(f).group(1) for f in self.funbench if FINDING.match(f))

    @property
    def folder(self) -> Path:
        return self.manifest.parent


def _codes(values: Any, where: str) -> list[str]:
    """A card's list of codes as text ('1' for 1, every spelling of a YAML boolean)."""
    values = values if isinstance(values, list) else [values]
    out: list[str] = []
    for value in values:
        if isinstance(value, bool):
            out += _BOOL_WORDS[value]
        elif isinstance(value, (str, int, float)) and str(value).strip():
            out.append(str(int(value)) if isinstance(value, float) and value.is_integer() else str(value).strip())
        else:
            raise FocusError(f"{where}: {value!r} is not a code (text or a number)")
    return out


def _target(target: str, spec: Any, path: Path) -> TargetCoding:
    where = f"{path}: targets.{target}"
    if target not in TARGETS:
        raise FocusError(f"{path}: unknown target {target!r}{suggest(target, TARGETS)} (targets: {', '.join(TARGETS)})")
    if not isinstance(spec, dict) or not spec.get("column") or "positive" not in spec or "negative" not in spec:
        raise FocusError(f"{where} needs column, positive and negative (the codes of each class)")
    unknown = sorted(set(spec) - set(TARGET_KEYS))
    if unknown:
        raise FocusError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(TARGET_KEYS)}")
    codes: dict[str, int | None] = {}
    for label, key in ((1, "positive"), (0, "negative"), (None, "exclude")):
        for code in _codes(spec.get(key, []), f"{where}.{key}"):
            if code.lower() in {c.lower() for c in codes}:
                raise FocusError(f"{where}: code {code!r} is listed twice")
            codes[code] = label
    rule = spec.get("label_rule") or _rule_text(spec["column"], codes)
    return TargetCoding(target, str(spec["column"]), codes, str(rule).strip())


def _rule_text(column: str, codes: Mapping[str, int | None]) -> str:
    def listed(label):
        return ", ".join(c for c, v in codes.items() if v == label)

    text = f"column {column}: {listed(1)} -> 1; {listed(0)} -> 0"
    return text + (f"; {listed(None)} excluded" if None in codes.values() else "") + "; any other code is an error"


def _coding(name: str, spec: Any, path: Path) -> dict[str, str]:
    """code -> harmonized value for sex, quality, laterality (the card's coding, else the default one)."""
    spec = DEFAULT_CODINGS[name] if spec is None else spec
    allowed = set(DEFAULT_CODINGS[name])
    if not isinstance(spec, dict) or set(spec) - allowed:
        raise FocusError(f"{path}: '{name}' maps each of {', '.join(sorted(allowed))} to the codes the manifest "
                         f"uses, e.g. {name}: {dict(list(DEFAULT_CODINGS[name].items())[:1])}")
    return {code: value for value, codes in spec.items() for code in _codes(codes, f"{path}: {name}.{value}")}


def _cohort(spec: Any, path: Path) -> tuple[str, tuple[str, ...]] | None:
    if spec is None:
        return None
    if not isinstance(spec, dict) or set(spec) != {"column", "values"}:
        raise FocusError(f"{path}: 'cohort' is {{column: NAME, values: [codes kept]}}")
    return str(spec["column"]), tuple(_codes(spec["values"], f"{path}: cohort.values"))


def read_card(path: Path, name: str | None = None) -> DatasetCard:
    """Read and check a card; ``name`` (from ``--dataset-path NAME=``) must agree with the card's own."""
    path = Path(os.path.realpath(path))
    require_regular(path, "dataset card")
    try:
        raw = load_yaml_file(path)
    except OSError as exc:
        raise DataError(f"cannot read the dataset card ({exc.strerror})", file=str(path)) from None
    except yaml.YAMLError as exc:
        raise DataError(f"not valid YAML: {exc}", file=str(path)) from None
    if not isinstance(raw, dict):
        raise DataError("a dataset card is a YAML mapping", file=str(path))
    unknown = sorted(set(raw) - set(CARD_KEYS))
    if unknown:
        raise FocusError(f"{path}: unknown key(s) {', '.join(unknown)}{suggest(unknown[0], CARD_KEYS)}")
    if raw.get("kind", "manifest") != "manifest":
        raise FocusError(f"{path}: kind must be 'manifest'")
    card_name = str(raw.get("name") or name or (path.parent.name if path.name == CARD_FILE else path.stem))
    if name and card_name != name:
        raise FocusError(f"{path}: the card names the dataset {card_name!r}, --dataset-path calls it {name!r}")
    if not raw.get("manifest"):
        raise FocusError(f"{path}: 'manifest' (the CSV or JSONL file, relative to the card) is required")
    if not isinstance(raw.get("targets"), dict) or not raw["targets"]:
        raise FocusError(f"{path}: 'targets' must map one or more of {', '.join(TARGETS)} to their label coding")
    columns = raw.get("columns") or {}
    funbench = _funbench_columns(columns, path)
    fmt = _format(raw.get("format", "manifest"), path)
    return DatasetCard(
        name=_checked_name(card_name, path), path=path, manifest=(path.parent / str(raw["manifest"])).resolve(),
        description=str(raw.get("description") or f"User dataset {card_name} (manifest {raw['manifest']})."),
        version=raw.get("version", 1), columns={f: str(columns.get(f, f)) for f in FIELDS},
        targets={t: _target(t, spec, path) for t, spec in raw["targets"].items()},
        codings={k: _coding(k, raw.get(k), path) for k in ("sex", "quality", "laterality")}
        | {"split": _coding("split", None, path)},
        cohort=_cohort(raw.get("cohort"), path), funbench=funbench,
        condition_names=_condition_names(raw.get("conditions"), "conditions" in funbench, path),
        laterality_mapped="laterality" in columns or raw.get("laterality") is not None,
        format=fmt, data_files=_data_files(raw.get("data_files"), fmt, path))


def _funbench_columns(columns: Any, path: Path) -> dict[str, str]:
    """The card's ``columns`` checked: FOCUS fields, FunBench fields and ``findings.<lesion>`` (lower-case
    letters, digits, '_'); returns the FunBench ones, field -> manifest column."""
    def allowed(key: str) -> bool:
        return key in FIELDS or key in FUNBENCH_FIELDS or bool(FINDING.match(key))

    if not isinstance(columns, dict) or not all(isinstance(k, str) and allowed(k) for k in columns):
        bad = [k for k in columns if not (isinstance(k, str) and allowed(k))] if isinstance(columns, dict) else []
        raise FocusError(f"{path}: 'columns' maps fields ({', '.join(FIELDS + FUNBENCH_FIELDS)}, findings.<lesion>) "
                         f"to the manifest's column names" + (f"; not a field: {', '.join(map(str, bad))}" if bad
                                                              else ""))
    return {k: str(v) for k, v in columns.items() if k not in FIELDS}


def _condition_names(spec: Any, mapped: bool, path: Path) -> tuple[str, ...]:
    """The card's ``conditions`` list (the names a ``conditions`` cell may use), required when mapped."""
    if spec is None and not mapped:
        return ()
    if not mapped:
        raise FocusError(f"{path}: 'conditions' lists condition names, but 'columns' maps no conditions column")
    if not isinstance(spec, list) or not spec or not all(isinstance(n, str) and CONDITION_NAME.match(n) for n in spec):
        raise FocusError(f"{path}: 'columns' maps conditions, so 'conditions' must list the condition names the "
                         "column uses (lower-case words joined by '_', e.g. [diabetic_retinopathy, glaucoma]); "
                         "'normal' needs no entry")
    if "normal" in spec or len(set(spec)) != len(spec):
        raise FocusError(f"{path}: 'conditions' lists each name once and leaves out 'normal' (always allowed)")
    return tuple(spec)


def _format(value: Any, path: Path) -> str:
    """The card's format; a Hugging Face format needs the ``hf`` extra installed (checked here, before anything
    is read or written)."""
    if value not in FORMATS:
        raise FocusError(f"{path}: format must be one of {', '.join(FORMATS)}{suggest(str(value), FORMATS)}")
    if value != "manifest":
        require_hf(f"{path}: format {value}")
    return str(value)


def _data_files(value: Any, fmt: str, path: Path) -> str | tuple[str, ...] | dict[str, tuple[str, ...]] | None:
    """``data_files`` as ``datasets.load_dataset`` takes it, for parquet and imagefolder: a pattern, a list of
    them, or split -> pattern(s); each relative to the dataset folder and inside it."""
    if value is None:
        return None
    where = f"{path}: data_files"
    if fmt not in ("parquet", "imagefolder"):
        raise FocusError(f"{where} is for format parquet or imagefolder (datasets.load_dataset's data_files)")

    def patterns(item: Any) -> tuple[str, ...]:
        items = [item] if isinstance(item, str) else item
        if not isinstance(items, list) or not items or not all(isinstance(i, str) and i.strip() for i in items):
            raise FocusError(f"{where}: expected a file pattern or a list of them, got {item!r}")
        for pattern in items:
            if pattern.startswith(("/", "~")) or "://" in pattern or ".." in Path(pattern).parts:
                raise FocusError(f"{where}: {pattern!r} must stay inside the dataset folder (a relative pattern "
                                 f"without '..')")
        return tuple(items)

    if isinstance(value, dict):
        if not value or not all(isinstance(k, str) and re.fullmatch(r"\w+(\.\w+)*", k) for k in value):
            raise FocusError(f"{where}: a mapping of split names (train, validation, test, ...) to file patterns")
        return {k: patterns(v) for k, v in value.items()}
    found = patterns(value)
    return found[0] if isinstance(value, str) else found


def require_hf(where: str) -> None:
    """Stop with the extra to install when ``datasets`` or ``pyarrow`` cannot be imported."""
    missing = []
    for name in HF_PACKAGES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise FocusError(f"{where} is read with Hugging Face {' and '.join(missing)}, which "
                         f"{'is' if len(missing) == 1 else 'are'} not installed: {INSTALL_HF}")


def _checked_name(name: str, path: Path) -> str:
    if not NAME_PATTERN.match(name):
        raise FocusError(f"{path}: dataset name {name!r} must be letters, digits, '_', '.' or '-'")
    return name

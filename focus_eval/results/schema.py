"""Typed records for what a run writes (SPEC section 5), and JSON helpers that never emit NaN."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable

METRICS = ("auroc", "auprc", "accuracy", "f1", "precision", "recall", "ece", "brier")
FAIRNESS_GAPS = ("dp_gap", "accuracy_gap", "tpr_gap", "fpr_gap", "eo_gap", "auroc_gap")
QUALITY_GAPS = ("accuracy_gap", "auroc_gap", "auprc_gap", "f1_gap", "ece_gap")
# Lower is better for these metric names (shown on the leaderboard, used for win/loss signs).
LOWER_IS_BETTER = {"ece", "brier"} | set(FAIRNESS_GAPS) | set(QUALITY_GAPS)


@dataclass
class SampleLine:
    """One evaluated image of one (task, method)."""

    image_id: str
    patient_id: str
    split: str
    label: int
    score: float | None
    pred: int | None
    age: float | None = None
    sex: str | None = None
    quality: str | None = None
    error: str | None = None
    # prompt method only
    p_yes: float | None = None
    p_no: float | None = None
    score_norm: float | None = None
    text: str | None = None
    parsed: bool | None = None
    # true only on lines of a --limit run (written beside the full results, never over them)
    limited: bool | None = None

    def to_dict(self, prompt: bool) -> dict[str, Any]:
        d = asdict(self)
        if not prompt:
            for k in ("p_yes", "p_no", "score_norm", "text", "parsed"):
                d.pop(k)
        if not d["limited"]:
            d.pop("limited")
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SampleLine":
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown sample keys: {sorted(unknown)}")
        return cls(**d)


@dataclass
class ResultLine:
    """One (task, method) of one model: metrics, intervals, fairness and robustness gaps."""

    model: str
    family: str
    domain: str
    untrained: bool
    method: str
    task: str
    dataset: str
    target: str
    proxy: bool
    adapter: str | None
    n: int
    n_pos: int
    n_valid: int
    n_unparsed: int
    n_errors: int
    metrics: dict[str, float | None]
    ci: dict[str, list[float | None]]
    ci_method: str
    n_boot: int
    fairness: dict[str, dict[str, Any]]
    robustness: dict[str, dict[str, Any]]
    task_version: str | int | float | None
    task_hash: str
    preset_hash: str
    created: str
    underpowered: bool = False
    limited: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ResultLine":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


# The descriptive fields a results line copies from its unit's meta record, as they are.
DESCRIPTIVE = ("model", "family", "domain", "untrained", "method", "task", "dataset", "target", "proxy",
               "adapter", "task_version", "task_hash", "preset_hash")


@dataclass
class UnitMeta:
    """The record written beside one unit's sample file: who and what was evaluated, the settings that steer
    scoring, and the fingerprint a finished unit must match to be skipped on resume.

    On disk it is one flat JSON object; keys that are not fields here (the run options that change numbers,
    adapter training provenance) form ``fingerprint`` and are copied into the results line's ``extra``."""

    model: str
    family: str
    domain: str
    untrained: bool
    method: str
    task: str
    dataset: str
    target: str
    proxy: bool
    adapter: str | None
    task_version: str | int | float | None
    task_hash: str
    preset_hash: str
    threshold_rule: str | None = None
    age_threshold: float | None = None
    n_boot: int | None = None
    seed: int | None = None
    created: str | None = None
    n_expected: int | None = None
    contamination: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    fingerprint: dict[str, Any] = field(default_factory=dict)

    @property
    def stem(self) -> str:
        return f"{self.task}.{self.method}"

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "fingerprint"}
        for key, value in self.fingerprint.items():
            d.setdefault(key, value)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "UnitMeta":
        """Validated record; ValueError lists what is missing or malformed."""
        if not isinstance(d, dict):
            raise ValueError(f"expected an object, got {type(d).__name__}")
        missing = [k for k in DESCRIPTIVE if k not in d]
        if missing:
            raise ValueError(f"meta lacks {', '.join(missing)}")
        named = {f.name for f in fields(cls)} - {"fingerprint"}
        meta = cls(**{k: v for k, v in d.items() if k in named},
                   fingerprint={k: v for k, v in d.items() if k not in named})
        meta.validate()
        return meta

    def validate(self) -> None:
        problems = [f"{k}: expected a string, got {getattr(self, k)!r}"
                    for k in ("model", "family", "domain", "method", "task", "dataset", "target", "task_hash",
                              "preset_hash") if not isinstance(getattr(self, k), str)]
        problems += [f"{k}: expected true/false, got {getattr(self, k)!r}"
                     for k in ("untrained", "proxy") if not isinstance(getattr(self, k), bool)]
        problems += [f"{k}: expected a count, got {getattr(self, k)!r}" for k in ("n_boot", "n_expected")
                     if getattr(self, k) is not None and not (_is_int(getattr(self, k)) and getattr(self, k) >= 0)]
        if self.adapter is not None and not isinstance(self.adapter, str):
            problems.append(f"adapter: expected a string or null, got {self.adapter!r}")
        if not isinstance(self.extra, dict):
            problems.append("extra: expected an object")
        if problems:
            raise ValueError("; ".join(problems))


def clean_json(value: Any) -> Any:
    """Recursively replace NaN/inf with None and numpy scalars with Python numbers."""
    if isinstance(value, dict):
        return {str(k): clean_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_json(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and not isinstance(value, (str, bytes)):
        try:
            value = value.item()
        except (ValueError, TypeError):
            pass
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    return value


def dumps(value: Any) -> str:
    """One JSON line; NaN is impossible (allow_nan=False after cleaning)."""
    return json.dumps(clean_json(value), allow_nan=False, ensure_ascii=False, sort_keys=False)


def write_jsonl(path: Path, rows: Iterable[Any]) -> None:
    """Write a JSON Lines file atomically (see ``focus_eval.files``)."""
    from focus_eval.files import atomic_write_text, jsonl_text

    atomic_write_text(path, jsonl_text(rows, dumps))


def read_jsonl(path: Path, *, skip_bad: bool = False, bad: list | None = None) -> list[dict[str, Any]]:
    """Every row of a JSON Lines file. A line that is not valid JSON (a torn last line included) is an error
    naming the file and line, or, with ``skip_bad``, left out and listed in ``bad`` as (line, reason)."""
    from focus_eval.files import read_jsonl_rows

    rows = []
    for number, row, problem in read_jsonl_rows(path):
        if problem is None:
            rows.append(row)
        elif skip_bad:
            if bad is not None:
                bad.append((number, problem))
        else:
            raise ValueError(f"{path}, line {number}: {problem}")
    return rows


# Validation of written records against the key lists above (SPEC section 5); used by tests and `score`.

SAMPLE_KEYS = ("image_id", "patient_id", "split", "label", "score", "pred", "age", "sex", "quality", "error")
PROMPT_SAMPLE_KEYS = SAMPLE_KEYS + ("p_yes", "p_no", "score_norm", "text", "parsed")
RESULT_KEYS = tuple(f.name for f in fields(ResultLine))
# keys a results line may lack (lines written before they existed read as false)
OPTIONAL_RESULT_KEYS = ("limited",)
FAIRNESS_KEYS = {"age": ("threshold", "n_min") + FAIRNESS_GAPS, "sex": ("n_min",) + FAIRNESS_GAPS}
ROBUSTNESS_KEYS = {"quality": ("n_min",) + QUALITY_GAPS}
CI_METHODS = ("patient_bootstrap", "image_bootstrap")
_SPLITS = ("train", "val", "test")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _non_finite(value: Any, where: str) -> list[str]:
    if isinstance(value, float) and not math.isfinite(value):
        return [f"{where}: {value} is not valid JSON (use null)"]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _non_finite(v, f"{where}.{k}")]
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value) for p in _non_finite(v, f"{where}[{i}]")]
    return []


def _interval_problems(value: Any, where: str) -> list[str]:
    if not (isinstance(value, list) and len(value) == 2 and all(v is None or _is_number(v) for v in value)):
        return [f"{where}: expected [low, high] of numbers or nulls, got {value!r}"]
    return []


def _exact_keys(d: Any, keys: Iterable[str], where: str, optional: Iterable[str] = ()) -> list[str]:
    if not isinstance(d, dict):
        return [f"{where}: expected an object, got {type(d).__name__}"]
    keys, optional = list(keys), set(optional)
    problems = [f"{where}: missing key {k!r}" for k in keys if k not in d]
    problems += [f"{where}: unknown key {k!r}" for k in d if k not in keys and k not in optional]
    return problems


def _gap_block_problems(block: Any, keys: tuple[str, ...], where: str) -> list[str]:
    gaps = [k for k in keys if k.endswith("_gap")]
    problems = _exact_keys(block, keys, where, optional=[f"{g}_ci" for g in gaps])
    if problems:
        return problems
    for key, value in block.items():
        if key == "n_min":
            ok = value is None or (_is_int(value) and value >= 0)
        elif key.endswith("_ci"):
            problems += _interval_problems(value, f"{where}.{key}")
            continue
        else:
            ok = value is None or _is_number(value)
        if not ok:
            problems.append(f"{where}.{key}: bad value {value!r}")
    return problems


def validate_result_dict(d: dict[str, Any]) -> None:
    """Raise ValueError listing every way ``d`` departs from the results-line contract."""
    problems = _exact_keys(d, [k for k in RESULT_KEYS if k not in OPTIONAL_RESULT_KEYS], "result",
                           optional=OPTIONAL_RESULT_KEYS)
    if problems:
        raise ValueError("; ".join(problems))
    for key in ("model", "family", "domain", "method", "task", "dataset", "target", "task_hash", "preset_hash",
                "created"):
        if not isinstance(d[key], str):
            problems.append(f"{key}: expected a string, got {d[key]!r}")
    for key in ("untrained", "proxy", "underpowered", "limited"):
        if key in d and not isinstance(d[key], bool):
            problems.append(f"{key}: expected true/false, got {d[key]!r}")
    if d["adapter"] is not None and not isinstance(d["adapter"], str):
        problems.append(f"adapter: expected a string or null, got {d['adapter']!r}")
    for key in ("n", "n_pos", "n_valid", "n_unparsed", "n_errors", "n_boot"):
        if not (_is_int(d[key]) and d[key] >= 0):
            problems.append(f"{key}: expected a count, got {d[key]!r}")
    if d["task_version"] is not None and not isinstance(d["task_version"], (str, int, float)):
        problems.append(f"task_version: bad value {d['task_version']!r}")
    if d["ci_method"] not in CI_METHODS:
        problems.append(f"ci_method: expected one of {CI_METHODS}, got {d['ci_method']!r}")
    problems += _exact_keys(d["metrics"], METRICS, "metrics") or [
        f"metrics.{k}: bad value {v!r}" for k, v in d["metrics"].items() if not (v is None or _is_number(v))]
    problems += _exact_keys(d["ci"], METRICS, "ci") or [
        p for k, v in d["ci"].items() for p in _interval_problems(v, f"ci.{k}")]
    for name, layout in (("fairness", FAIRNESS_KEYS), ("robustness", ROBUSTNESS_KEYS)):
        problems += _exact_keys(d[name], layout, name) or [
            p for attr, keys in layout.items() for p in _gap_block_problems(d[name][attr], keys, f"{name}.{attr}")]
    if not isinstance(d["extra"], dict):
        problems.append("extra: expected an object")
    problems += _non_finite(d, "result")
    if problems:
        raise ValueError("; ".join(problems))


GROUP_KEYS = ("kind", "group", "model", "family", "domain", "untrained", "method", "adapter", "members", "tasks",
              "excluded", "missing", "aggregation", "include_proxy", "metrics", "ci", "coverage", "ci_method",
              "n_boot", "limited", "created")


def validate_group_dict(d: dict[str, Any]) -> None:
    """Raise ValueError listing every way ``d`` departs from the group-line contract."""
    problems = _exact_keys(d, GROUP_KEYS, "group line")
    if problems:
        raise ValueError("; ".join(problems))
    if d["kind"] != "group":
        problems.append(f"kind: expected 'group', got {d['kind']!r}")
    for key in ("members", "tasks", "missing"):
        if not (isinstance(d[key], list) and all(isinstance(t, str) for t in d[key])):
            problems.append(f"{key}: expected a list of task names")
    problems += _exact_keys(d["metrics"], METRICS, "metrics") or [
        f"metrics.{k}: bad value {v!r}" for k, v in d["metrics"].items() if not (v is None or _is_number(v))]
    problems += _exact_keys(d["ci"], METRICS, "ci") or [
        p for k, v in d["ci"].items() for p in _interval_problems(v, f"ci.{k}")]
    problems += _non_finite(d, "group line")
    if problems:
        raise ValueError("; ".join(problems))


def validate_sample_dict(d: dict[str, Any], prompt: bool | None = None) -> None:
    """Raise ValueError listing every way ``d`` departs from the sample-line contract; ``prompt`` None means
    "decide from the keys" (prompt rows carry ``parsed``)."""
    if prompt is None:
        prompt = isinstance(d, dict) and "parsed" in d
    problems = _exact_keys(d, PROMPT_SAMPLE_KEYS if prompt else SAMPLE_KEYS, "sample", optional=("limited",))
    if problems:
        raise ValueError("; ".join(problems))
    checks = {
        "image_id": lambda v: isinstance(v, str) and v != "",
        "patient_id": lambda v: isinstance(v, str) and v != "",
        "split": lambda v: v in _SPLITS,
        "label": lambda v: _is_int(v) and v in (0, 1),
        "score": lambda v: v is None or (_is_number(v) and 0.0 <= v <= 1.0),
        "pred": lambda v: v is None or (_is_int(v) and v in (0, 1)),
        "age": lambda v: v is None or _is_number(v),
        "sex": lambda v: v is None or v in ("male", "female"),
        "quality": lambda v: v is None or v in ("adequate", "inadequate"),
        "error": lambda v: v is None or isinstance(v, str),
        "p_yes": lambda v: v is None or (_is_number(v) and 0.0 <= v <= 1.0),
        "p_no": lambda v: v is None or (_is_number(v) and 0.0 <= v <= 1.0),
        "score_norm": lambda v: v is None or (_is_number(v) and 0.0 <= v <= 1.0),
        "text": lambda v: v is None or isinstance(v, str),
        "parsed": lambda v: v is None or isinstance(v, bool),
        "limited": lambda v: v is True,
    }
    problems = [f"{k}: bad value {d[k]!r}" for k, check in checks.items() if k in d and not check(d[k])]
    problems += _non_finite(d, "sample")
    if problems:
        raise ValueError("; ".join(problems))

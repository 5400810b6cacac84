"""Typed records for what a run writes (SPEC section 5), and JSON helpers that never emit NaN."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable

METRICS = ("auroc", "auprc", "accuracy", "f1", "precision", "recall", "ece", "brier")
# The metrics of a multi-class or multi-label task (docs/TASKS.md): funbench_f1 is FunBench's F1 (the
# harmonic mean of sensitivity and specificity, averaged over classes).
CLASS_METRICS = ("accuracy", "funbench_f1", "macro_precision", "macro_recall", "macro_f1", "qw_kappa",
                 "macro_auroc", "ece", "brier")
OUTPUT_TYPES = ("binary", "multiclass", "multilabel", "multiple_choice")
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
    # Lines of multi-class and multi-label tasks only (binary lines never carry these keys). ``label`` and
    # ``pred`` are then class indices into the task's classes (a sorted list of them for multi-answer labels;
    # pred null when nothing could be read from an answer), ``probs`` one probability per class.
    output_type: str | None = None
    probs: list[float] | None = None
    # multiple-choice questions: the rendered question, the classes shown as options A, B, ... in that order,
    # the correct letters, the seed of the option order, and how the answer was read (letter, embedding, or
    # null for an unparsed answer)
    question: str | None = None
    options: list[int] | None = None
    answer: str | None = None
    option_seed: int | None = None
    decided_by: str | None = None

    def to_dict(self, prompt: bool) -> dict[str, Any]:
        d = asdict(self)
        if self.output_type is None:
            drop = CLASS_SAMPLE_ONLY + QUESTION_FIELDS + (() if prompt else BINARY_PROMPT_FIELDS + ANSWER_FIELDS)
        else:
            drop = BINARY_PROMPT_FIELDS + (() if prompt else ANSWER_FIELDS + QUESTION_FIELDS)
        for k in drop:
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
    # multi-class, multi-label and multiple-choice tasks only: ``metrics`` and ``ci`` then hold CLASS_METRICS,
    # ``n_pos`` counts rows whose label is not the first class, and ``extra`` holds classes, the confusion
    # matrix and the random-guess baseline
    output_type: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["output_type"] is None:
            d.pop("output_type")
        return d

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
BINARY_PROMPT_FIELDS = ("p_yes", "p_no", "score_norm")
ANSWER_FIELDS = ("text", "parsed")
CLASS_SAMPLE_ONLY = ("output_type", "probs")
QUESTION_FIELDS = ("question", "options", "answer", "option_seed", "decided_by")
PROMPT_SAMPLE_KEYS = SAMPLE_KEYS + BINARY_PROMPT_FIELDS + ANSWER_FIELDS
CLASS_SAMPLE_KEYS = SAMPLE_KEYS + CLASS_SAMPLE_ONLY
QUESTION_SAMPLE_KEYS = CLASS_SAMPLE_KEYS + ANSWER_FIELDS + QUESTION_FIELDS
DECIDED_BY = ("letter", "embedding")
RESULT_KEYS = tuple(f.name for f in fields(ResultLine))
# keys a results line may lack (lines written before they existed read as false; binary lines have no
# output_type)
OPTIONAL_RESULT_KEYS = ("limited", "output_type")
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
    output_type = d.get("output_type", "binary")
    if output_type not in OUTPUT_TYPES[1:] and "output_type" in d:
        problems.append(f"output_type: expected one of {OUTPUT_TYPES[1:]} (binary lines have none), "
                        f"got {output_type!r}")
    problems += _metric_problems(d, CLASS_METRICS if "output_type" in d else METRICS)
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


def _metric_problems(d: dict[str, Any], names: tuple[str, ...]) -> list[str]:
    """Problems of a line's ``metrics`` and ``ci`` blocks, which must hold exactly ``names``."""
    problems = _exact_keys(d["metrics"], names, "metrics") or [
        f"metrics.{k}: bad value {v!r}" for k, v in d["metrics"].items() if not (v is None or _is_number(v))]
    problems += _exact_keys(d["ci"], names, "ci") or [
        p for k, v in d["ci"].items() for p in _interval_problems(v, f"ci.{k}")]
    return problems


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
    # a group of multi-class tasks reports their metrics
    class_group = isinstance(d["metrics"], dict) and "funbench_f1" in d["metrics"]
    problems += _metric_problems(d, CLASS_METRICS if class_group else METRICS)
    problems += _non_finite(d, "group line")
    if problems:
        raise ValueError("; ".join(problems))


def _is_class(v: Any) -> bool:
    return _is_int(v) and v >= 0


def _is_class_set(v: Any) -> bool:
    return isinstance(v, list) and all(_is_class(c) for c in v) and v == sorted(set(v))


def _is_probability(v: Any) -> bool:
    return v is None or (_is_number(v) and 0.0 <= v <= 1.0)


_SAMPLE_CHECKS = {
    "image_id": lambda v: isinstance(v, str) and v != "",
    "patient_id": lambda v: isinstance(v, str) and v != "",
    "split": lambda v: v in _SPLITS,
    "label": lambda v: _is_int(v) and v in (0, 1),
    "score": _is_probability,
    "pred": lambda v: v is None or (_is_int(v) and v in (0, 1)),
    "age": lambda v: v is None or _is_number(v),
    "sex": lambda v: v is None or v in ("male", "female"),
    "quality": lambda v: v is None or v in ("adequate", "inadequate"),
    "error": lambda v: v is None or isinstance(v, str),
    "p_yes": _is_probability,
    "p_no": _is_probability,
    "score_norm": _is_probability,
    "text": lambda v: v is None or isinstance(v, str),
    "parsed": lambda v: v is None or isinstance(v, bool),
    "limited": lambda v: v is True,
}
# the checks that differ on the lines of multi-class, multi-label and multiple-choice tasks
_CLASS_SAMPLE_CHECKS = {
    **_SAMPLE_CHECKS,
    "label": lambda v: _is_class(v) or (_is_class_set(v) and len(v) > 0),
    "pred": lambda v: v is None or _is_class(v) or _is_class_set(v),
    "output_type": lambda v: v in OUTPUT_TYPES[1:],
    "probs": lambda v: v is None or (isinstance(v, list) and all(_is_probability(p) and p is not None for p in v)),
    "question": lambda v: v is None or isinstance(v, str),
    "options": lambda v: v is None or (isinstance(v, list) and all(_is_class(c) for c in v)
                                       and len(set(v)) == len(v)),
    "answer": lambda v: v is None or isinstance(v, str),
    "option_seed": lambda v: v is None or _is_int(v),
    "decided_by": lambda v: v is None or v in DECIDED_BY,
}


def validate_sample_dict(d: dict[str, Any], prompt: bool | None = None) -> None:
    """Raise ValueError listing every way ``d`` departs from the sample-line contract; ``prompt`` None means
    "decide from the keys" (prompt rows carry ``parsed``). A line with ``output_type`` is a line of a
    multi-class, multi-label or multiple-choice task."""
    if prompt is None:
        prompt = isinstance(d, dict) and "parsed" in d
    classes = isinstance(d, dict) and "output_type" in d
    if classes:
        keys, checks = (QUESTION_SAMPLE_KEYS if prompt else CLASS_SAMPLE_KEYS), _CLASS_SAMPLE_CHECKS
    else:
        keys, checks = (PROMPT_SAMPLE_KEYS if prompt else SAMPLE_KEYS), _SAMPLE_CHECKS
    problems = _exact_keys(d, keys, "sample", optional=("limited",))
    if problems:
        raise ValueError("; ".join(problems))
    problems = [f"{k}: bad value {d[k]!r}" for k, check in checks.items() if k in d and not check(d[k])]
    if classes and isinstance(d.get("probs"), list):
        largest = max([d["label"]] if _is_int(d["label"]) else d["label"] or [0])
        if len(d["probs"]) <= largest:
            problems.append(f"probs: {len(d['probs'])} class probabilities, but label {d['label']!r} is class "
                            f"{largest}")
    problems += _non_finite(d, "sample")
    if problems:
        raise ValueError("; ".join(problems))

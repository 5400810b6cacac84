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
    # where the answer was matched to the options by sentence embedding: the best option's cosine similarity
    # and its margin over the second best (an answer below the floor stays unparsed, with these recorded)
    match_similarity: float | None = None
    match_margin: float | None = None

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
class Evaluated:
    """Who and what one unit evaluated: the descriptive fields a unit's meta record and its results line share
    (a results line copies them from its meta record as they are)."""

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


DESCRIPTIVE = tuple(f.name for f in fields(Evaluated))


@dataclass
class ResultLine(Evaluated):
    """One (task, method) of one model: metrics, intervals, fairness and robustness gaps."""

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
    created: str
    underpowered: bool = False
    limited: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    # multi-class, multi-label and multiple-choice tasks only: ``metrics`` and ``ci`` then hold CLASS_METRICS,
    # ``n_pos`` counts rows whose label is not the first class, and ``extra`` holds classes, the confusion
    # matrix and the random-guess baseline
    output_type: str | None = None
    # prompt methods only (their sample lines carry the answer text): rows whose answer could be read, and
    # n_answered / n (null when n is 0); results.power.COVERAGE_FLOOR decides which lines are ranked
    n_answered: int | None = None
    coverage: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d = {k: d[k] for k in RESULT_KEYS}
        for key in ("output_type", "n_answered", "coverage"):
            if d[key] is None:
                d.pop(key)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ResultLine":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


# A results line's keys in the order it is written (the descriptive fields keep their places among the others).
RESULT_KEYS = ("model", "family", "domain", "untrained", "method", "task", "dataset", "target", "proxy", "adapter",
               "n", "n_pos", "n_valid", "n_unparsed", "n_answered", "coverage", "n_errors", "metrics", "ci",
               "ci_method", "n_boot", "fairness",
               "robustness", "task_version", "task_hash", "preset_hash", "created", "underpowered", "limited",
               "extra", "output_type")


@dataclass
class UnitMeta(Evaluated):
    """The record written beside one unit's sample file: who and what was evaluated, the settings that steer
    scoring, and the fingerprint a finished unit must match to be skipped on resume.

    On disk it is one flat JSON object; keys that are not fields here (the run options that change numbers,
    adapter training provenance) form ``fingerprint`` and are copied into the results line's ``extra``."""

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
QUESTION_FIELDS = ("question", "options", "answer", "option_seed", "decided_by", "match_similarity", "match_margin")
PROMPT_SAMPLE_KEYS = SAMPLE_KEYS + BINARY_PROMPT_FIELDS + ANSWER_FIELDS
CLASS_SAMPLE_KEYS = SAMPLE_KEYS + CLASS_SAMPLE_ONLY
QUESTION_SAMPLE_KEYS = CLASS_SAMPLE_KEYS + ANSWER_FIELDS + QUESTION_FIELDS
DECIDED_BY = ("letter", "embedding")
# keys a results line may lack (lines written before they existed read as false; binary lines have no
# output_type)
OPTIONAL_RESULT_KEYS = ("limited", "output_type", "n_answered", "coverage")
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
    if "n_answered" in d and not (_is_int(d["n_answered"]) and 0 <= d["n_answered"] <= d["n"]):
        problems.append(f"n_answered: expected a count up to n, got {d['n_answered']!r}")
    if "coverage" in d and not (d["coverage"] is None or (_is_number(d["coverage"]) and 0 <= d["coverage"] <= 1)):
        problems.append(f"coverage: expected a share between 0 and 1 or null, got {d['coverage']!r}")
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
    "match_similarity": lambda v: v is None or (_is_number(v) and -1.0 <= v <= 1.0),
    "match_margin": lambda v: v is None or (_is_number(v) and 0.0 <= v <= 2.0),
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
    # lines written before the embedding match recorded its similarity lack those keys
    problems = _exact_keys(d, keys, "sample", optional=("limited", "match_similarity", "match_margin"))
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


# ----- group lines and comparison lines: one record for the side that writes them and the side that reads them


@dataclass(kw_only=True)
class GroupLine:
    """A group's line in results.jsonl (``"kind": "group"``): one configuration's macro mean over the group's
    member tasks, with its interval (written by ``group_scores``, read by the leaderboard)."""

    group: str
    model: str
    method: str
    metrics: dict[str, Any]
    ci: dict[str, Any] = field(default_factory=dict)
    family: str | None = None
    domain: str | None = None
    untrained: bool | None = None
    adapter: str | None = None
    members: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    excluded: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    aggregation: str = "macro_mean"
    include_proxy: bool = False
    coverage: dict[str, int] = field(default_factory=dict)
    ci_method: str | None = None
    n_boot: int | None = None
    limited: bool = False
    created: str | None = None

    kind = "group"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **{k: getattr(self, k) for k in GROUP_KEYS[1:]}}

    @classmethod
    def from_dict(cls, d: Any) -> "GroupLine":
        """The line as a reader takes it: ``model``, ``group`` (or ``task``) and ``metrics`` are required, the
        member list may be named ``tasks`` or ``members``; ValueError says what is missing."""
        name = d.get("group") or d.get("task") if isinstance(d, dict) else None
        if not (isinstance(name, str) and isinstance(d.get("model"), str) and isinstance(d.get("metrics"), dict)):
            raise ValueError("a group line needs model, group and metrics")
        tasks = d.get("tasks") or d.get("members") or []
        optional = {k: d[k] for k in ("family", "domain", "untrained", "excluded", "missing", "aggregation",
                                      "include_proxy", "coverage", "ci_method", "n_boot", "created")
                    if d.get(k) is not None}
        return cls(group=name, model=d["model"], method=str(d.get("method") or ""), adapter=d.get("adapter"),
                   metrics=d["metrics"], ci=d.get("ci") or {}, limited=d.get("limited") is True,
                   tasks=[str(t) for t in tasks] if isinstance(tasks, list) else [],
                   members=[str(t) for t in d["members"]] if isinstance(d.get("members"), list) else [],
                   **optional)


COMPARE_TEXT = ("adapter", "base_model", "model", "train_dataset", "target", "test_task", "test_dataset", "metric")
COMPARE_NUMBERS = ("base", "ft", "delta", "p", "q", "n", "n_pos", "n_boot")
SUMMARY_TEXT = ("metric", "domain")
SUMMARY_NUMBERS = ("mean_delta", "p", "q", "n_comparisons")
Interval = tuple[float | None, float | None]


@dataclass(kw_only=True)
class CompareLine:
    """One (adapter, test task, metric) delta of a fine-tuned model against its base model, as ``focus-eval
    compare`` writes it (``"kind": "delta"``). Read back, every key but ``metric`` may be missing."""

    metric: str
    adapter: str | None = None
    base_model: str | None = None
    model: str | None = None
    train_dataset: str | None = None
    target: str | None = None
    test_task: str | None = None
    test_dataset: str | None = None
    in_domain: bool | None = None
    method: str | None = None
    base: float | None = None
    ft: float | None = None
    delta: float | None = None
    ci: Interval | None = None
    p: float | None = None
    q: float | None = None
    n: float | None = None
    n_pos: float | None = None
    n_boot: float | None = None
    seed: int | None = None
    ci_method: str | None = None
    p_method: str | None = None
    proxy: bool | None = None
    underpowered: bool | None = None
    n_unpaired: int | None = None
    n_label_mismatch: int | None = None

    kind = "delta"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **_ordered(self, DELTA_KEYS)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CompareLine":
        """Checked values: a text or a number of the wrong type is a ValueError naming the key. A line without
        ``in_domain`` that names both datasets is in-domain when they are equal (SPEC section 6)."""
        values = _checked(d, COMPARE_TEXT, COMPARE_NUMBERS)
        in_domain, flagged = (_flag(d, key) for key in ("in_domain", "underpowered"))
        if in_domain is None and values["train_dataset"] and values["test_dataset"]:
            in_domain = values["train_dataset"] == values["test_dataset"]
        rest = {k: d.get(k) for k in ("method", "seed", "ci_method", "p_method", "proxy", "n_unpaired",
                                      "n_label_mismatch")}
        return cls(**values, **rest, in_domain=in_domain, underpowered=flagged, ci=_interval(d))


@dataclass(kw_only=True)
class CompareSummaryLine:
    """The mean delta over the comparisons of one metric and domain (in-domain or OOD), as ``focus-eval compare``
    writes it (``"kind": "summary"``). Read back, every key but ``metric`` may be missing."""

    metric: str
    domain: str = "unknown"
    mean_delta: float | None = None
    ci: Interval | None = None
    p: float | None = None
    q: float | None = None
    n_comparisons: float | None = None
    win_rate: float | None = None
    n_boot: int | None = None
    n_boot_used: int | None = None
    seed: int | None = None
    resampling: str | None = None
    p_method: str | None = None
    included: str | None = None
    adapters: list[str] = field(default_factory=list)
    test_tasks: list[str] = field(default_factory=list)

    kind = "summary"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **_ordered(self, SUMMARY_KEYS)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CompareSummaryLine":
        values = _checked(d, SUMMARY_TEXT, SUMMARY_NUMBERS)
        values["domain"] = values["domain"] or "unknown"
        rest = {k: d[k] for k in ("win_rate", "n_boot", "n_boot_used", "seed", "resampling", "p_method", "included",
                                  "adapters", "test_tasks") if d.get(k) is not None}
        return cls(**values, **rest, ci=_interval(d))


# the keys in the order ``focus-eval compare`` writes them, after ``kind``
DELTA_KEYS = ("adapter", "base_model", "model", "train_dataset", "target", "test_task", "test_dataset", "in_domain",
              "method", "metric", "base", "ft", "delta", "ci", "p", "q", "n", "n_pos", "n_boot", "seed", "ci_method",
              "p_method", "proxy", "underpowered", "n_unpaired", "n_label_mismatch")
SUMMARY_KEYS = ("metric", "domain", "mean_delta", "ci", "p", "q", "n_comparisons", "win_rate", "n_boot",
                "n_boot_used", "seed", "resampling", "p_method", "included", "adapters", "test_tasks")


def _ordered(record: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    d = {k: getattr(record, k) for k in keys}
    if d["ci"] is not None:
        d["ci"] = list(d["ci"])
    return d


def _checked(d: dict[str, Any], texts: tuple[str, ...], numbers: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(d.get("metric"), str) or not d["metric"]:
        raise ValueError("a comparison line needs a 'metric' name")
    values: dict[str, Any] = {}
    for key in texts:
        value = d.get(key)
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{key!r} must be text, got {value!r}")
        values[key] = value
    for key in numbers:
        values[key] = _finite_or_none(d.get(key), key)
    return values


def _flag(d: dict[str, Any], key: str) -> bool | None:
    value = d.get(key)
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"{key!r} must be true or false, got {value!r}")
    return value


def _interval(d: dict[str, Any]) -> Interval | None:
    pair = d.get("ci")
    if pair is None:
        return None
    if not isinstance(pair, list) or len(pair) != 2:
        raise ValueError(f"'ci' must be [low, high], got {pair!r}")
    return (_finite_or_none(pair[0], "ci"), _finite_or_none(pair[1], "ci"))


def _finite_or_none(value: Any, key: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{key!r} must be a finite number or null, got {value!r}")
    return value

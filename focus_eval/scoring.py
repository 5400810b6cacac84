"""Sample lines + unit meta -> one results line (metrics, bootstrap intervals, fairness, robustness), and the one
path that writes it into results.jsonl, used by the runner and by ``focus-eval score``. It sits above both the
metrics (plain functions) and the output store (plain I/O).

Counting rules:
- n: rows; n_pos: rows with label 1; n_errors: rows with an error; n_unparsed: prompt rows with parsed false.
- n_valid: rows usable by the score metrics (no error, a score): auroc, auprc, brier, ece.
- Threshold metrics (precision, recall, f1) use rows with no error and a pred that was parsed; their count is
  ``extra.n_threshold``. Accuracy also counts the unparsed rows, as wrong answers. Each method states its
  hard-label rule (``extra.threshold_rule``, from the unit meta); for the prompt method it is the first yes/no of the generated text, while score = p_yes
  feeds the score metrics. Lines that carry prompt fields get the prompt diagnostics.
- underpowered: fewer than 10 positives among the rows (``results.power``).
- Intervals: percentile bootstrap over patients when some image's patient id differs from its image id
  ("patient_bootstrap"), over images otherwise ("image_bootstrap"); n_boot and seed come from meta.
- Prompt methods (lines whose samples carry the answer text): n_answered = rows whose answer was read,
  coverage = n_answered / n (``results.power.COVERAGE_FLOOR`` decides ranking). The primary score counts an
  unread answer as wrong (binary accuracy, FunBench F1); AUROC stays on the rows with a score (``p_yes`` of
  every row, or the class probabilities), which ``n_valid`` counts.
All rows of one call must come from one split (the evaluated one, normally test).

A unit whose meta names a non-binary output type (extra.output_type, with its classes) is scored by
``metrics.classes``: CLASS_METRICS, n_pos = rows whose label is not the first class, n_valid = rows with class
probabilities, every row without an error counted by the hard-label metrics (an unanswered row is a miss), and
extra.confusion_matrix, extra.random_guess and extra.class_counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from focus_eval.errors import FocusError
from focus_eval.files import locked
from focus_eval.metrics.arrays import SampleArrays, metric_batch
from focus_eval.metrics.bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, bootstrap_weights, ci_method, summarize
from focus_eval.metrics.classes import class_spec
from focus_eval.metrics.fairness import fairness
from focus_eval.metrics.robustness import robustness
from focus_eval.results import store
from focus_eval.results.layout import OutputLayout
from focus_eval.results.power import underpowered
from focus_eval.results.schema import DESCRIPTIVE, METRICS, ResultLine, UnitMeta

LOW_MASS = 0.5
# meta fields that steer the computation; every other meta field and fingerprint item, and the items of
# meta.extra, are copied into the results line's extra (computed entries win on a clash)
CONTROLS = ("age_threshold", "n_boot", "seed", "created", "n_expected", "threshold_rule", "extra")
PROMPT_FIELDS = ("p_yes", "p_no", "score_norm", "text", "parsed")


def _split_of(samples: Sequence[Any]) -> str | None:
    splits = {s.get("split") if isinstance(s, dict) else s.split for s in samples}
    if len(splits) > 1:
        raise ValueError(f"samples mix splits {sorted(map(str, splits))}; evaluate one split at a time")
    return next(iter(splits)) if splits else None


def _prompt_extra(samples: Sequence[Any], arrays: SampleArrays) -> dict[str, Any]:
    """Agreement of the two decision rules and the yes/no probability mass of the first token."""
    def get(s, name):
        return s.get(name) if isinstance(s, dict) else getattr(s, name, None)

    p_yes = np.array([np.nan if get(s, "p_yes") is None else get(s, "p_yes") for s in samples], dtype=float)
    p_no = np.array([np.nan if get(s, "p_no") is None else get(s, "p_no") for s in samples], dtype=float)
    mass = p_yes + p_no
    known = np.isfinite(mass) & ~arrays.error
    with np.errstate(divide="ignore", invalid="ignore"):
        first_token_yes = p_yes >= p_no
    both = known & arrays.has_pred
    return {
        "yes_no_agreement": float(np.mean(arrays.pred[both] == first_token_yes[both])) if both.any() else None,
        "agreement_rule": "pred vs p_yes >= p_no (score_norm >= 0.5)",
        "yes_no_mass_mean": float(mass[known].mean()) if known.any() else None,
        "low_mass_share": float(np.mean(mass[known] < LOW_MASS)) if known.any() else None,
        "low_mass_threshold": LOW_MASS,
        "unparsed_rate": float(arrays.unparsed.mean()) if arrays.n else None,
    }


def carries_prompt_fields(samples: Sequence[Any]) -> bool:
    """Whether the lines hold a prompt method's fields (p_yes, parsed, ...): they decide the diagnostics and
    the coverage. A written prompt line keeps its ``parsed`` key even when the row failed."""
    for s in samples:
        values = [s.get(k) for k in PROMPT_FIELDS] if isinstance(s, dict) else [getattr(s, k, None) for k in PROMPT_FIELDS]
        if any(v is not None for v in values) or (isinstance(s, dict) and "parsed" in s):
            return True
    return False


def answer_coverage(n: int, n_answered: int) -> dict[str, Any]:
    """A prompt line's ``n_answered`` and ``coverage`` (null for an empty unit)."""
    return {"n_answered": int(n_answered), "coverage": float(n_answered / n) if n else None}


def as_meta(meta: UnitMeta | dict[str, Any]) -> UnitMeta:
    return meta if isinstance(meta, UnitMeta) else UnitMeta.from_dict(meta)


def copied_extra(meta: UnitMeta) -> dict[str, Any]:
    """The meta entries a results line keeps in its extra: options, provenance and the method's own notes."""
    flat = meta.to_dict()
    others = {k: v for k, v in flat.items() if k not in DESCRIPTIVE and k not in CONTROLS
              and not (k == "contamination" and v is None)}
    return {**others, **(meta.extra or {})}


def _binary_part(samples: Sequence[Any], meta: UnitMeta, weights_of) -> dict[str, Any]:
    """The results-line fields that depend on the samples, for a binary unit."""
    arrays = SampleArrays.from_samples(samples)
    weights = weights_of(arrays.patient_id)
    metrics, intervals = {}, {}
    for name in METRICS:
        metrics[name], intervals[name] = summarize(metric_batch(name, arrays, weights))
    extra = {"n_threshold": int(arrays.has_pred.sum())}
    answered = {}
    if carries_prompt_fields(samples):
        extra.update(_prompt_extra(samples, arrays))
        answered = answer_coverage(arrays.n, int(arrays.has_pred.sum()))
    return dict(**answered, n=arrays.n, n_pos=int(arrays.y.sum()), n_valid=int(arrays.has_score.sum()),
                n_unparsed=int(arrays.unparsed.sum()), n_errors=int(arrays.error.sum()), metrics=metrics,
                ci=intervals, ci_method=ci_method(arrays.image_id, arrays.patient_id),
                fairness=fairness(arrays, weights, meta.age_threshold), robustness=robustness(arrays, weights),
                extra=extra, patients=arrays.patient_id)


def _class_part(samples: Sequence[Any], meta: UnitMeta, spec: dict[str, Any], weights_of) -> dict[str, Any]:
    """The results-line fields that depend on the samples, for a multi-class unit (metrics.classes)."""
    from focus_eval.metrics.classes import (ClassArrays, class_fairness, class_metrics, class_robustness, confusion,
                                            random_guess)

    arrays = ClassArrays.from_samples(samples, len(spec["classes"]), spec["multilabel"], spec["ordinal"])
    weights = weights_of(arrays.patient_id)
    metrics, intervals = class_metrics(arrays, weights)
    usable = ~arrays.error
    extra = {"classes": spec["classes"], "multilabel": spec["multilabel"], "ordinal": spec["ordinal"],
             "n_answered": int(arrays.answered.sum()), "confusion_matrix": confusion(arrays, spec["classes"]),
             "random_guess": random_guess(arrays),
             "unparsed_rate": float(arrays.unparsed.mean()) if arrays.n else None,
             "class_counts": dict(zip(spec["classes"], arrays.y[usable].sum(0).astype(int).tolist()))}
    answered = answer_coverage(arrays.n, int(arrays.answered.sum())) if carries_prompt_fields(samples) else {}
    return dict(**answered, n=arrays.n, n_pos=int(arrays.y[:, 1:].any(axis=1).sum()),
                n_valid=int(arrays.has_probs.sum()),
                n_unparsed=int(arrays.unparsed.sum()), n_errors=int(arrays.error.sum()), metrics=metrics,
                ci=intervals, ci_method=ci_method(arrays.image_id, arrays.patient_id),
                fairness=class_fairness(arrays, weights, meta.age_threshold),
                robustness=class_robustness(arrays, weights), extra=extra, patients=arrays.patient_id,
                output_type=spec["output_type"])


def evaluate_samples(samples: Sequence[Any], meta: UnitMeta | dict[str, Any]) -> ResultLine:
    """The results line of one (task, method) from its sample lines (SampleLine or dicts) and meta."""
    meta = as_meta(meta)
    split = _split_of(samples)
    n_boot = int(DEFAULT_N_BOOT if meta.n_boot is None else meta.n_boot)
    seed = int(DEFAULT_SEED if meta.seed is None else meta.seed)

    def weights_of(patients):
        return bootstrap_weights(patients, n_boot, seed)

    spec = class_spec(meta)
    part = _binary_part(samples, meta, weights_of) if spec is None else _class_part(samples, meta, spec, weights_of)
    extra: dict[str, Any] = {
        "split": split,
        **({"n_threshold": part["extra"].pop("n_threshold")} if spec is None else {}),
        "n_patients": int(len(set(part.pop("patients")))),
        "seed": seed,
        "threshold_rule": meta.threshold_rule,
        **part.pop("extra"),
    }
    return ResultLine(
        **{k: getattr(meta, k) for k in DESCRIPTIVE}, **part, n_boot=n_boot,
        created=meta.created or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        underpowered=underpowered(part["n_pos"]), limited=meta.fingerprint.get("limit") is not None,
        extra={**copied_extra(meta), **extra},
    )


# ----- into results.jsonl


def with_file_record(result: ResultLine, layout: OutputLayout, n_bad_lines: int = 0) -> ResultLine:
    """Record the digest of the sample file the line was computed from: a unit is done only when its results
    line and its sample file agree (count and digest)."""
    result.extra["samples_sha256"] = store.samples_digest(layout, result.task, result.method)
    if n_bad_lines:
        result.extra["n_bad_lines"] = n_bad_lines
    return result


def score_samples(model_dir: Path | OutputLayout, samples: Sequence[Any], meta: UnitMeta | dict[str, Any]) -> ResultLine:
    """samples + meta -> results line, upserted into results.jsonl (the runner, when a unit finishes; the sample
    file must already be written)."""
    meta, layout = as_meta(meta), store.layout_of(model_dir)
    try:
        result = evaluate_samples(list(samples), meta)
    except ValueError as exc:
        raise FocusError(f"{meta.stem}: cannot score: {exc}") from None
    store.upsert_line(layout, with_file_record(result, layout))
    return result


def score_unit(model_dir: Path | OutputLayout, task: str, method: str) -> ResultLine:
    """Recompute one (task, method) from its sample and meta files and upsert it into results.jsonl."""
    layout = store.layout_of(model_dir)
    meta = store.read_meta(layout.meta(task, method))
    samples, reason = store.unit_status(layout, meta)
    if samples is None:
        raise FocusError(f"{layout.samples(task, method)}: cannot score: {reason}")
    return score_samples(layout, samples, meta)


@dataclass
class Rescore:
    """What ``rescore_dir`` did: the results lines written, the units left out with the reason, and the sample
    lines left out by ``skip_bad`` as (file, line, problem)."""

    results: list[ResultLine] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    bad_lines: list[tuple[str, int, str]] = field(default_factory=list)
    groups: list[dict] = field(default_factory=list)


def rescore_dir(model_dir: Path | OutputLayout, *, skip_bad: bool = False) -> Rescore:
    """Rebuild <model_dir>/results.jsonl from the samples folder alone: one line per complete unit. A bad sample
    line is an error naming file and line; with ``skip_bad`` it is left out and counted (``extra.n_bad_lines``)."""
    from focus_eval.group_scores import is_group_line, rebuild_group_lines

    layout = store.layout_of(model_dir)
    groups = [r for r in store.read_results(layout, skip_bad=True) if is_group_line(r)]
    report = Rescore()
    for _, meta in store.read_units(layout):
        bad: list = []
        samples, reason = store.unit_status(layout, meta, skip_bad=skip_bad, bad=bad)
        path = layout.samples(meta.task, meta.method)
        report.bad_lines += [(str(path), line, problem) for line, problem in bad]
        if samples is None:
            report.skipped.append((meta.stem, reason))
            continue
        try:
            report.results.append(with_file_record(evaluate_samples(samples, meta), layout, len(bad)))
        except ValueError as exc:
            raise FocusError(f"{path}: {exc}") from None
    with locked(layout.results):
        store.write_results(layout, report.results)
    if groups:  # recomputed from the task lines just written
        report.groups = rebuild_group_lines(layout, groups)
        with locked(layout.results):
            store.write_results(layout, [*report.results, *report.groups])
    return report

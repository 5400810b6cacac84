"""Sample lines + descriptive meta -> one results line (metrics, bootstrap intervals, fairness, robustness).

Counting rules:
- n: rows; n_pos: rows with label 1; n_errors: rows with an error; n_unparsed: prompt rows with parsed false.
- n_valid: rows usable by the score metrics (no error, a score): auroc, auprc, brier, ece.
- Threshold metrics (accuracy, precision, recall, f1) use rows with no error and a pred that was parsed;
  their count is ``extra.n_threshold``. For the prompt method the hard label is the first yes/no of the
  generated text (``extra.threshold_rule``), while score = p_yes feeds the score metrics.
- underpowered: fewer than 10 positives among the rows.
- Intervals: percentile bootstrap over patients when some image's patient id differs from its image id
  ("patient_bootstrap"), over images otherwise ("image_bootstrap"); n_boot and seed come from meta.
All rows of one call must come from one split (the evaluated one, normally test).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Sequence

import numpy as np

from focus_eval.metrics.arrays import SampleArrays, metric_batch
from focus_eval.metrics.bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, bootstrap_weights, ci_method, summarize
from focus_eval.metrics.fairness import fairness
from focus_eval.metrics.robustness import robustness
from focus_eval.results.schema import METRICS, ResultLine

UNDERPOWERED_POSITIVES = 10
LOW_MASS = 0.5
# meta keys copied onto the results line as they are
DESCRIPTIVE = ("model", "family", "domain", "untrained", "method", "task", "dataset", "target", "proxy",
               "adapter", "task_version", "task_hash", "preset_hash")
# meta keys that steer the computation; every other meta key, and the items of meta["extra"], are copied into
# the results line's extra (computed entries win on a clash)
CONTROLS = ("age_threshold", "n_boot", "seed", "created", "n_expected")
THRESHOLD_RULES = {
    "prompt": "pred = first standalone yes/no in the generated text",
    "zero_shot": "pred = argmax over the negative and positive prompts",
    "linear_probe": "pred = the probe's class",
}


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


def check_meta(meta: dict[str, Any]) -> None:
    missing = [k for k in DESCRIPTIVE if k not in meta]
    if missing:
        raise ValueError(f"meta lacks {', '.join(missing)}")


def evaluate_samples(samples: Sequence[Any], meta: dict[str, Any]) -> ResultLine:
    """The results line of one (task, method) from its sample lines (SampleLine or dicts) and meta."""
    check_meta(meta)
    split = _split_of(samples)
    arrays = SampleArrays.from_samples(samples)
    n_boot = int(meta.get("n_boot", DEFAULT_N_BOOT))
    seed = int(meta.get("seed", DEFAULT_SEED))
    weights = bootstrap_weights(arrays.patient_id, n_boot, seed)
    metrics, intervals = {}, {}
    for name in METRICS:
        metrics[name], intervals[name] = summarize(metric_batch(name, arrays, weights))
    n_pos = int(arrays.y.sum())
    extra: dict[str, Any] = {
        "split": split,
        "n_threshold": int(arrays.has_pred.sum()),
        "n_patients": int(len(set(arrays.patient_id))),
        "seed": seed,
        "threshold_rule": THRESHOLD_RULES.get(meta["method"]),
    }
    if meta["method"] == "prompt":
        extra.update(_prompt_extra(samples, arrays))
    others = {k: v for k, v in meta.items() if k not in DESCRIPTIVE and k not in CONTROLS and k != "extra"}
    extra = {**others, **(meta.get("extra") or {}), **extra}
    return ResultLine(
        **{k: meta[k] for k in DESCRIPTIVE},
        n=arrays.n, n_pos=n_pos, n_valid=int(arrays.has_score.sum()), n_unparsed=int(arrays.unparsed.sum()),
        n_errors=int(arrays.error.sum()), metrics=metrics, ci=intervals,
        ci_method=ci_method(arrays.image_id, arrays.patient_id), n_boot=n_boot,
        fairness=fairness(arrays, weights, meta.get("age_threshold")),
        robustness=robustness(arrays, weights),
        created=meta.get("created") or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        underpowered=n_pos < UNDERPOWERED_POSITIVES, extra=extra,
    )

"""What the fragility analyses share: Kendall's tau between two rankings of the same models, the stability
rule and its one sentence per target, and the score a results line is ranked by.

A ranking is called stable when Kendall's tau between the reference ranking and every other ranking (or
between every pair, where no ranking is the reference) is at least ``STABLE_TAU`` (0.8: with five models, at
most one pair of neighbours swapped). Fewer than three models rank nothing worth a word, and the sentence says
so instead."""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

STABLE_TAU = 0.8
MIN_MODELS = 3


def kendall_tau(a: Mapping[str, float], b: Mapping[str, float]) -> float | None:
    """Kendall's tau-b between two scorings of the models both score (None below two common models or when
    either scoring ties every pair)."""
    common = sorted(set(a) & set(b))
    concordant = discordant = ties_a = ties_b = 0
    for i, m in enumerate(common):
        for n in common[i + 1:]:
            da, db = a[m] - a[n], b[m] - b[n]
            if da == 0 and db == 0:
                continue
            if da == 0:
                ties_a += 1
            elif db == 0:
                ties_b += 1
            elif (da > 0) == (db > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = math.sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b))
    return None if denominator == 0 else (concordant - discordant) / denominator


def score_of(line: Any) -> tuple[str, float | None]:
    """The metric a line is ranked by: AUROC for a yes/no task, FunBench F1 for the others."""
    metric = "funbench_f1" if getattr(line, "output_type", None) else "auroc"
    value = (line.metrics or {}).get(metric)
    return metric, None if value is None else float(value)


def stability(target: str, taus: Sequence[float | None], n_models: int, against: str) -> str:
    """One sentence: whether the ranking of ``target`` holds (every tau at least ``STABLE_TAU``)."""
    if n_models < MIN_MODELS:
        return f"{target}: {n_models} model(s) only, no ranking to judge."
    known = [t for t in taus if t is not None]
    if not known:
        return f"{target}: no pair of rankings to compare {against}."
    low = min(known)
    if low >= STABLE_TAU:
        return (f"{target}: the ranking of {n_models} models is stable {against} "
                f"(every Kendall tau >= {STABLE_TAU}; lowest {low:.2f}).")
    return (f"{target}: the ranking of {n_models} models is NOT stable {against} "
            f"(lowest Kendall tau {low:.2f} < {STABLE_TAU}).")


def spread(values: Sequence[float]) -> dict[str, float]:
    """Mean, minimum, maximum and sample SD (0 for one value) of some scores."""
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return {"mean": mean, "min": min(values), "max": max(values), "sd": sd}

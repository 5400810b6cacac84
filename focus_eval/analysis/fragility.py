"""What the fragility analyses share: their lines, paired by ``results.identity.pair`` on the one axis each
varies (every other axis held fixed), Kendall's tau between two rankings of the same models, the stability rule
and its one sentence per target, and the score a results line is ranked by.

A ranking is called stable when Kendall's tau between the reference ranking and every other ranking (or
between every pair, where no ranking is the reference) is at least ``STABLE_TAU`` (0.8: with five models, at
most one pair of neighbours swapped). Fewer than three models rank nothing worth a word, and the sentence says
so instead."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from focus_eval.results.identity import Identity, Pairing, context, pair

if TYPE_CHECKING:
    from focus_eval.analysis.base import ReportOptions
    from focus_eval.results.collect import Collection, Entry

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


def model_label(line) -> str:
    """A configuration's name: the model, with its adapter and its method where that is not ``prompt``."""
    name = line.model + (f"+{line.adapter}" if line.adapter else "")
    return name if line.method == "prompt" else f"{name} ({line.method})"


def config_name(entry: "Entry") -> str:
    """``model_label`` with the line's non-default run conventions (another seed is another configuration)."""
    return model_label(entry.line) + (f" [{entry.convention_text}]" if entry.convention_text else "")


def task_name(key: Identity) -> str:
    """The task a group of lines is on: the base task, with the variant axes the group holds fixed."""
    held = context(key)
    return f"{key.task} ({held})" if held else key.task


def _unscored(entry: "Entry") -> str | None:
    return None if score_of(entry)[1] is not None else "no score"


def score_of(entry: "Entry") -> tuple[str, float | None]:
    """The metric a line is ranked by (AUROC for a yes/no task, FunBench F1 for the others) and its value (none for
    a line without answers)."""
    metric = entry.primary_metric
    value = entry.metric(metric)
    return metric, None if value is None else float(value)


# row key (configuration, target, task, metric, the variant axes held fixed) -> {value on the varied axis:
# (entry, score)}
Scores = dict[tuple, dict[Any, tuple["Entry", float]]]


def paired_scores(collection: "Collection", options: "ReportOptions", varies: str, value: Callable[[Identity], Any],
                  baseline: bool, keep: Callable[["Entry"], str | None] | None = None) -> tuple[Scores, Pairing]:
    """The lines that differ in ``varies`` only (``results.identity.pair``), by row: each group of lines becomes
    one row key with its lines' scores by their value on the axis."""
    def kept(entry):
        return _unscored(entry) or (keep(entry) if keep else None)

    pairing = pair(collection.entries, varies, include_limited=options.include_limited, baseline=baseline,
                   keep=kept)
    found: Scores = defaultdict(dict)
    for key, members in pairing.groups.items():
        for e in members:
            metric, score = score_of(e)
            found[(config_name(e), e.line.target, task_name(key), metric, context(key))][value(e.identity)] = \
                (e, score)
    return dict(found), pairing


def scope(target: str | None, held: str) -> str:
    """What one ranking of models is over: a target, with the variant axes its tasks hold fixed."""
    return f"{target} ({held})" if held else str(target)


def rankings_by(scores: Scores) -> dict[str, dict[Any, dict[str, float]]]:
    """scope -> value on the varied axis -> configuration -> mean score over the scope's tasks."""
    sums: dict[tuple, list[float]] = defaultdict(list)
    for (model, target, _task, _metric, held), by_value in scores.items():
        for value, (_e, score) in by_value.items():
            sums[(scope(target, held), value, model)].append(score)
    out: dict[str, dict[Any, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for (where, value, model), values in sums.items():
        out[where][value][model] = sum(values) / len(values)
    return out


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

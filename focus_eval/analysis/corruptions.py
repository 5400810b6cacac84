"""``corruptions``: how scores and the ranking of models hold up on corrupted images (``--corruptions``).

A results line on corrupted images carries ``corruption`` (``blur:3``) and ``base_task`` in its extra; its
clean counterpart is the base task's line of the same configuration without a corruption. Per configuration,
base task and corruption the table gives the clean and the corrupted score (AUROC; FunBench F1 for a
multiple-choice task) and the drop; per target and corruption, Kendall's tau between the ranking of models on
corrupted images (mean over the target's tasks) and the clean ranking, with one stability sentence per
target (``analysis.fragility``)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from focus_eval.analysis.base import ReportOptions, Table
from focus_eval.analysis.fragility import kendall_tau, score_of, stability
from focus_eval.analysis.prompt_sensitivity import model_label
from focus_eval.errors import FocusError

if TYPE_CHECKING:
    from focus_eval.results.collect import Collection

CLEAN = "clean"
COLUMNS = ("model", "target", "task", "metric", "corruption", "severity", "clean", "corrupted", "drop")


def scores_by_condition(collection: "Collection", options: ReportOptions) -> dict[tuple, dict[str, float]]:
    """(model, target, base task, metric) -> {``clean`` or corruption label: score}, where some are corrupted."""
    found: dict[tuple, dict[str, float]] = defaultdict(dict)
    for e in collection.entries:
        if e.limited and not options.include_limited:
            continue
        extra = e.line.extra or {}
        if extra.get("prompt_variant"):
            continue  # paraphrases are prompt-sensitivity's
        metric, value = score_of(e.line)
        if value is not None:
            key = (model_label(e.line), e.line.target, extra.get("base_task", e.line.task), metric)
            found[key][extra.get("corruption") or CLEAN] = value
    return {k: v for k, v in found.items() if CLEAN in v and len(v) > 1}


def ranking_taus(scores: dict[tuple, dict[str, float]]) -> dict[str, dict[str, tuple[float | None, int]]]:
    """target -> corruption -> (Kendall tau to the clean ranking, models ranked)."""
    sums: dict[tuple, list[float]] = defaultdict(list)
    for (model, target, _task, _metric), by_condition in scores.items():
        for condition, value in by_condition.items():
            sums[(target, condition, model)].append(value)
    means: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for (target, condition, model), values in sums.items():
        means[target][condition][model] = sum(values) / len(values)
    return {target: {c: (kendall_tau(by[CLEAN], by[c]), len(set(by[CLEAN]) & set(by[c])))
                     for c in sorted(by) if c != CLEAN}
            for target, by in means.items()}


@dataclass(frozen=True)
class CorruptionReport:
    name: str = "corruptions"
    summary: str = "scores on corrupted images against severity, the drop from clean, and the ranking's tau to clean"
    inputs: tuple[str, ...] = ("results",)

    def compute(self, collection: "Collection", options: ReportOptions = ReportOptions()) -> Table:
        scores = scores_by_condition(collection, options)
        if not scores:
            raise FocusError("no task scored both clean and corrupted (run with --corruptions) under "
                             + ", ".join(map(str, collection.paths)))
        table = Table(COLUMNS, title="Scores on corrupted images")
        for (model, target, task, metric), by in sorted(scores.items()):
            for label in sorted(c for c in by if c != CLEAN):
                kind, _, severity = label.partition(":")
                table.add(model, target, task, metric, kind, int(severity), by[CLEAN], by[label],
                          by[CLEAN] - by[label])
        taus = ranking_taus(scores)
        for target, by in sorted(taus.items()):
            n_models = max((n for _t, n in by.values()), default=0)
            table.notes.append(stability(target, [t for t, _n in by.values()], n_models, "under corruption"))
            table.notes.extend(f"{target} {c}: Kendall tau to the clean ranking "
                               + ("-" if t is None else f"{t:.2f}") for c, (t, _n) in by.items())
        table.record = {"title": table.title, "columns": list(COLUMNS),
                        "rows": [dict(zip(COLUMNS, r)) for r in table.rows],
                        "kendall_tau_to_clean": {t: {c: v for c, (v, _n) in by.items()} for t, by in taus.items()},
                        "notes": table.notes}
        return table


ANALYSIS = CorruptionReport()

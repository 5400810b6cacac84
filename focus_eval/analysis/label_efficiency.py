"""``label-efficiency``: a probe's score against the number of labelled training patients it was fitted on
(``--train-fraction``, ``--train-seeds``).

A results line of a label budget carries ``train_fraction``, ``train_seed`` and ``base_task`` in its extra, and
the probe records ``n_train_patients``; a probe line without a fraction used every training patient (fraction
1). Per configuration, base task and fraction the table gives the patients, the number of seeds, the mean
score (AUROC; FunBench F1 for a multiple-choice task) and its range over seeds; per target and fraction,
Kendall's tau between the ranking of models at that budget and with every patient, with one stability
sentence per target."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from focus_eval.analysis.base import ReportOptions, Table
from focus_eval.analysis.fragility import kendall_tau, score_of, spread, stability
from focus_eval.analysis.prompt_sensitivity import model_label
from focus_eval.errors import FocusError

if TYPE_CHECKING:
    from focus_eval.results.collect import Collection

COLUMNS = ("model", "target", "task", "metric", "fraction", "patients", "seeds", "mean", "min", "max")


def budget_scores(collection: "Collection", options: ReportOptions) -> dict[tuple, dict[float, list]]:
    """(model, target, base task, metric) -> {fraction: [(score, patients)], one per seed}."""
    found: dict[tuple, dict[float, list]] = defaultdict(lambda: defaultdict(list))
    for e in collection.entries:
        extra = e.line.extra or {}
        if (e.limited and not options.include_limited) or "n_train_patients" not in extra \
                or extra.get("prompt_variant") or extra.get("corruption"):
            continue
        metric, value = score_of(e.line)
        if value is not None:
            key = (model_label(e.line), e.line.target, extra.get("base_task", e.line.task), metric)
            found[key][float(extra.get("train_fraction", 1.0))].append((value, extra["n_train_patients"]))
    return {k: dict(v) for k, v in found.items() if len(v) > 1}


def taus_to_full(scores: dict[tuple, dict[float, list]]) -> dict[str, dict[float, tuple[float | None, int]]]:
    """target -> fraction -> (Kendall tau to the ranking with every patient, models ranked)."""
    means: dict[str, dict[float, dict[str, list]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for (model, target, _task, _metric), by_fraction in scores.items():
        for fraction, runs in by_fraction.items():
            means[target][fraction][model].append(sum(v for v, _n in runs) / len(runs))
    out = {}
    for target, by in means.items():
        ranked = {f: {m: sum(v) / len(v) for m, v in models.items()} for f, models in by.items()}
        full = ranked.get(1.0, {})
        out[target] = {f: (kendall_tau(full, r), len(set(full) & set(r))) for f, r in sorted(ranked.items())
                       if f < 1}
    return out


@dataclass(frozen=True)
class LabelEfficiency:
    name: str = "label-efficiency"
    summary: str = "probe scores against the number of labelled training patients, with their range over seeds"
    inputs: tuple[str, ...] = ("results",)

    def compute(self, collection: "Collection", options: ReportOptions = ReportOptions()) -> Table:
        scores = budget_scores(collection, options)
        if not scores:
            raise FocusError("no probe scored at two label budgets or more (run with --train-fraction) under "
                             + ", ".join(map(str, collection.paths)))
        table = Table(COLUMNS, title="Probe scores against labelled training patients")
        for (model, target, task, metric), by_fraction in sorted(scores.items()):
            for fraction, runs in sorted(by_fraction.items()):
                s = spread([v for v, _n in runs])
                patients = round(sum(n for _v, n in runs) / len(runs))
                table.add(model, target, task, metric, fraction, patients, len(runs), s["mean"], s["min"], s["max"])
        for target, by in sorted(taus_to_full(scores).items()):
            n_models = max((n for _t, n in by.values()), default=0)
            table.notes.append(stability(target, [t for t, _n in by.values()], n_models, "across label budgets"))
        return table


ANALYSIS = LabelEfficiency()

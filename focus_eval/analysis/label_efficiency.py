"""``label-efficiency``: a probe's score against the number of labelled training patients it was fitted on
(``--train-fraction``, ``--train-seeds``).

A results line of a label budget carries ``train_fraction``, ``train_seed`` and ``base_task`` in its extra, and
the probe records ``n_train_patients``; a probe line without a fraction used every training patient (fraction
1). The budgets compared are those of one identity (``results.identity``: the same configuration, task version,
prompt, label rule and image corruption), so a line under another label rule is never counted as a draw. Per
configuration, task and fraction the table gives the patients, the number of seeds, the mean
score (AUROC; FunBench F1 for a multiple-choice task) and its range over seeds; per target and fraction,
Kendall's tau between the ranking of models at that budget and with every patient, with one stability
sentence per target."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from focus_eval.analysis.base import ReportOptions, Table
from focus_eval.analysis.fragility import Scores, kendall_tau, paired_scores, scope, spread, stability
from focus_eval.errors import FocusError
from focus_eval.results.identity import LeftOut, Pairing

if TYPE_CHECKING:
    from focus_eval.results.collect import Collection

VARIES = "label_budget"
COLUMNS = ("model", "target", "task", "metric", "fraction", "patients", "seeds", "mean", "min", "max")


def _probe(entry) -> str | None:
    return None if "n_train_patients" in (entry.line.extra or {}) else "not a probe (no training patients counted)"


def budget_scores(collection: "Collection", options: ReportOptions) -> tuple[dict[tuple, dict[float, list]], Pairing]:
    """Row -> {fraction: [(score, patients)], one per draw}: the budgets of one identity (a line under another
    label rule, prompt or corruption is another identity, never a draw)."""
    scores: Scores
    scores, pairing = paired_scores(collection, options, VARIES,
                                    lambda i: (1.0 if i.train_fraction is None else i.train_fraction, i.train_seed),
                                    baseline=False, keep=_probe)
    found: dict[tuple, dict[float, list]] = {}
    for key, by_budget in scores.items():
        by_fraction: dict[float, list] = defaultdict(list)
        for (fraction, _seed), (entry, score) in sorted(by_budget.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
            by_fraction[fraction].append((score, entry.line.extra["n_train_patients"]))
        if len(by_fraction) > 1:
            found[key] = dict(by_fraction)
        else:
            pairing.left_out += [LeftOut(e, "one label budget only") for e, _s in by_budget.values()]
    return found, pairing


def taus_to_full(scores: dict[tuple, dict[float, list]]) -> dict[str, dict[float, tuple[float | None, int]]]:
    """scope -> fraction -> (Kendall tau to the ranking with every patient, models ranked)."""
    means: dict[str, dict[float, dict[str, list]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for (model, target, _task, _metric, held), by_fraction in scores.items():
        for fraction, runs in by_fraction.items():
            means[scope(target, held)][fraction][model].append(sum(v for v, _n in runs) / len(runs))
    out = {}
    for where, by in means.items():
        ranked = {f: {m: sum(v) / len(v) for m, v in models.items()} for f, models in by.items()}
        full = ranked.get(1.0, {})
        out[where] = {f: (kendall_tau(full, r), len(set(full) & set(r))) for f, r in sorted(ranked.items())
                      if f < 1}
    return out


@dataclass(frozen=True)
class LabelEfficiency:
    name: str = "label-efficiency"
    summary: str = "probe scores against the number of labelled training patients, with their range over seeds"
    inputs: tuple[str, ...] = ("results",)
    varies: str = VARIES

    def compute(self, collection: "Collection", options: ReportOptions = ReportOptions()) -> Table:
        scores, pairing = budget_scores(collection, options)
        if not scores:
            raise FocusError("no probe scored at two label budgets or more (run with --train-fraction) under "
                             + ", ".join(map(str, collection.paths)))
        table = Table(COLUMNS, title="Probe scores against labelled training patients")
        for (model, target, task, metric, _held), by_fraction in sorted(scores.items()):
            for fraction, runs in sorted(by_fraction.items()):
                s = spread([v for v, _n in runs])
                patients = round(sum(n for _v, n in runs) / len(runs))
                table.add(model, target, task, metric, fraction, patients, len(runs), s["mean"], s["min"], s["max"])
        for where, by in sorted(taus_to_full(scores).items()):
            n_models = max((n for _t, n in by.values()), default=0)
            table.notes.append(stability(where, [t for t, _n in by.values()], n_models, "across label budgets"))
        table.notes.extend(pairing.notes())
        return table


ANALYSIS = LabelEfficiency()

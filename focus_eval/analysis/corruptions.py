"""``corruptions``: how scores and the ranking of models hold up on corrupted images (``--corruptions``).

A results line on corrupted images carries ``corruption`` (``blur:3``) and ``base_task`` in its extra; its
clean counterpart is the line of the same identity without a corruption (``results.identity``: the same
configuration, task version, prompt, label rule and label budget), so a label-budget or label-rule line is never
anyone's clean baseline. Per configuration, task and corruption the table gives the clean and the corrupted
score (AUROC; FunBench F1 for a multiple-choice task) and the drop; per target and corruption, Kendall's tau
between the ranking of models on corrupted images (mean over the target's tasks) and the clean ranking, with one
stability sentence per target (``analysis.fragility``). Lines that cannot be paired are named in the notes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from focus_eval.analysis.base import ReportOptions, Table
from focus_eval.analysis.fragility import Scores, kendall_tau, paired_scores, rankings_by, stability
from focus_eval.errors import FocusError
from focus_eval.results.identity import Pairing

if TYPE_CHECKING:
    from focus_eval.results.collect import Collection

CLEAN = "clean"
VARIES = "corruption"
COLUMNS = ("model", "target", "task", "metric", "corruption", "severity", "clean", "corrupted", "drop")


def scores_by_condition(collection: "Collection", options: ReportOptions) -> tuple[Scores, Pairing]:
    """Row -> {``clean`` or corruption label: (line, score)}: each corrupted line with the clean line of the same
    identity (every other axis held fixed)."""
    return paired_scores(collection, options, VARIES, lambda identity: identity.corruption or CLEAN, baseline=True)


def ranking_taus(scores: Scores) -> dict[str, dict[str, tuple[float | None, int]]]:
    """scope -> corruption -> (Kendall tau to the clean ranking, models ranked)."""
    return {where: {c: (kendall_tau(by[CLEAN], by[c]), len(set(by[CLEAN]) & set(by[c])))
                    for c in sorted(by) if c != CLEAN}
            for where, by in rankings_by(scores).items() if CLEAN in by}


@dataclass(frozen=True)
class CorruptionReport:
    name: str = "corruptions"
    summary: str = "scores on corrupted images against severity, the drop from clean, and the ranking's tau to clean"
    inputs: tuple[str, ...] = ("results",)
    varies: str = VARIES

    def compute(self, collection: "Collection", options: ReportOptions = ReportOptions()) -> Table:
        scores, pairing = scores_by_condition(collection, options)
        if not scores:
            raise FocusError("no task scored both clean and corrupted (run with --corruptions) under "
                             + ", ".join(map(str, collection.paths)))
        table = Table(COLUMNS, title="Scores on corrupted images")
        for (model, target, task, metric, _held), by in sorted(scores.items()):
            clean = by[CLEAN][1]
            for label in sorted(c for c in by if c != CLEAN):
                kind, _, severity = label.partition(":")
                table.add(model, target, task, metric, kind, int(severity), clean, by[label][1], clean - by[label][1])
        taus = ranking_taus(scores)
        for where, by in sorted(taus.items()):
            n_models = max((n for _t, n in by.values()), default=0)
            table.notes.append(stability(where, [t for t, _n in by.values()], n_models, "under corruption"))
            table.notes.extend(f"{where} {c}: Kendall tau to the clean ranking "
                               + ("-" if t is None else f"{t:.2f}") for c, (t, _n) in by.items())
        table.notes.extend(pairing.notes())
        table.record = {"title": table.title, "columns": list(COLUMNS),
                        "rows": [dict(zip(COLUMNS, r)) for r in table.rows],
                        "kendall_tau_to_clean": {t: {c: v for c, (v, _n) in by.items()} for t, by in taus.items()},
                        "notes": table.notes}
        return table


ANALYSIS = CorruptionReport()

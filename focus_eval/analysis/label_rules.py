"""``label-rule-sensitivity``: how each model's score and the ranking of models move when a target's label is
harmonised by another rule (``--label-rules``).

A results line under another rule carries ``label_rule`` and ``base_task`` in its extra; the base task's line
of the same identity (``results.identity``: configuration, task version, prompt, corruption and label budget)
is the task's own rule (``own``). Per configuration, base task and rule the table
gives the score under the task's own rule, under the other rule, the change and the positives under each; per
target and rule, Kendall's tau between the two rankings (mean over the target's tasks), with one stability
sentence per target."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from focus_eval.analysis.base import ReportOptions, Table
from focus_eval.analysis.fragility import Scores, kendall_tau, paired_scores, rankings_by, stability
from focus_eval.errors import FocusError
from focus_eval.results.identity import Pairing

if TYPE_CHECKING:
    from focus_eval.results.collect import Collection

OWN = "own"
VARIES = "label_rule"
COLUMNS = ("model", "target", "task", "metric", "rule", "own", "under_rule", "change", "n_pos_own", "n_pos_rule")


def scores_by_rule(collection: "Collection", options: ReportOptions) -> tuple[Scores, Pairing]:
    """Row -> {``own`` or rule name: (line, score)}: each line under another rule with the line of the same
    identity under the task's own rule."""
    return paired_scores(collection, options, VARIES, lambda identity: identity.label_rule or OWN, baseline=True)


def taus_to_own(scores: Scores) -> dict[str, dict[str, tuple[float | None, int]]]:
    return {where: {r: (kendall_tau(by[OWN], by[r]), len(set(by[OWN]) & set(by[r]))) for r in sorted(by) if r != OWN}
            for where, by in rankings_by(scores).items() if OWN in by}


@dataclass(frozen=True)
class LabelRuleSensitivity:
    name: str = "label-rule-sensitivity"
    summary: str = "how scores and the ranking move when a label is harmonised by another rule"
    inputs: tuple[str, ...] = ("results",)
    varies: str = VARIES

    def compute(self, collection: "Collection", options: ReportOptions = ReportOptions()) -> Table:
        scores, pairing = scores_by_rule(collection, options)
        if not scores:
            raise FocusError("no task scored under another label rule (run with --label-rules) under "
                             + ", ".join(map(str, collection.paths)))
        table = Table(COLUMNS, title="Scores under other label rules")
        for (model, target, task, metric, _held), by in sorted(scores.items()):
            own_entry, own = by[OWN]
            for rule in sorted(r for r in by if r != OWN):
                entry, value = by[rule]
                table.add(model, target, task, metric, rule, own, value, value - own, own_entry.line.n_pos,
                          entry.line.n_pos)
        for where, by in sorted(taus_to_own(scores).items()):
            n_models = max((n for _t, n in by.values()), default=0)
            table.notes.append(stability(where, [t for t, _n in by.values()], n_models, "across label rules"))
        table.notes.extend(pairing.notes())
        return table


ANALYSIS = LabelRuleSensitivity()

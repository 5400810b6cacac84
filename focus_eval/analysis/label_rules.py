"""``label-rule-sensitivity``: how each model's score and the ranking of models move when a target's label is
harmonised by another rule (``--label-rules``).

A results line under another rule carries ``label_rule`` and ``base_task`` in its extra; the base task's line
of the same configuration is the task's own rule (``own``). Per configuration, base task and rule the table
gives the score under the task's own rule, under the other rule, the change and the positives under each; per
target and rule, Kendall's tau between the two rankings (mean over the target's tasks), with one stability
sentence per target."""

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

OWN = "own"
COLUMNS = ("model", "target", "task", "metric", "rule", "own", "under_rule", "change", "n_pos_own", "n_pos_rule")


def scores_by_rule(collection: "Collection", options: ReportOptions) -> dict[tuple, dict[str, tuple]]:
    """(model, target, base task, metric) -> {``own`` or rule name: (score, positives)}."""
    found: dict[tuple, dict[str, tuple]] = defaultdict(dict)
    for e in collection.entries:
        extra = e.line.extra or {}
        if (e.limited and not options.include_limited) or extra.get("prompt_variant") or extra.get("corruption") \
                or "train_fraction" in extra:
            continue
        metric, value = score_of(e.line)
        if value is not None:
            key = (model_label(e.line), e.line.target, extra.get("base_task", e.line.task), metric)
            found[key][extra.get("label_rule") or OWN] = (value, e.line.n_pos)
    return {k: v for k, v in found.items() if OWN in v and len(v) > 1}


def taus_to_own(scores: dict[tuple, dict[str, tuple]]) -> dict[str, dict[str, tuple[float | None, int]]]:
    sums: dict[tuple, list[float]] = defaultdict(list)
    for (model, target, _task, _metric), by_rule in scores.items():
        for rule, (value, _n) in by_rule.items():
            sums[(target, rule, model)].append(value)
    means: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for (target, rule, model), values in sums.items():
        means[target][rule][model] = sum(values) / len(values)
    return {t: {r: (kendall_tau(by[OWN], by[r]), len(set(by[OWN]) & set(by[r]))) for r in sorted(by) if r != OWN}
            for t, by in means.items()}


@dataclass(frozen=True)
class LabelRuleSensitivity:
    name: str = "label-rule-sensitivity"
    summary: str = "how scores and the ranking move when a label is harmonised by another rule"
    inputs: tuple[str, ...] = ("results",)

    def compute(self, collection: "Collection", options: ReportOptions = ReportOptions()) -> Table:
        scores = scores_by_rule(collection, options)
        if not scores:
            raise FocusError("no task scored under another label rule (run with --label-rules) under "
                             + ", ".join(map(str, collection.paths)))
        table = Table(COLUMNS, title="Scores under other label rules")
        for (model, target, task, metric), by in sorted(scores.items()):
            (own, own_pos) = by[OWN]
            for rule in sorted(r for r in by if r != OWN):
                value, n_pos = by[rule]
                table.add(model, target, task, metric, rule, own, value, value - own, own_pos, n_pos)
        for target, by in sorted(taus_to_own(scores).items()):
            n_models = max((n for _t, n in by.values()), default=0)
            table.notes.append(stability(target, [t for t, _n in by.values()], n_models, "across label rules"))
        return table


ANALYSIS = LabelRuleSensitivity()

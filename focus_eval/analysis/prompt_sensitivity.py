"""``prompt-sensitivity``: how much a model's score and the ranking of models move when the same question is
asked in other words (``--prompt-variants``).

A results line of a prompt variant carries ``prompt_variant`` and ``base_task`` in its extra; a line without
them is its task's ``default`` prompt. Paraphrases are compared within one identity (``results.identity``: the
same configuration, task version, label rule, corruption and label budget). Per model and base task the table
gives the mean, minimum, maximum and SD of the score (AUROC; FunBench F1 for a multiple-choice task) over the
variants it was asked in. Per target, each variant ranks the models by their mean score over the target's tasks,
and Kendall's tau is given for every pair of variants, with one sentence saying whether the ranking is stable
(``analysis.fragility``)."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

from focus_eval.analysis.base import ReportOptions, Table, aligned
from focus_eval.analysis.fragility import Scores, kendall_tau, paired_scores, rankings_by, spread, stability
from focus_eval.errors import FocusError
from focus_eval.results.identity import Pairing

if TYPE_CHECKING:
    from focus_eval.results.collect import Collection

DEFAULT = "default"
VARIES = "prompt_variant"
COLUMNS = ("model", "target", "task", "metric", "variants", "mean", "min", "max", "sd")


def variant_scores(collection: "Collection", options: ReportOptions) -> tuple[Scores, Pairing]:
    """Row -> {variant: (line, score)}: the paraphrases of one identity (the same configuration, task version,
    label rule, corruption and label budget), asked in two variants or more."""
    return paired_scores(collection, options, VARIES, lambda identity: identity.prompt_variant or DEFAULT,
                         baseline=False)


def rankings(scores: Scores) -> dict[str, dict[str, dict[str, float]]]:
    """scope -> variant -> model -> mean score over the scope's tasks asked in that variant."""
    return rankings_by(scores)


def tau_matrix(by_variant: dict[str, dict[str, float]]) -> dict[tuple[str, str], float | None]:
    """Kendall's tau between the model rankings of every pair of variants."""
    names = sorted(by_variant, key=lambda v: (v != DEFAULT, v))
    return {(a, b): kendall_tau(by_variant[a], by_variant[b]) for a, b in combinations(names, 2)}


@dataclass(frozen=True)
class PromptSensitivity:
    name: str = "prompt-sensitivity"
    summary: str = "per model the spread of scores over prompt paraphrases, and Kendall's tau between rankings"
    inputs: tuple[str, ...] = ("results",)
    varies: str = VARIES

    def compute(self, collection: "Collection", options: ReportOptions = ReportOptions()) -> Table:
        scores, pairing = variant_scores(collection, options)
        if not scores:
            raise FocusError("no task asked in two prompt variants or more (run with --prompt-variants all) under "
                             + ", ".join(map(str, collection.paths)))
        table = Table(COLUMNS, title="Scores over prompt variants")
        for (model, target, task, metric, _held), by_variant in sorted(scores.items()):
            s = spread([score for _e, score in by_variant.values()])
            table.add(model, target, task, metric, len(by_variant), s["mean"], s["min"], s["max"], s["sd"])
        taus, sentences = {}, []
        for target, by_variant in sorted(rankings(scores).items()):
            taus[target] = tau_matrix(by_variant)
            n_models = len(set().union(*(set(m) for m in by_variant.values())))
            sentences.append(stability(target, list(taus[target].values()), n_models, "across prompt variants"))
        table.notes.extend(sentences + pairing.notes())
        table.record = {"title": table.title, "columns": list(COLUMNS),
                        "rows": [dict(zip(COLUMNS, r)) for r in table.rows], "stability": sentences,
                        "notes": table.notes,
                        "kendall_tau": {t: [{"a": a, "b": b, "tau": v} for (a, b), v in m.items()]
                                        for t, m in taus.items()}}
        table.printed = printed(table, taus)
        return table


def printed(table: Table, taus: dict[str, dict[tuple[str, str], float | None]]) -> str:
    """The spread table, then per target its tau matrix (variants by variants) and the stability sentences."""
    text = [Table(table.columns, table.rows, table.title).to_text()]
    for target, matrix in taus.items():
        names = sorted({n for pair in matrix for n in pair}, key=lambda v: (v != DEFAULT, v))
        cell = {**matrix, **{(b, a): v for (a, b), v in matrix.items()}}
        rows = [[a] + ["1.00" if a == b else "-" if cell.get((a, b)) is None else f"{cell[(a, b)]:.2f}"
                      for b in names] for a in names]
        text += ["", f"Kendall tau between variant rankings: {target}", *aligned(["variant", *names], rows)]
    return "\n".join(text + [""] + table.notes)


ANALYSIS = PromptSensitivity()

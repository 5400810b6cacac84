"""``prompt-sensitivity``: how much a model's score and the ranking of models move when the same question is
asked in other words (``--prompt-variants``).

A results line of a prompt variant carries ``prompt_variant`` and ``base_task`` in its extra; a line without
them is its task's ``default`` prompt. Per model and base task the table gives the mean, minimum, maximum and
SD of the score (AUROC; FunBench F1 for a multiple-choice task) over the variants it was asked in. Per target,
each variant ranks the models by their mean score over the target's tasks, and Kendall's tau is given for every
pair of variants, with one sentence saying whether the ranking is stable (``analysis.fragility``)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

from focus_eval.analysis.base import ReportOptions, Table, aligned
from focus_eval.analysis.fragility import kendall_tau, score_of, spread, stability
from focus_eval.errors import FocusError

if TYPE_CHECKING:
    from focus_eval.results.collect import Collection

DEFAULT = "default"
COLUMNS = ("model", "target", "task", "metric", "variants", "mean", "min", "max", "sd")


def model_label(line) -> str:
    """A configuration's name: the model, with its adapter and its method where that is not ``prompt``."""
    name = line.model + (f"+{line.adapter}" if line.adapter else "")
    return name if line.method == "prompt" else f"{name} ({line.method})"


def variant_scores(collection: "Collection", options: ReportOptions) -> dict[tuple, dict[str, float]]:
    """(model, target, base task, metric) -> {variant: score}, for base tasks asked in two variants or more."""
    found: dict[tuple, dict[str, float]] = defaultdict(dict)
    for e in collection.entries:
        if e.limited and not options.include_limited:
            continue
        extra = e.line.extra or {}
        metric, value = score_of(e.line)
        if value is None:
            continue
        key = (model_label(e.line), e.line.target, extra.get("base_task", e.line.task), metric)
        found[key][extra.get("prompt_variant", DEFAULT)] = value
    return {k: v for k, v in found.items() if len(v) > 1}


def rankings(scores: dict[tuple, dict[str, float]]) -> dict[str, dict[str, dict[str, float]]]:
    """target -> variant -> model -> mean score over the target's tasks asked in that variant."""
    sums: dict[tuple, list[float]] = defaultdict(list)
    for (model, target, _task, _metric), by_variant in scores.items():
        for variant, value in by_variant.items():
            sums[(target, variant, model)].append(value)
    out: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for (target, variant, model), values in sums.items():
        out[target][variant][model] = sum(values) / len(values)
    return out


def tau_matrix(by_variant: dict[str, dict[str, float]]) -> dict[tuple[str, str], float | None]:
    """Kendall's tau between the model rankings of every pair of variants."""
    names = sorted(by_variant, key=lambda v: (v != DEFAULT, v))
    return {(a, b): kendall_tau(by_variant[a], by_variant[b]) for a, b in combinations(names, 2)}


@dataclass(frozen=True)
class PromptSensitivity:
    name: str = "prompt-sensitivity"
    summary: str = "per model the spread of scores over prompt paraphrases, and Kendall's tau between rankings"
    inputs: tuple[str, ...] = ("results",)

    def compute(self, collection: "Collection", options: ReportOptions = ReportOptions()) -> Table:
        scores = variant_scores(collection, options)
        if not scores:
            raise FocusError("no task asked in two prompt variants or more (run with --prompt-variants all) under "
                             + ", ".join(map(str, collection.paths)))
        table = Table(COLUMNS, title="Scores over prompt variants")
        for (model, target, task, metric), by_variant in sorted(scores.items()):
            s = spread(list(by_variant.values()))
            table.add(model, target, task, metric, len(by_variant), s["mean"], s["min"], s["max"], s["sd"])
        taus, sentences = {}, []
        for target, by_variant in sorted(rankings(scores).items()):
            taus[target] = tau_matrix(by_variant)
            n_models = len(set().union(*(set(m) for m in by_variant.values())))
            sentences.append(stability(target, list(taus[target].values()), n_models, "across prompt variants"))
        table.notes.extend(sentences)
        table.record = {"title": table.title, "columns": list(COLUMNS),
                        "rows": [dict(zip(COLUMNS, r)) for r in table.rows], "stability": sentences,
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

"""``focus-eval report funbench``: FunBench's module attribution (``analysis.attribution``) as text, as one table
(CSV, the leaderboard's ``data/funbench_attribution.csv``) and as JSON (``Attribution.to_dict``). The lines on
FunBench's sources come first, the lines on other datasets apart; ``--random-guess documented`` adds the random
guess computed from the datasets' documented test counts beside the paper's row (``analysis.funbench_guess``)."""

from __future__ import annotations

from dataclasses import dataclass

from focus_eval.analysis.attribution import (GUESSES, LEVELS, MODE_TITLES, MODES, SOURCE_SETS, Attribution,
                                             attribute_entries)
from focus_eval.analysis.base import ReportOptions, Table, aligned
from focus_eval.errors import FocusError
from focus_eval.results.collect import Collection

RULE = ("a subtask's score is the mean FunBench F1 over the datasets that carry it, a task code's the mean over "
        "its subtasks (one per lesion in L3), a level's the mean over its codes, MEAN the mean over the levels with "
        "a score")
RANDOM_GUESS = ("documented",)


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def _rank(value: float | None, low: bool = False) -> str:
    if low:
        return "low coverage"
    return "-" if value is None else f"{value:g}"


def ranking_lines(report: Attribution) -> list[str]:
    """Rows models, columns each mode's MEAN and rank; the random-guess rows first."""
    header = ["model"] + [h for m in MODES for h in (f"{MODE_TITLES[m]} MEAN", "rank")]
    rows = [[GUESSES[kind]] + [h for m in MODES for h in (_num(report.guesses[kind][m].mean), "")]
            for kind in GUESSES]
    for model in report.models():
        cells = [model]
        for mode in MODES:
            s = report.summary(model, mode)
            cells += [_num(s.mean), _rank(s.rank, s.low_coverage)] if s else ["-", "-"]
        rows.append(cells)
    return aligned(header, rows)


def mode_lines(report: Attribution, mode: str) -> list[str]:
    """One mode's FunBench table: per model its MEAN, level scores and task-code scores."""
    rows_of = report.summaries[mode]
    codes = sorted({c for s in rows_of for c in s.codes})
    header = ["model", "MEAN", *LEVELS, *codes, "tasks"]
    rows = []
    for s in [*(report.guesses[kind][mode] for kind in GUESSES), *rows_of]:
        rows.append([s.model, _num(s.mean), *(_num(s.levels.get(lv)) for lv in LEVELS),
                     *(_num(s.codes.get(c)) for c in codes), str(s.n_tasks)])
    return [f"{MODE_TITLES[mode]}:", *aligned(header, rows)]


def correlation_lines(report: Attribution) -> list[str]:
    level = round(report.ci_level * 100)
    out = [f"Spearman correlation of the {MODE_TITLES['holistic']} ranking (models present in both modes, ranked "
           f"again among them); {level}% percentile bootstrap CI over {report.resampled} ({report.n_boot} "
           f"resamples, seed {report.seed}):"]
    for c in report.correlations:
        head = f"  vs {MODE_TITLES[c.mode]}: "
        if c.rho is None:
            out.append(f"{head}undefined ({c.reason}; n = {c.n_models} model(s))")
            continue
        ci = (f", {level}% CI [{c.ci[0]:.3f}, {c.ci[1]:.3f}] from {c.n_valid} defined resamples" if c.ci
              else ", no CI (no defined resample)")
        out.append(f"{head}rho = {c.rho:.3f}{ci}, n = {c.n_models} models")
    return out


def section_lines(report: Attribution) -> list[str]:
    """One set of sources: rankings, correlations, each mode's table, notes."""
    title = SOURCE_SETS[report.sources]
    if not report.codes:
        lines = [f"{title}: no results lines"]
    else:
        lines = [f"{title}:", *ranking_lines(report), "", *correlation_lines(report)]
    for mode in MODES:
        if report.summaries[mode]:
            lines += ["", *mode_lines(report, mode)]
    if report.notes:  # the lines left out, with their reasons, also where none was left to score
        lines += ["", "notes:", *(f"  {n}" for n in report.notes)]
    return lines


def documented_lines(documented: dict) -> list[str]:
    """The random guess from documented test counts beside the paper's Table 3 row, code by code."""
    codes, paper, difference = documented["codes"], documented["paper"], documented["difference"]
    rows = []
    for code, value in paper["codes"].items():
        used = sorted({s["source"] for s in documented["sets"] if s["code"] == code and s["value"] is not None})
        rows.append([code, _num(codes.get(code)), _num(value), _signed(difference.get(code)),
                     ", ".join(used) or "none published"])
    for level, value in paper["levels"].items():
        rows.append([level, _num(documented["levels"].get(level)), _num(value),
                     _signed(None if level not in documented["levels"] else documented["levels"][level] - value), ""])
    rows.append(["MEAN", _num(documented["mean"]), _num(paper["mean"]),
                 _signed(None if documented["mean"] is None else documented["mean"] - paper["mean"]), ""])
    within = sum(abs(d) <= 0.02 for d in difference.values())
    return [f"Random guess from documented test counts ({documented['file']}; the expected F1 of a uniform random "
            f"run of focus-eval's questions on each source's documented test counts) beside FunBench's Table 3 "
            f"row: {within} of {len(paper['codes'])} codes within 0.02",
            *aligned(["code", "documented", "paper", "difference", "documented sources"], rows),
            "sources left out (counts not published):",
            *(f"  {code}: {why}" for code, whys in documented["unpublished"].items() for why in whys)]


def render_text(report: Attribution) -> str:
    """The whole report as text: FunBench's sources, then other datasets, then the documented random guess."""
    lines = [f"FunBench module attribution: {RULE}; rank 1 is the best MEAN, ties share the mean of their ranks; "
             f"the random guess is the expected score of a uniform random run (beside it the plug-in value, the F1 "
             f"of the guesser's expected counts)", "", *section_lines(report)]
    if report.other is not None:
        lines += ["", *section_lines(report.other)]
    if report.documented:
        lines += ["", *documented_lines(report.documented)]
    return "\n".join(lines)


COLUMNS = ("row", "sources", "model", "mode", "method", *LEVELS, "mean", "rank", "coverage", "rho", "ci_low",
           "ci_high", "n_models", "note")


def _add_report(table: Table, report: Attribution) -> None:
    src = report.sources
    for kind, rows in report.guesses.items():
        for mode, guess in rows.items():
            table.add(GUESSES[kind], src, None, mode, None, *(guess.levels.get(lv) for lv in LEVELS), guess.mean,
                      None, None, None, None, None, None, None)
    for mode, rows in report.summaries.items():
        for r in rows:
            table.add("model", src, r.model, mode, r.method, *(r.levels.get(lv) for lv in LEVELS), r.mean, r.rank,
                      r.coverage, None, None, None, None, "low coverage: not ranked" if r.low_coverage else None)
    for c in report.correlations:
        low, high = c.ci or (None, None)
        table.add("spearman", src, None, c.mode, None, *(None for _ in LEVELS), None, None, None, c.rho, low, high,
                  c.n_models, c.reason)


def attribution_table(report: Attribution) -> Table:
    """The module-attribution numbers of both sets of sources: per model and mode its level scores, MEAN and rank;
    the random-guess rows per mode; one row per correlation (rho, its interval, the models it is computed over);
    with the documented random guess, its row and the paper's."""
    notes = [*report.notes, *(report.other.notes if report.other else [])]
    table = Table(COLUMNS, title="FunBench module attribution", notes=notes)
    _add_report(table, report)
    if report.other is not None:
        _add_report(table, report.other)
    if report.documented:
        for row, block in (("random guess (documented)", report.documented), ("random guess (paper)",
                                                                                report.documented["paper"])):
            table.add(row, "funbench", None, None, None, *(block["levels"].get(lv) for lv in LEVELS), block["mean"],
                      None, None, None, None, None, None, None)
    return table


NO_LINES = ("no FunBench results lines (tasks funbench_<code>_..., methods multiple_choice, knowledge_prompt, "
            "ve_probe or linear_probe) under ")


@dataclass(frozen=True)
class FunBenchAttribution:
    """``focus-eval report funbench``: the analysis behind the leaderboard's "Module attribution" section."""

    name: str = "funbench"
    summary: str = ("FunBench module attribution: MEAN and rank per model and mode, Spearman's rho of the holistic "
                    "ranking with the LLM and VE rankings (bootstrap over task codes); FunBench's sources and other "
                    "datasets apart; --random-guess documented adds the row from documented test counts")
    inputs: tuple[str, ...] = ("results",)
    varies: str = "configuration"

    def compute(self, collection: Collection, options: ReportOptions = ReportOptions()) -> Table:
        if options.random_guess not in (None, *RANDOM_GUESS):
            raise FocusError(f"--random-guess must be one of {', '.join(RANDOM_GUESS)}, got {options.random_guess!r}")
        report = attribute_entries(collection.entries, include_limited=options.include_limited,
                                   n_boot=options.n_boot, seed=options.seed,
                                   documented=options.random_guess == "documented")
        if not report.codes and report.other is None:
            raise FocusError(NO_LINES + ", ".join(map(str, collection.paths))
                             + ("" if options.include_limited else
                                " (--limit runs are left out unless --include-limited)"))
        return report_table(report)


def report_table(report: Attribution) -> Table:
    """The attribution as one table (``attribution_table``), printed as ``render_text`` and written to JSON as
    ``Attribution.to_dict``."""
    table = attribution_table(report)
    table.printed, table.record = render_text(report), report.to_dict()
    return table


ANALYSIS = FunBenchAttribution()

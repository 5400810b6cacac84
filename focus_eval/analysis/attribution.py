"""FunBench module attribution (its Table 4): per model and mode the FunBench F1 per task code, level and MEAN,
the rankings by MEAN, and the Spearman correlation of the holistic ranking with the LLM-mode and the VE-mode
rankings, with a percentile bootstrap interval over task codes. Used by ``focus-eval report funbench`` and by the
leaderboard's FunBench page.

The rules (docs/OUTPUTS.md, "FunBench module attribution"):

- a task code's score (L3a, ...) is the mean FunBench F1 over its tasks, each task being one (subtask, dataset)
  unit (``funbench_l3a_hemorrhage_brset``); a level's score is the mean over its codes that have a score; MEAN is
  the mean over the levels that have a score (so a mode without L1 averages L2-L4 only, as in the paper);
- ranks: 1 is the highest MEAN; tied MEANs (equal to 12 decimals) share the mean of the ranks they span; a
  model and mode with a line of low coverage (readable answers below the coverage floor, ``results.power``) has
  its MEAN shown but no rank, and stays out of the correlations: its F1 counts unread answers as misses and
  says more about the answer format than about the module;
- a correlation ranks again within the models present in both modes; it is undefined with fewer than 3 such
  models or when one side's ranks are all equal;
- bootstrap: the task codes seen (all modes together, sorted) are resampled with replacement, one draw per
  replicate shared by every model and mode: replicate b takes ``len(codes)`` indices from
  ``numpy.random.default_rng(seed).integers(0, len(codes), len(codes))`` (the generator created once, drawn in
  replicate order); a code drawn k times weighs k times in its level's mean; replicates where a correlation is
  undefined are left out of its interval and counted.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Iterable, Sequence

import numpy as np

from focus_eval.analysis.base import ReportOptions, Table, aligned
from focus_eval.errors import FocusError
from focus_eval.results.collect import Collection, Entry
from focus_eval.results.identity import Pairing, pair

TASK_NAME = re.compile(r"^funbench_l([1-4])([a-d])_")
LEVELS = ("L1", "L2", "L3", "L4")
# method -> FunBench's evaluation mode; linear_probe is the vision baseline row of E-mode I (e.g. dinov2-l)
MODE_OF_METHOD = {"ve_probe": "ve", "linear_probe": "ve", "knowledge_prompt": "llm", "multiple_choice": "holistic"}
MODES = ("holistic", "llm", "ve")
MODE_TITLES = {"holistic": "E-mode III (holistic)", "llm": "E-mode II (LLM)", "ve": "E-mode I (VE)"}
QUESTION_METHOD = "multiple_choice"  # the random-guess row is that of the questions asked, as in the paper
RANK_DIGITS = 12
N_BOOT = 1000
CI_LEVEL = 0.95
MIN_MODELS = 3


def code_of(task: str) -> str | None:
    """FunBench's code of a task named ``funbench_<code>_...`` (``L4c``), else None."""
    match = TASK_NAME.match(task)
    return f"L{match.group(1)}{match.group(2)}" if match else None


@dataclass(frozen=True)
class LineScore:
    """One results line as attribution reads it: who, which method, which task, its FunBench F1."""

    model: str
    method: str
    task: str
    f1: float | None
    coverage: float | None = None
    low_coverage: bool = False

    @property
    def mode(self) -> str | None:
        return MODE_OF_METHOD.get(self.method)


@dataclass
class Summary:
    """One model in one mode: score per task code, per level, MEAN, its rank among the mode's models."""

    model: str
    mode: str
    method: str
    codes: dict[str, float]
    levels: dict[str, float]
    mean: float | None
    n_tasks: int
    rank: float | None = None
    coverage: float | None = None   # the lowest coverage of its prompt lines (None for a probe)
    low_coverage: bool = False      # a line below the coverage floor: no rank, out of the correlations


@dataclass
class Correlation:
    """Spearman's rho between the holistic ranking and one module's ranking, with its bootstrap interval."""

    mode: str
    rho: float | None
    ci: list[float] | None
    n_models: int
    models: list[str]
    reason: str | None = None
    n_valid: int = 0


@dataclass
class Attribution:
    """The whole report: summaries per mode (best first), the random-guess row per mode, both correlations."""

    summaries: dict[str, list[Summary]]
    guess: dict[str, Summary]
    correlations: list[Correlation]
    codes: list[str]
    n_boot: int
    seed: int
    notes: list[str] = field(default_factory=list)
    resampled: str = "task codes"
    ci_level: float = CI_LEVEL

    def models(self) -> list[str]:
        """Every model once: by holistic rank, then by LLM rank, then by VE rank, then by name."""
        order: dict[str, tuple] = {}
        for i, mode in enumerate(MODES):
            for s in self.summaries.get(mode, []):
                order.setdefault(s.model, (i, s.rank if s.rank is not None else float("inf"), s.model))
        return sorted(order, key=lambda m: order[m])

    def summary(self, model: str, mode: str) -> Summary | None:
        return next((s for s in self.summaries.get(mode, []) if s.model == model), None)

    def to_dict(self) -> dict:
        return {"modes": {m: MODE_TITLES[m] for m in MODES}, "codes": self.codes, "n_boot": self.n_boot,
                "seed": self.seed, "resampled": self.resampled, "ci_level": self.ci_level,
                "random_guess": {m: asdict(s) for m, s in self.guess.items()},
                "summaries": {m: [asdict(s) for s in rows] for m, rows in self.summaries.items()},
                "correlations": [asdict(c) for c in self.correlations], "notes": self.notes}


def level_scores(code_scores: dict[str, float], draw: Sequence[str]) -> tuple[dict[str, float], float | None]:
    """Levels and MEAN from per-code scores, over the codes in ``draw`` (a code drawn k times weighs k times)."""
    by_level: dict[str, list[float]] = defaultdict(list)
    for code in draw:
        if code in code_scores:
            by_level[code[:2]].append(code_scores[code])
    # plain sums: this runs models x modes x n_boot times, where numpy's per-call cost dominates
    levels = {level: sum(by_level[level]) / len(by_level[level]) for level in LEVELS if by_level[level]}
    return levels, (sum(levels.values()) / len(levels) if levels else None)


def code_means(pairs: Iterable[tuple[str, float | None]]) -> tuple[dict[str, float], int]:
    """Mean score per task code over its tasks (``(task, score)`` pairs; a null score is left out), and how
    many tasks had a score."""
    by_code: dict[str, list[float]] = defaultdict(list)
    for task, value in pairs:
        if value is not None:
            by_code[code_of(task)].append(value)
    return {c: float(np.mean(v)) for c, v in sorted(by_code.items())}, sum(map(len, by_code.values()))


def ranks(values: dict[str, float]) -> dict[str, float]:
    """Rank 1 for the highest value; ties share the mean of the ranks they span."""
    keys = sorted(values, key=lambda k: -round(values[k], RANK_DIGITS))
    out, i = {}, 0
    while i < len(keys):
        j = i
        while j + 1 < len(keys) and round(values[keys[j + 1]], RANK_DIGITS) == round(values[keys[i]], RANK_DIGITS):
            j += 1
        for k in keys[i:j + 1]:
            out[k] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a: dict[str, float | None], b: dict[str, float | None]) -> tuple[float | None, list[str], str | None]:
    """Spearman's rho of two modes' MEANs over the models present in both (ranked again among them), those
    models, and why rho is undefined when it is."""
    common = sorted(m for m in a if a[m] is not None and b.get(m) is not None)
    if len(common) < MIN_MODELS:
        return None, common, f"fewer than {MIN_MODELS} models in both modes"
    ra, rb = ranks({m: a[m] for m in common}), ranks({m: b[m] for m in common})
    x, y = np.array([ra[m] for m in common]), np.array([rb[m] for m in common])
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return None, common, "the ranks of one mode are all equal"
    return float(np.corrcoef(x, y)[0, 1]), common, None


def _group(scores: Iterable[LineScore], notes: list[str]) -> Grouped:
    """mode -> model -> (method, its scores). A model with both ve_probe and linear_probe lines is read through
    ve_probe (its own vision encoder), and a note says so."""
    found: dict[tuple[str, str], dict[str, list[LineScore]]] = defaultdict(lambda: defaultdict(list))
    for s in scores:
        if s.mode is not None and code_of(s.task) is not None:
            found[(s.mode, s.model)][s.method].append(s)
    out: dict[str, dict[str, tuple[str, list[LineScore]]]] = {m: {} for m in MODES}
    for (mode, model), methods in sorted(found.items()):
        method = "ve_probe" if len(methods) > 1 and "ve_probe" in methods else sorted(methods)[0]
        if len(methods) > 1:
            others = ", ".join(sorted(set(methods) - {method}))
            notes.append(f"{model}: {MODE_TITLES[mode]} read from {method}, not {others}")
        out[mode][model] = (method, methods[method])
    return out


Grouped = dict[str, dict[str, tuple[str, list[LineScore]]]]


def _summaries(grouped: Grouped, draw: Sequence[str]) -> dict[str, list[Summary]]:
    out = {}
    for mode, models in grouped.items():
        rows = []
        for model, (method, scores) in models.items():
            codes, n = code_means((s.task, s.f1) for s in scores)
            levels, mean = level_scores(codes, draw)
            covered = [s.coverage for s in scores if s.coverage is not None]
            rows.append(Summary(model, mode, method, codes, levels, mean, n, coverage=min(covered, default=None),
                                low_coverage=any(s.low_coverage for s in scores)))
        order = ranks({r.model: r.mean for r in rows if r.mean is not None and not r.low_coverage})
        for r in rows:
            r.rank = order.get(r.model)
        out[mode] = sorted(rows, key=lambda r: (r.rank is None, r.rank or 0.0, r.model))
    return out


def _bootstrap(grouped, codes: list[str], n_boot: int, seed: int) -> dict[str, list[float]]:
    """Per module mode, the defined rho of each replicate (task codes resampled with replacement)."""
    rng = np.random.default_rng(seed)
    cached = {mode: {model: code_means((s.task, s.f1) for s in scores)[0] for model, (_, scores) in models.items()
                     if not any(s.low_coverage for s in scores)}
              for mode, models in grouped.items()}
    found: dict[str, list[float]] = {"llm": [], "ve": []}
    for _ in range(n_boot):
        draw = [codes[i] for i in rng.integers(0, len(codes), len(codes))]
        means = {mode: {model: level_scores(c, draw)[1] for model, c in per.items()} for mode, per in cached.items()}
        for mode in found:
            rho = spearman(means["holistic"], means[mode])[0]
            if rho is not None:
                found[mode].append(rho)
    return found


def _guess_row(grouped, guesses: dict[str, float | None], codes: list[str]) -> dict[str, Summary]:
    """The random-guess row per mode (over the tasks that mode's lines cover) and over every task of the modes
    (``all``)."""
    tasks = {mode: {s.task for _, scores in grouped[mode].values() for s in scores} for mode in MODES}
    tasks["all"] = set().union(*tasks.values())
    out = {}
    for mode, covered in tasks.items():
        per_code, n = code_means((t, guesses.get(t)) for t in sorted(covered))
        levels, mean = level_scores(per_code, codes)
        out[mode] = Summary("random guess", mode, "", per_code, levels, mean, n)
    return out


def attribute(scores: Iterable[LineScore], guesses: dict[str, float | None] | None = None, *, n_boot: int = N_BOOT,
              seed: int = 0) -> Attribution:
    """The attribution report of ``scores`` (one per results line; other methods and non-FunBench tasks are left
    out); ``guesses`` maps a task to its random-guess F1 for the reference row."""
    if n_boot < 0:
        raise ValueError(f"the number of bootstrap resamples must be 0 or more, got {n_boot}")
    notes: list[str] = []
    grouped = _group(scores, notes)
    codes = sorted({code_of(s.task) for models in grouped.values() for _, rows in models.values() for s in rows})
    summaries = _summaries(grouped, codes)
    means = {mode: {s.model: s.mean for s in rows if not s.low_coverage} for mode, rows in summaries.items()}
    boot = _bootstrap(grouped, codes, n_boot, seed) if codes and n_boot else {"llm": [], "ve": []}
    half = (1 - CI_LEVEL) / 2 * 100
    correlations = []
    for mode in ("llm", "ve"):
        rho, common, reason = spearman(means["holistic"], means[mode])
        found = boot[mode]
        ci = [float(v) for v in np.percentile(found, [half, 100 - half])] if rho is not None and found else None
        correlations.append(Correlation(mode, rho, ci, len(common), common, reason, len(found)))
    return Attribution(summaries, _guess_row(grouped, guesses or {}, codes), correlations, codes, n_boot, seed,
                       notes)


def model_label(e: Entry) -> str:
    """The name a model goes by across modes: the model, its adapter, and its non-default run conventions."""
    label = e.line.model + (f" + {e.line.adapter}" if e.line.adapter else "")
    return label + (f" [{e.convention_text}]" if e.convention_text else "")


def funbench_lines(entries: Iterable[Entry], include_limited: bool = False) -> Pairing:
    """The results lines of FunBench tasks through the one pairing step (``results.identity.pair``): ``--limit``
    runs only with ``include_limited``, plain lines of the task version most lines have, with answers; a line below
    the coverage floor stays, shown without a rank. The lines left out come with their reasons."""
    funbench = [e for e in entries if e.line.output_type and code_of(e.line.task)]
    return pair(funbench, "configuration", include_limited=include_limited, min_group=1, coverage=False)


def funbench_entries(entries: Iterable[Entry], include_limited: bool = False) -> list[Entry]:
    """The results lines of FunBench tasks that the attribution counts (``funbench_lines``)."""
    return funbench_lines(entries, include_limited).entries


def scores_of(entries: Iterable[Entry]) -> list[LineScore]:
    return [LineScore(model_label(e), e.line.method, e.line.task, e.metric("funbench_f1"), e.line.coverage,
                      e.low_coverage) for e in entries]


def guess_of(e: Entry) -> float | None:
    """The random-guess FunBench F1 a results line records for its task."""
    return ((e.line.extra or {}).get("random_guess") or {}).get("funbench_f1")


def task_guesses(entries: Iterable[Entry]) -> dict[str, float | None]:
    """Per task, the random-guess F1 of the questions where an MLLM answered them, else of the first line's
    (a probe's uniform guess over all classes); a line that records one is preferred to one that does not."""
    out: dict[str, Entry] = {}
    for e in sorted(entries, key=lambda e: (guess_of(e) is None, e.line.method != QUESTION_METHOD)):
        out.setdefault(e.line.task, e)
    return {task: guess_of(e) for task, e in out.items()}


def attribute_entries(entries: Iterable[Entry], *, include_limited: bool = False, n_boot: int = N_BOOT,
                      seed: int = 0) -> Attribution:
    """The attribution report of leaderboard entries (non-FunBench lines are left out)."""
    pairing = funbench_lines(entries, include_limited)
    lines = pairing.entries
    report = attribute(scores_of(lines), task_guesses(lines), n_boot=n_boot, seed=seed)
    report.notes += pairing.notes()
    return report


# ----- the report: text, table, JSON


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _rank(value: float | None, low: bool = False) -> str:
    if low:
        return "low coverage"
    return "-" if value is None else f"{value:g}"


def ranking_lines(report: Attribution) -> list[str]:
    """Rows models, columns each mode's MEAN and rank; the random-guess row first."""
    header = ["model"] + [h for m in MODES for h in (f"{MODE_TITLES[m]} MEAN", "rank")]
    rows = [["random guess"] + [h for m in MODES for h in (_num(report.guess[m].mean), "")]]
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
    for s in [report.guess[mode], *rows_of]:
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


def render_text(report: Attribution) -> str:
    """The whole report as text: rankings, both correlations, each mode's table, notes."""
    lines = ["FunBench module attribution: MEAN = mean over the levels with a score of the mean over each level's "
             "task codes (a code's score is the mean FunBench F1 over its tasks); rank 1 is the best MEAN, ties "
             "share the mean of their ranks", "", *ranking_lines(report), "", *correlation_lines(report)]
    for mode in MODES:
        if report.summaries[mode]:
            lines += ["", *mode_lines(report, mode)]
    if report.notes:
        lines += ["", "notes:", *(f"  {n}" for n in report.notes)]
    return "\n".join(lines)


def attribution_table(report: Attribution) -> Table:
    """The module-attribution numbers: per model and mode its level scores, MEAN and rank; the random-guess row
    per mode; one row per correlation (rho, its interval, the models it is computed over)."""
    table = Table(("row", "model", "mode", "method", *LEVELS, "mean", "rank", "coverage", "rho", "ci_low",
                   "ci_high", "n_models", "note"), title="FunBench module attribution", notes=list(report.notes))
    for mode, guess in report.guess.items():
        table.add("random guess", None, mode, None, *(guess.levels.get(lv) for lv in LEVELS), guess.mean, None,
                  None, None, None, None, None, None)
    for mode, rows in report.summaries.items():
        for r in rows:
            table.add("model", r.model, mode, r.method, *(r.levels.get(lv) for lv in LEVELS), r.mean, r.rank,
                      r.coverage, None, None, None, None, "low coverage: not ranked" if r.low_coverage else None)
    for c in report.correlations:
        low, high = c.ci or (None, None)
        table.add("spearman", None, c.mode, None, *(None for _ in LEVELS), None, None, None, c.rho, low, high,
                  c.n_models, c.reason)
    return table


NO_LINES = ("no FunBench results lines (tasks funbench_<code>_..., methods multiple_choice, knowledge_prompt, "
            "ve_probe or linear_probe) under ")


@dataclass(frozen=True)
class FunBenchAttribution:
    """``focus-eval report funbench``: the analysis behind the leaderboard's "Module attribution" section."""

    name: str = "funbench"
    summary: str = ("FunBench module attribution: MEAN and rank per model and mode, Spearman's rho of the holistic "
                    "ranking with the LLM and VE rankings (bootstrap over task codes)")
    inputs: tuple[str, ...] = ("results",)
    varies: str = "configuration"

    def compute(self, collection: Collection, options: ReportOptions = ReportOptions()) -> Table:
        report = attribute_entries(collection.entries, include_limited=options.include_limited,
                                   n_boot=options.n_boot, seed=options.seed)
        if not report.codes:
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

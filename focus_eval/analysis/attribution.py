"""FunBench module attribution (its Table 4): per model and mode the FunBench F1 per task code, level and MEAN,
the rankings by MEAN, and the Spearman correlation of the holistic ranking with the LLM-mode and the VE-mode
rankings, with a percentile bootstrap interval over task codes. Used by ``focus-eval report funbench``
(``analysis.funbench_report`` prints and writes it) and by the leaderboard's FunBench page.

The rules (docs/OUTPUTS.md, "FunBench module attribution"):

- a task is one (subtask, dataset) unit (``funbench_l3a_hemorrhage_ddr``: the subtask ``funbench_l3a_hemorrhage``,
  its name less the dataset); a subtask's score is the mean FunBench F1 over the datasets that carry it, a task
  code's (L3a, ...) the mean over its subtasks (FunBench's per-lesion subtasks of L3: a lesion weighs the same
  whatever the number of datasets carrying it), a level's the mean over its codes that have a score, and MEAN the
  mean over the levels that have a score (so a mode without L1 averages L2-L4 only, as in the paper);
- sources: lines on FunBench's own sources (``FUNBENCH_SOURCES``) and lines on other datasets (BRSET, mBRSET,
  Messidor-2, synthetic and user datasets) are reported apart, each with its own rankings and correlations, so
  the first report is over the paper's data only;
- random guess, per task, level and MEAN: the expected score of an actual run of a uniform random guesser
  (``metrics.chance``, recorded per results line as ``extra.random_guess.funbench_f1_run``; exact, or from seeded
  runs where it says so) beside the plug-in value (the F1 of the guesser's expected counts); with
  ``--random-guess documented``, also the row computed from the datasets' documented test counts
  (``analysis.funbench_guess``) beside the paper's row;
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

from focus_eval.results.collect import Entry
from focus_eval.results.identity import Pairing, pair

TASK_NAME = re.compile(r"^funbench_l([1-4])([a-d])_")
LEVELS = ("L1", "L2", "L3", "L4")
# method -> FunBench's evaluation mode; linear_probe is the vision baseline row of E-mode I (e.g. dinov2-l)
MODE_OF_METHOD = {"ve_probe": "ve", "linear_probe": "ve", "knowledge_prompt": "llm", "multiple_choice": "holistic"}
MODES = ("holistic", "llm", "ve")
MODE_TITLES = {"holistic": "E-mode III (holistic)", "llm": "E-mode II (LLM)", "ve": "E-mode I (VE)"}
QUESTION_METHOD = "multiple_choice"  # the random-guess row is that of the questions asked, as in the paper
# FunBench's 14 sources, by the focus-eval datasets that read them (IDRiD's three parts; the pooled L1b set)
FUNBENCH_SOURCES = frozenset({"idrid", "idrid_seg", "idrid_loc", "ddr", "jsiec", "rfmid", "oia_odir",
                              "retinal_lesions", "octdl", "neh", "octid", "oct2017", "retouch", "top", "mmc_amd",
                              "deepdrid", "funbench_pool"})
SOURCE_SETS = {"funbench": "FunBench's sources", "other": "other datasets, not in FunBench"}
GUESSES = {"expected_run": "random guess (expected run)", "plug_in": "random guess (plug-in)"}
RANK_DIGITS = 12
N_BOOT = 1000
CI_LEVEL = 0.95
MIN_MODELS = 3


def code_of(task: str) -> str | None:
    """FunBench's code of a task (or subtask) named ``funbench_<code>_...`` (``L4c``), else None."""
    match = TASK_NAME.match(task)
    return f"L{match.group(1)}{match.group(2)}" if match else None


def subtask_of(task: str, dataset: str | None) -> str:
    """FunBench's subtask of a task: its name less the ``_<dataset>`` it ends with (``funbench_l3a_hemorrhage_ddr``
    on ``ddr`` -> ``funbench_l3a_hemorrhage``); a task not named after its dataset is a subtask of its own."""
    suffix = f"_{dataset}" if dataset else ""
    return task[: -len(suffix)] if suffix and task.endswith(suffix) and code_of(task[: -len(suffix)]) else task


def source_set(dataset: str | None) -> str:
    """``funbench`` for a line on one of FunBench's sources, else ``other``."""
    return "funbench" if dataset in FUNBENCH_SOURCES else "other"


@dataclass(frozen=True)
class LineScore:
    """One results line as attribution reads it: who, which method, which task, its FunBench F1."""

    model: str
    method: str
    task: str
    f1: float | None
    coverage: float | None = None
    low_coverage: bool = False
    dataset: str | None = None

    @property
    def mode(self) -> str | None:
        return MODE_OF_METHOD.get(self.method)

    @property
    def subtask(self) -> str:
        return subtask_of(self.task, self.dataset)


@dataclass(frozen=True)
class TaskGuess:
    """One task's random guess: its subtask, the plug-in F1 and the expected F1 of a run (with how it was found)."""

    subtask: str
    plug_in: float | None
    expected_run: float | None
    how: str | None = None


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
    subtasks: dict[str, float] = field(default_factory=dict)
    tasks: dict[str, float] = field(default_factory=dict)  # each (subtask, dataset) line's own score
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
    """The report of one set of sources: summaries per mode (best first), the random-guess rows per kind
    (``GUESSES``) and mode, both correlations; ``other`` the same report over other datasets' lines, and
    ``documented`` the random guess from documented test counts, when asked."""

    summaries: dict[str, list[Summary]]
    guesses: dict[str, dict[str, Summary]]
    correlations: list[Correlation]
    codes: list[str]
    n_boot: int
    seed: int
    notes: list[str] = field(default_factory=list)
    resampled: str = "task codes"
    ci_level: float = CI_LEVEL
    sources: str = "funbench"
    other: "Attribution | None" = None
    documented: dict | None = None

    @property
    def guess(self) -> dict[str, Summary]:
        """The random-guess row per mode that cells are compared with: the expected score of a run."""
        return self.guesses["expected_run"]

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
        guesses = {kind: {m: asdict(s) for m, s in rows.items()} for kind, rows in self.guesses.items()}
        out = {"sources": self.sources, "title": SOURCE_SETS[self.sources], "modes": {m: MODE_TITLES[m] for m in MODES},
               "codes": self.codes, "n_boot": self.n_boot, "seed": self.seed, "resampled": self.resampled,
               "ci_level": self.ci_level,
               "random_guess": {**guesses, **({"documented": self.documented} if self.documented else {})},
               "summaries": {m: [asdict(s) for s in rows] for m, rows in self.summaries.items()},
               "correlations": [asdict(c) for c in self.correlations], "notes": self.notes}
        if self.sources == "funbench":
            out["other_datasets"] = self.other.to_dict() if self.other is not None else None
        return out


def level_scores(code_scores: dict[str, float], draw: Sequence[str]) -> tuple[dict[str, float], float | None]:
    """Levels and MEAN from per-code scores, over the codes in ``draw`` (a code drawn k times weighs k times)."""
    by_level: dict[str, list[float]] = defaultdict(list)
    for code in draw:
        if code in code_scores:
            by_level[code[:2]].append(code_scores[code])
    # plain sums: this runs models x modes x n_boot times, where numpy's per-call cost dominates
    levels = {level: sum(by_level[level]) / len(by_level[level]) for level in LEVELS if by_level[level]}
    return levels, (sum(levels.values()) / len(levels) if levels else None)


def subtask_means(pairs: Iterable[tuple[str, float | None]]) -> tuple[dict[str, float], int]:
    """Mean score per subtask over its datasets (``(subtask, score)`` pairs, one per task; a null score is left
    out), and how many tasks had a score."""
    by_subtask: dict[str, list[float]] = defaultdict(list)
    for subtask, value in pairs:
        if value is not None:
            by_subtask[subtask].append(value)
    return {t: float(np.mean(v)) for t, v in sorted(by_subtask.items())}, sum(map(len, by_subtask.values()))


def code_means(pairs: Iterable[tuple[str, float | None]]) -> tuple[dict[str, float], int]:
    """Score per task code, the mean over its subtasks of each subtask's mean over its datasets (``(subtask,
    score)`` pairs, one per task), and how many tasks had a score."""
    subtasks, n = subtask_means(pairs)
    by_code: dict[str, list[float]] = defaultdict(list)
    for subtask, value in subtasks.items():
        by_code[code_of(subtask)].append(value)
    return {c: float(np.mean(v)) for c, v in sorted(by_code.items())}, n


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
            codes, n = code_means((s.subtask, s.f1) for s in scores)
            levels, mean = level_scores(codes, draw)
            covered = [s.coverage for s in scores if s.coverage is not None]
            rows.append(Summary(model, mode, method, codes, levels, mean, n,
                                subtasks=subtask_means((s.subtask, s.f1) for s in scores)[0],
                                tasks={s.task: s.f1 for s in scores if s.f1 is not None},
                                coverage=min(covered, default=None), low_coverage=any(s.low_coverage for s in scores)))
        order = ranks({r.model: r.mean for r in rows if r.mean is not None and not r.low_coverage})
        for r in rows:
            r.rank = order.get(r.model)
        out[mode] = sorted(rows, key=lambda r: (r.rank is None, r.rank or 0.0, r.model))
    return out


def _bootstrap(grouped, codes: list[str], n_boot: int, seed: int) -> dict[str, list[float]]:
    """Per module mode, the defined rho of each replicate (task codes resampled with replacement)."""
    rng = np.random.default_rng(seed)
    cached = {mode: {model: code_means((s.subtask, s.f1) for s in scores)[0] for model, (_, scores) in models.items()
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


def _guess_rows(grouped, guesses: dict[str, TaskGuess], codes: list[str]) -> dict[str, dict[str, Summary]]:
    """Per kind of random guess (``GUESSES``), its row per mode (over the tasks that mode's lines cover) and over
    every task of the modes (``all``). A row's scores need every task's value: a task without one (a line
    scored before the expected run was recorded) leaves its subtask out of that row, and a note says so."""
    tasks = {mode: {s.task for _, scores in grouped[mode].values() for s in scores} for mode in MODES}
    tasks["all"] = set().union(*tasks.values())
    out: dict[str, dict[str, Summary]] = {}
    for kind in GUESSES:
        out[kind] = {}
        for mode, covered in tasks.items():
            pairs = [(guesses[t].subtask, getattr(guesses[t], kind)) for t in sorted(covered) if t in guesses]
            per_code, n = code_means(pairs)
            levels, mean = level_scores(per_code, codes)
            out[kind][mode] = Summary(GUESSES[kind], mode, "", per_code, levels, mean, n,
                                      subtasks=subtask_means(pairs)[0])
    return out


def _guess_notes(guesses: dict[str, TaskGuess]) -> list[str]:
    missing = sorted(t for t, g in guesses.items() if g.expected_run is None and g.plug_in is not None)
    simulated = sorted(f"{t} ({g.how})" for t, g in guesses.items() if g.how and g.how != "exact")
    notes = []
    if missing:
        notes.append(f"{len(missing)} task(s) have no expected-run random guess (scored before it was recorded; "
                     f"`focus-eval score` adds it): {', '.join(missing)}")
    if simulated:
        notes.append("expected-run random guess from seeded runs, not exact: " + ", ".join(simulated))
    return notes


def attribute(scores: Iterable[LineScore], guesses: dict[str, TaskGuess] | None = None, *, n_boot: int = N_BOOT,
              seed: int = 0, sources: str = "funbench") -> Attribution:
    """The attribution report of ``scores`` (one per results line; other methods and non-FunBench tasks are left
    out); ``guesses`` maps a task to its random guess for the reference rows."""
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
    guesses = guesses or {}
    covered = {s.task for models in grouped.values() for _, lines in models.values() for s in lines}
    notes += _guess_notes({t: g for t, g in guesses.items() if t in covered})
    return Attribution(summaries, _guess_rows(grouped, guesses, codes), correlations, codes, n_boot, seed, notes,
                       sources=sources)


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
                      e.low_coverage, e.line.dataset) for e in entries]


def _recorded(e: Entry) -> dict:
    return (e.line.extra or {}).get("random_guess") or {}


def guess_of(e: Entry) -> float | None:
    """The plug-in random-guess FunBench F1 a results line records for its task."""
    return _recorded(e).get("funbench_f1")


def run_guess_of(e: Entry) -> float | None:
    """The expected FunBench F1 of a random run that a results line records for its task."""
    return _recorded(e).get("funbench_f1_run")


def task_guesses(entries: Iterable[Entry]) -> dict[str, TaskGuess]:
    """Per task, the random guess of the questions where an MLLM answered them, else of the first line's (a
    probe's uniform guess over all classes); a line that records both values is preferred."""
    out: dict[str, Entry] = {}
    for e in sorted(entries, key=lambda e: (guess_of(e) is None, run_guess_of(e) is None,
                                            e.line.method != QUESTION_METHOD)):
        out.setdefault(e.line.task, e)
    return {task: TaskGuess(subtask_of(task, e.line.dataset), guess_of(e), run_guess_of(e),
                            _recorded(e).get("funbench_f1_run_method")) for task, e in out.items()}


def split_sources(entries: Iterable[Entry]) -> dict[str, list[Entry]]:
    """The lines on FunBench's sources and the lines on other datasets."""
    out: dict[str, list[Entry]] = {"funbench": [], "other": []}
    for e in entries:
        out[source_set(e.line.dataset)].append(e)
    return out


def attribute_entries(entries: Iterable[Entry], *, include_limited: bool = False, n_boot: int = N_BOOT,
                      seed: int = 0, documented: bool = False) -> Attribution:
    """The attribution report of leaderboard entries (non-FunBench lines are left out) over FunBench's sources,
    with the report over other datasets as its ``other`` (None when there are no such lines) and, when asked,
    the random guess from documented test counts."""
    pairing = funbench_lines(entries, include_limited)
    parts = split_sources(pairing.entries)
    report, other = (attribute(scores_of(lines), task_guesses(lines), n_boot=n_boot, seed=seed, sources=name)
                     for name, lines in parts.items())
    report.notes += pairing.notes()
    report.other = other if parts["other"] else None
    if documented:
        report.documented = documented_row()
    return report


def documented_row() -> dict:
    """The random guess from documented test counts: per code, level and MEAN beside the paper's row, the
    difference, how each set's value was found, its sources and the sources left out."""
    from focus_eval.analysis.funbench_guess import documented_counts

    counts = documented_counts()
    codes = counts.codes()
    levels, mean = level_scores(codes, list(codes))
    paper = counts.paper
    return {"codes": codes, "levels": levels, "mean": mean, "paper": paper,
            "difference": {c: v - paper["codes"][c] for c, v in codes.items() if c in paper.get("codes", {})},
            "sets": [asdict(s) for s in counts.sets], "unpublished": counts.unpublished,
            "citations": counts.citations, "file": counts.path.name}

"""The FunBench page: one row per model and mode (the multiple-choice method is FunBench's E-mode III, the
linear probe its E-mode I, class-prompt zero-shot an encoder mode of this harness), FunBench's F1 overall, per
level (L1-L4) and per task code (L2b, L3a, ...), the random-guess rows (the expected score of a random run, and
the plug-in value), cells below the expected run greyed. As in the paper, a subtask's score is the mean over the
datasets that carry it, a code's the mean over its subtasks (one per lesion in L3), a level's the mean over its
codes and the overall score the mean over the levels (the MEAN of the attribution section). Lines on FunBench's
own sources and lines on other datasets are two tables, so the first is over the paper's data only. The data go to
``data/funbench.csv`` (column ``sources``). A second section attributes the holistic ranking to the model's
modules (the ``funbench`` analysis, ``analysis.attribution``, FunBench's Table 4), its numbers in
``data/funbench_attribution.csv`` (the table ``focus-eval report funbench --csv`` writes)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from statistics import mean

from focus_eval.analysis.attribution import (GUESSES, LEVELS, MODE_TITLES, SOURCE_SETS, Attribution,
                                             attribute_entries, code_of, funbench_entries, run_guess_of, split_sources,
                                             subtask_of, task_guesses)
from focus_eval.analysis.funbench_report import attribution_table
from focus_eval.leaderboard.draw.csvdata import CsvTable
from focus_eval.leaderboard.pages.site import Site
from focus_eval.results.collect import Entry

MODES = {"multiple_choice": "E-mode III: holistic", "linear_probe": "E-mode I: linear probe",
         "ve_probe": "E-mode I: vision-encoder probe", "knowledge_prompt": "E-mode II: knowledge-prompted LLM",
         "zero_shot": "zero-shot class prompts"}


@dataclass(frozen=True)
class Cell:
    """FunBench's F1 over some tasks (nested as the paper averages), the same lines' random guess (the expected
    score of a run) nested alike, and how many tasks."""

    value: float | None
    guess: float | None
    n: int

    @property
    def below_chance(self) -> bool:
        return self.value is not None and self.guess is not None and self.value < self.guess


def cell(scores: list[tuple[float | None, float | None]]) -> Cell:
    values = [v for v, _ in scores if v is not None]
    guesses = [g for v, g in scores if v is not None and g is not None]
    return Cell(mean(values) if values else None, mean(guesses) if len(guesses) == len(values) and values else None,
                len(values))


@dataclass
class Row:
    """One model and mode: its cells by column (``overall``, the levels, the codes)."""

    model: str
    method: str
    adapter: str | None
    family: str | None
    untrained: bool
    entries: list[Entry] = field(default_factory=list)
    cells: dict[str, Cell] = field(default_factory=dict)

    @property
    def mode(self) -> str:
        return MODES.get(self.method, self.method)

    @property
    def coverage(self) -> float | None:
        """The lowest coverage of its lines (readable answers / questions); None for a probe."""
        return min((e.line.coverage for e in self.entries if e.line.coverage is not None), default=None)

    @property
    def low_coverage(self) -> bool:
        return any(e.low_coverage for e in self.entries)


def _score(e: Entry) -> tuple[float | None, float | None]:
    return e.metric("funbench_f1"), run_guess_of(e)


def _combine(cells: list[Cell]) -> Cell:
    """The mean of cells that have a value (their guesses likewise, when every one has a guess)."""
    have = [c for c in cells if c.value is not None]
    guesses = [c.guess for c in have if c.guess is not None]
    return Cell(mean(c.value for c in have) if have else None,
                mean(guesses) if have and len(guesses) == len(have) else None, sum(c.n for c in have))


def _nested(by_subtask: dict[str, list], columns: list[str]) -> dict[str, Cell]:
    """Subtask cells over their tasks (one per dataset), code cells over their subtasks, level cells over their
    codes, ``overall`` over the levels."""
    subtasks = {subtask: cell(scores) for subtask, scores in by_subtask.items()}
    codes = {code: _combine([c for t, c in subtasks.items() if code_of(t) == code])
             for code in {code_of(t) for t in subtasks}}
    levels = {lv: _combine([c for code, c in codes.items() if code[:2] == lv]) for lv in LEVELS}
    every = {"overall": _combine(list(levels.values())), **levels, **codes}
    return {c: every.get(c, Cell(None, None, 0)) for c in ["overall", *columns]}


def _cells(entries: list[Entry], columns: list[str]) -> dict[str, Cell]:
    by_subtask: dict[str, list] = defaultdict(list)
    for e in entries:
        by_subtask[subtask_of(e.line.task, e.line.dataset)].append(_score(e))
    return _nested(by_subtask, columns)


def funbench_lines(site: Site) -> list[Entry]:
    """The results lines of FunBench tasks the page shows (limited runs only with --include-limited)."""
    return funbench_entries(site.entries, site.include_limited)


def random_rows(lines: list[Entry], columns: list[str]) -> dict[str, dict[str, Cell]]:
    """Per kind of random guess (``GUESSES``: the expected score of a run, the plug-in value) and column, the
    random guess of its tasks (each task's question baseline where an MLLM answered it, else the probe's uniform
    guess over all classes), combined as the models' cells are."""
    out = {}
    for kind in GUESSES:
        by_subtask: dict[str, list] = defaultdict(list)
        for guess in task_guesses(lines).values():
            by_subtask[guess.subtask].append((getattr(guess, kind), None))
        out[kind] = _nested(by_subtask, columns)
    return out


@dataclass
class Section:
    """One table of the page: the lines of one set of sources (``SOURCE_SETS``), its rows, columns, random
    guesses, tasks and attribution."""

    sources: str
    rows: list[Row]
    columns: list[str]
    codes: list[str]
    guesses: dict[str, dict[str, Cell]]
    tasks: list[str]
    attribution: Attribution
    datasets: list[str]

    @property
    def title(self) -> str:
        return SOURCE_SETS[self.sources]

    @property
    def table_id(self) -> str:
        return "funbench-table" if self.sources == "funbench" else "funbench-other-table"


def section(sources: str, lines: list[Entry], report: Attribution) -> Section:
    codes = sorted({code_of(e.line.task) for e in lines})
    columns = [*LEVELS, *codes]
    rows: dict[tuple, Row] = {}
    for e in lines:
        key = (e.line.model, e.line.method, e.line.adapter or "", e.convention_text)
        rows.setdefault(key, Row(e.line.model, e.line.method, e.line.adapter, e.line.family,
                                 bool(e.line.untrained))).entries.append(e)
    for row in rows.values():
        row.cells = _cells(row.entries, columns)
    ordered = sorted(rows.values(), key=lambda r: (r.untrained, r.low_coverage, -(r.cells["overall"].value or -1.0),
                                                   r.model))
    tasks = sorted({e.line.task for e in lines}, key=lambda t: (code_of(t), t))
    return Section(sources, ordered, columns, codes, random_rows(lines, columns), tasks, report,
                   sorted({e.line.dataset or "" for e in lines}))


def _csv(sections: list[Section]) -> CsvTable:
    table = CsvTable(("sources", "model", "method", "mode", "adapter", "family", "untrained", "column", "funbench_f1",
                      "random_guess_f1", "n_tasks"))
    for s in sections:
        for kind, cells in s.guesses.items():
            for column, c in cells.items():
                table.add(s.sources, GUESSES[kind], None, None, None, None, None, column, c.value, None, c.n)
        for r in s.rows:
            for column, c in r.cells.items():
                table.add(s.sources, r.model, r.method, r.mode, r.adapter, r.family, r.untrained, column, c.value,
                          c.guess, c.n)
    return table


def funbench_view(site: Site):
    """The FunBench page, or None when no FunBench task has results."""
    from focus_eval.leaderboard.pages.views import ViewPage

    lines = funbench_lines(site)
    if not lines:
        return None
    report = attribute_entries(lines, include_limited=True)  # lines are already filtered by --include-limited
    reports = {"funbench": report, "other": report.other}
    sections = [section(name, part, reports[name]) for name, part in split_sources(lines).items() if part]
    return ViewPage(name="funbench", title="FunBench", template="funbench.html",
                    csv={"funbench": _csv(sections), "funbench_attribution": attribution_table(report)},
                    summary="multiple-choice fundus reading (FunBench F1 by level and subtask, with random guess)",
                    context={"sections": sections, "levels": LEVELS, "guess_titles": GUESSES, "code_of": code_of,
                             "mode_titles": MODE_TITLES, "coverage_floor": f"{lines[0].coverage_floor:g}"})

"""The FunBench page: one row per model and mode (the multiple-choice method is FunBench's E-mode III, the
linear probe its E-mode I, class-prompt zero-shot an encoder mode of this harness), FunBench's F1 overall, per
level (L1-L4) and per subtask code (L2b, L3a, ...), the random-guess row, cells below chance greyed. As in the
paper, a code's score is the mean over its tasks, a level's the mean over its codes and the overall score the
mean over the levels (the MEAN of the attribution section). The data go to ``data/funbench.csv``. A second section
attributes the holistic ranking to the model's modules (the ``funbench`` analysis, ``analysis.attribution``, FunBench's
Table 4), its numbers in ``data/funbench_attribution.csv`` (the table ``focus-eval report funbench --csv`` writes)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from statistics import mean

from focus_eval.analysis.attribution import (LEVELS, MODE_TITLES, attribute_entries, attribution_table, code_of,
                                             funbench_entries, guess_of, task_guesses)
from focus_eval.leaderboard.draw.csvdata import CsvTable
from focus_eval.leaderboard.pages.site import Site
from focus_eval.results.collect import Entry

MODES = {"multiple_choice": "E-mode III: holistic", "linear_probe": "E-mode I: linear probe",
         "ve_probe": "E-mode I: vision-encoder probe", "knowledge_prompt": "E-mode II: knowledge-prompted LLM",
         "zero_shot": "zero-shot class prompts"}


@dataclass(frozen=True)
class Cell:
    """A mean over tasks of FunBench's F1, the same lines' mean random-guess F1, and how many tasks."""

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
    return e.metric("funbench_f1"), guess_of(e)


def _combine(cells: list[Cell]) -> Cell:
    """The mean of cells that have a value (their guesses likewise, when every one has a guess)."""
    have = [c for c in cells if c.value is not None]
    guesses = [c.guess for c in have if c.guess is not None]
    return Cell(mean(c.value for c in have) if have else None,
                mean(guesses) if have and len(guesses) == len(have) else None, sum(c.n for c in have))


def _nested(by_code: dict[str, list], columns: list[str]) -> dict[str, Cell]:
    """Code cells over their tasks, level cells over their codes, ``overall`` over the levels."""
    codes = {code: cell(scores) for code, scores in by_code.items()}
    levels = {lv: _combine([c for code, c in codes.items() if code[:2] == lv]) for lv in LEVELS}
    every = {"overall": _combine(list(levels.values())), **levels, **codes}
    return {c: every.get(c, Cell(None, None, 0)) for c in ["overall", *columns]}


def _cells(entries: list[Entry], columns: list[str]) -> dict[str, Cell]:
    by_code: dict[str, list] = defaultdict(list)
    for e in entries:
        by_code[code_of(e.line.task)].append(_score(e))
    return _nested(by_code, columns)


def funbench_lines(site: Site) -> list[Entry]:
    """The results lines of FunBench tasks the page shows (limited runs only with --include-limited)."""
    return funbench_entries(site.entries, site.include_limited)


def random_row(lines: list[Entry], columns: list[str]) -> dict[str, Cell]:
    """Per column, the random-guess F1 of its tasks (each task's question baseline where an MLLM answered
    it, else the probe's uniform guess over all classes), combined as the models' cells are."""
    by_code: dict[str, list] = defaultdict(list)
    for task, guess in task_guesses(lines).items():
        by_code[code_of(task)].append((guess, None))
    return _nested(by_code, columns)


def funbench_view(site: Site):
    """The FunBench page, or None when no FunBench task has results."""
    from focus_eval.leaderboard.pages.views import ViewPage

    lines = funbench_lines(site)
    if not lines:
        return None
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
    table = CsvTable(("model", "method", "mode", "adapter", "family", "untrained", "column", "funbench_f1",
                      "random_guess_f1", "n_tasks"))
    guess_row = random_row(lines, columns)
    for column, c in guess_row.items():
        table.add("random guess", None, None, None, None, None, column, c.value, None, c.n)
    for r in ordered:
        for column, c in r.cells.items():
            table.add(r.model, r.method, r.mode, r.adapter, r.family, r.untrained, column, c.value, c.guess, c.n)
    tasks = sorted({e.line.task for e in lines}, key=lambda t: (code_of(t), t))
    report = attribute_entries(lines, include_limited=True)  # lines are already filtered by --include-limited
    return ViewPage(name="funbench", title="FunBench", template="funbench.html",
                    csv={"funbench": table, "funbench_attribution": attribution_table(report)},
                    summary="multiple-choice fundus reading (FunBench F1 by level and subtask, with random guess)",
                    context={"rows": ordered, "columns": columns, "levels": LEVELS, "codes": codes,
                             "guess": guess_row, "tasks": tasks, "code_of": code_of, "attribution": report,
                             "mode_titles": MODE_TITLES, "coverage_floor": f"{lines[0].coverage_floor:g}"})

"""``focus-eval funbench-report RESULTS...``: FunBench module attribution (MEAN per mode, the three rankings and
the Spearman correlations of the holistic ranking with the LLM-mode and VE-mode rankings, with bootstrap CIs)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="+", metavar="RESULTS", type=Path,
                        help="an --output-path folder (<model>/results.jsonl inside), a model folder, or a "
                             "results.jsonl file, as the leaderboard takes them")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the numbers as JSON to FILE")
    parser.add_argument("--include-limited", action="store_true",
                        help="count the lines of --limit runs (left out by default, as on the leaderboard)")
    parser.add_argument("--n-boot", type=int, default=1000, metavar="N",
                        help="bootstrap resamples of the task codes for the correlation intervals (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap resampling (default 0)")
    parser.add_argument("--prefer", metavar="newest|FOLDER",
                        help="when a results line is found twice: keep the newer one or the one under FOLDER")


def run(args: argparse.Namespace) -> int:
    from focus_eval.errors import FocusError
    from focus_eval.leaderboard.attribution import attribute_entries
    from focus_eval.leaderboard.dedupe import deduplicate
    from focus_eval.leaderboard.entries import read_entries
    from focus_eval.leaderboard.inputs import discover

    if args.n_boot < 0:
        raise FocusError("--n-boot must be 0 or more")
    inputs = discover(args.results)
    entries = deduplicate((e for path in inputs.results_files for e in read_entries(path)), args.prefer).entries
    report = attribute_entries(entries, include_limited=args.include_limited, n_boot=args.n_boot, seed=args.seed)
    if not report.codes:
        raise FocusError("no FunBench results lines (tasks funbench_<code>_..., methods multiple_choice, "
                         "knowledge_prompt, ve_probe or linear_probe) under " + ", ".join(map(str, args.results))
                         + ("" if args.include_limited else " (--limit runs are left out unless --include-limited)"))
    print(render_text(report))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        from focus_eval.files import atomic_write_text

        atomic_write_text(args.json, json.dumps(report.to_dict(), indent=1, allow_nan=False) + "\n")
        print(f"wrote {args.json}")
    return 0


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _rank(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """Aligned text columns: the first (names) to the left, the numbers to the right."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def fmt(row: list[str]) -> str:
        return "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths)))

    return [fmt(header), "  ".join("-" * w for w in widths), *map(fmt, rows)]


def ranking_lines(report) -> list[str]:
    """Rows models, columns each mode's MEAN and rank; the random-guess row first."""
    from focus_eval.leaderboard.attribution import MODE_TITLES, MODES

    header = ["model"] + [h for m in MODES for h in (f"{MODE_TITLES[m]} MEAN", "rank")]
    rows = [["random guess"] + [h for m in MODES for h in (_num(report.guess[m].mean), "")]]
    for model in report.models():
        cells = [model]
        for mode in MODES:
            s = report.summary(model, mode)
            cells += [_num(s.mean), _rank(s.rank)] if s else ["-", "-"]
        rows.append(cells)
    return _table(header, rows)


def mode_lines(report, mode: str) -> list[str]:
    """One mode's FunBench table: per model its MEAN, level scores and task-code scores."""
    from focus_eval.leaderboard.attribution import LEVELS, MODE_TITLES

    rows_of = report.summaries[mode]
    codes = sorted({c for s in rows_of for c in s.codes})
    header = ["model", "MEAN", *LEVELS, *codes, "tasks"]
    rows = []
    for s in [report.guess[mode], *rows_of]:
        rows.append([s.model, _num(s.mean), *(_num(s.levels.get(lv)) for lv in LEVELS),
                     *(_num(s.codes.get(c)) for c in codes), str(s.n_tasks)])
    return [f"{MODE_TITLES[mode]}:", *_table(header, rows)]


def correlation_lines(report) -> list[str]:
    from focus_eval.leaderboard.attribution import MODE_TITLES

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


def render_text(report) -> str:
    """The whole report as text: rankings, both correlations, each mode's table, notes."""
    from focus_eval.leaderboard.attribution import MODES

    lines = ["FunBench module attribution: MEAN = mean over the levels with a score of the mean over each level's "
             "task codes (a code's score is the mean FunBench F1 over its tasks); rank 1 is the best MEAN, ties "
             "share the mean of their ranks", "", *ranking_lines(report), "", *correlation_lines(report)]
    for mode in MODES:
        if report.summaries[mode]:
            lines += ["", *mode_lines(report, mode)]
    if report.notes:
        lines += ["", "notes:", *(f"  {n}" for n in report.notes)]
    return "\n".join(lines)

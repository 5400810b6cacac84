"""The one underpowered rule (SPEC section 6): a task, or a paired comparison, with fewer than ``MIN_POSITIVES``
test positives says little; a paired comparison also needs ``MIN_PAIRED`` images (10 positives and 10
negatives). Scoring flags results lines with it, ``focus-eval compare`` flags comparisons, group means leave
such tasks out, and the leaderboard applies it to lines written without the flag.

The one coverage rule: a prompt method's line (``prompt``, ``multiple_choice``, ``knowledge_prompt``) records
``n_answered`` (rows whose answer could be read) and ``coverage`` (n_answered / n). A line whose coverage is below
``COVERAGE_FLOOR`` is shown, marked low coverage, but ranked nowhere (leaderboard pages, FunBench module
attribution): its score says more about the answer format than about the model."""

from __future__ import annotations

MIN_POSITIVES = 10
MIN_PAIRED = 2 * MIN_POSITIVES
COVERAGE_FLOOR = 0.9


def underpowered(n_pos: float | None) -> bool:
    """Fewer than ``MIN_POSITIVES`` positives; an unknown count is not called underpowered."""
    return n_pos is not None and n_pos < MIN_POSITIVES


def underpowered_pair(n: float | None, n_pos: float | None) -> bool:
    """A paired comparison with too few positives, or too few paired images, to be powered."""
    return underpowered(n_pos) or (n is not None and n < MIN_PAIRED)


def check_floor(floor: float) -> float:
    """A coverage floor must lie in [0, 1] (0 ranks every line)."""
    if not (isinstance(floor, (int, float)) and 0.0 <= float(floor) <= 1.0):
        raise ValueError(f"the coverage floor must lie between 0 and 1, got {floor!r}")
    return float(floor)


def low_coverage(coverage: float | None, floor: float = COVERAGE_FLOOR) -> bool:
    """Coverage below the floor; a line without a coverage (not a prompt method's) is never low."""
    return coverage is not None and coverage < floor


def answered(n_answered: float | None, n_valid: float | None, output_type: str | None = None) -> float | None:
    """The rows a line's answer-based scores rest on: a prompt method's readable answers, else a yes/no line's
    rows with a score; None when the line does not say (a multi-class line of a method without answer texts scores
    its predictions, which it does not count)."""
    if n_answered is not None:
        return n_answered
    return n_valid if not output_type else None


def no_answers(n_answered: float | None, n_valid: float | None, output_type: str | None = None) -> bool:
    """A line without a single answer to score: it has no score (never 0 with a zero-width interval) and no rank,
    whatever the floor."""
    return answered(n_answered, n_valid, output_type) == 0

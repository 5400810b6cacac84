"""The one underpowered rule (SPEC section 6): a task, or a paired comparison, with fewer than ``MIN_POSITIVES``
test positives says little; a paired comparison also needs ``MIN_PAIRED`` images (10 positives and 10
negatives). Scoring flags results lines with it, ``focus-eval compare`` flags comparisons, group means leave
such tasks out, and the leaderboard applies it to lines written without the flag."""

from __future__ import annotations

MIN_POSITIVES = 10
MIN_PAIRED = 2 * MIN_POSITIVES


def underpowered(n_pos: float | None) -> bool:
    """Fewer than ``MIN_POSITIVES`` positives; an unknown count is not called underpowered."""
    return n_pos is not None and n_pos < MIN_POSITIVES


def underpowered_pair(n: float | None, n_pos: float | None) -> bool:
    """A paired comparison with too few positives, or too few paired images, to be powered."""
    return underpowered(n_pos) or (n is not None and n < MIN_PAIRED)

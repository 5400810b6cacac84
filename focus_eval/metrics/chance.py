"""The expected FunBench F1 of an actual run of a uniform random guesser: FunBench's random-guess row as a
measured run means it, where ``classes.random_guess`` gives the F1 of the guesser's expected confusion counts
(the plug-in value).

The guesser takes one of a question's shown options uniformly (single answer) or each shown option with
probability 1/2 (multi answer). FunBench's F1 is the mean, over the classes present among the labels, of a
function of one class's sensitivity and specificity, so the expectation of a run's F1 is the mean of the
per-class expectations. For class k the rows answer independently: TP is a sum of Bernoulli(p_i) over the rows
whose truth holds k and FP a sum of Bernoulli(q_j) over the others (p_i and q_j: the chance that row's answer
holds k; 0 on a row that does not show k), and the two are independent, so

    E[F1_k] = sum_x sum_y P(TP = x) P(FP = y) H(x / n_k, 1 - y / m_k)

with H the harmonic mean (0 when both are 0), n_k positive and m_k negative rows (no negative row: F1_k is the
sensitivity, whose expectation is the mean of the p_i). The laws of TP and FP are Poisson-binomial, built by
convolving the binomial laws of the rows that share a probability; tails holding less than ``TAIL`` of the mass
are dropped. That is exact to floating-point precision. Where a class's (x, y) grid would exceed ``MAX_CELLS``,
the value comes from ``RUNS`` seeded runs instead (each draws every class's TP and FP from their laws, which is
what a run of the guesser does to that class), and the result says so.

A class's chances come either from a task's own rows (``row_chances``: the truths and the options each question
showed) or from a dataset's documented per-class test counts and a question form (``form_chances``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from scipy.stats import binom

TAIL = 1e-15
MAX_CELLS = 20_000_000
RUNS = 2000
EXACT, SIMULATED = "exact", "simulated"


@dataclass(frozen=True)
class ClassChance:
    """One class: probability that a positive (negative) row's answer holds it -> how many such rows."""

    positive: Mapping[float, int]
    negative: Mapping[float, int]

    @property
    def n_pos(self) -> int:
        return sum(self.positive.values())

    @property
    def n_neg(self) -> int:
        return sum(self.negative.values())


@dataclass(frozen=True)
class RunGuess:
    """The expected F1 of a random run, how it was found (``exact`` or ``simulated``) and, when simulated, the
    number of runs and their seed."""

    value: float | None
    method: str = EXACT
    runs: int | None = None
    seed: int | None = None

    def describe(self) -> str:
        return self.method if self.method == EXACT else f"{self.method} ({self.runs} seeded runs, seed {self.seed})"


def _law(groups: Mapping[float, int]) -> np.ndarray:
    """P(count = 0..n) of a sum of independent Bernoulli rows, ``groups`` mapping a probability to its rows."""
    law = np.ones(1)
    for p, n in sorted(groups.items()):
        if n:
            law = np.convolve(law, binom.pmf(np.arange(n + 1), n, min(max(p, 0.0), 1.0)))
    return law


def _support(law: np.ndarray) -> tuple[int, int]:
    """The index range [lo, hi) outside which the law holds less than TAIL of its mass."""
    cumulative = np.cumsum(law)
    lo = int(np.searchsorted(cumulative, TAIL / 2, side="right"))
    hi = int(np.searchsorted(cumulative, cumulative[-1] - TAIL / 2, side="left")) + 1
    return lo, max(hi, lo + 1)


def harmonic(sensitivity: np.ndarray, specificity: np.ndarray) -> np.ndarray:
    """FunBench's per-class F1: the harmonic mean of sensitivity and specificity, 0 where both are 0."""
    total = sensitivity + specificity
    return np.divide(2 * sensitivity * specificity, total, out=np.zeros(np.broadcast(sensitivity, specificity).shape),
                     where=total > 0)


def _cells(chance: ClassChance) -> int:
    x, y = _support(_law(chance.positive)), _support(_law(chance.negative))
    return (x[1] - x[0]) * (y[1] - y[0])


def class_expectation(chance: ClassChance) -> float:
    """The exact expected F1 of one class over a random run."""
    n, m = chance.n_pos, chance.n_neg
    if m == 0:
        return sum(p * k for p, k in chance.positive.items()) / n
    tp, fp = _law(chance.positive), _law(chance.negative)
    (x0, x1), (y0, y1) = _support(tp), _support(fp)
    x, y = np.arange(x0, x1), np.arange(y0, y1)
    grid = harmonic((x / n)[:, None], (1 - y / m)[None, :])
    return float(tp[x0:x1] @ grid @ fp[y0:y1])


def _simulated(chance: ClassChance, rng: np.random.Generator, runs: int) -> np.ndarray:
    """The class's F1 in ``runs`` random runs."""
    def draw(groups):
        return sum((rng.binomial(n, min(max(p, 0.0), 1.0), runs) for p, n in groups.items() if n), np.zeros(runs))

    sensitivity = draw(chance.positive) / chance.n_pos
    if chance.n_neg == 0:
        return sensitivity
    return harmonic(sensitivity, 1 - draw(chance.negative) / chance.n_neg)


def expected_run(classes: Sequence[ClassChance], *, max_cells: int = MAX_CELLS, runs: int = RUNS,
                 seed: int = 0) -> RunGuess:
    """The expected FunBench F1 of a random run over the classes that have positive rows: exact when every
    class's grid fits in ``max_cells``, else the mean of ``runs`` seeded runs (at least 1,000)."""
    present = [c for c in classes if c.n_pos > 0]
    if not present:
        return RunGuess(None)
    if all(_cells(c) <= max_cells for c in present):
        return RunGuess(float(np.mean([class_expectation(c) for c in present])))
    if runs < 1000:
        raise ValueError(f"a simulated random guess needs at least 1000 runs, got {runs}")
    rng = np.random.default_rng(seed)
    per_run = np.mean([_simulated(c, rng, runs) for c in present], axis=0)
    return RunGuess(float(per_run.mean()), SIMULATED, runs, seed)


def row_chances(y: np.ndarray, options: np.ndarray, multilabel: bool) -> list[ClassChance]:
    """Per class, the chances of a task's own rows: ``y`` the (n, K) truths, ``options`` the (n, K) classes each
    question showed."""
    shown = np.asarray(options, dtype=float)
    if multilabel:
        pick = 0.5 * shown
    else:
        pick = shown / np.maximum(shown.sum(1, keepdims=True), 1)
    truth = np.asarray(y) > 0
    out = []
    for k in range(truth.shape[1]):
        out.append(ClassChance(dict(Counter(pick[truth[:, k], k].round(12).tolist())),
                               dict(Counter(pick[~truth[:, k], k].round(12).tolist()))))
    return out


def form_chances(counts: Sequence[int], options: int, shown: float = 1.0, multi: bool = False,
                 total: int | None = None) -> list[ClassChance]:
    """Per class, the chances of a test set known only by its per-class counts, under a question form: every
    question shows ``options`` options, the true class among them, and a class that is not the truth with
    probability ``shown`` (1: every class shown); one answer uniformly among them, or each with probability
    1/2 (``multi``). ``total`` is the number of rows (the sum of the counts for a single-answer set)."""
    if options < 1 or not 0 <= shown <= 1:
        raise ValueError(f"a question form needs at least one option and a shown share in [0, 1], got "
                         f"{options} and {shown}")
    total = sum(counts) if total is None else total
    p = 0.5 if multi else 1 / options
    return [ClassChance({p: int(n)}, {round(p * shown, 12): int(total - n)}) for n in counts]

"""Statistics for comparing several models on the same images: the patient resamples they share, AUROC replicates
of every model under one resample, ranks and the share of resamples each model leads, DeLong's covariance of
correlated AUROCs, and Holm's step-down adjustment.

Resamples (``metrics.resamples``) are made in chunks within the memory budget; stream ``s`` (one per task) draws
from ``SeedSequence([seed, s, 0])``, so independent streams never share draws and a task's resamples do not
depend on the chunk size.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from scipy.stats import norm, rankdata

from focus_eval.metrics.bootstrap import adjusted_pvalues
from focus_eval.metrics.core import auroc_batch
from focus_eval.metrics.resamples import Resamples

def auroc_replicates(y: np.ndarray, scores: np.ndarray, clusters: Sequence[Any], n_boot: int, seed: int = 0,
                     stream: int = 0, budget: int | None = None) -> np.ndarray:
    """(1 + n_boot, M): every model's AUROC (row 0 on all images, then one row per shared resample of ``stream``).
    ``scores`` is (M, n): the M models' scores of the same n images, labelled ``y``."""
    scores = np.atleast_2d(np.asarray(scores, dtype=float))
    resamples = Resamples(clusters, n_boot, seed, stream=stream, budget=budget)
    return resamples.map(lambda w: np.stack([auroc_batch(y, s, w) for s in scores], axis=1))


def replicate_ranks(values: np.ndarray) -> np.ndarray:
    """Competition ranks per row (1 = highest value); a missing value ranks below every present one."""
    values = np.where(np.isfinite(values), values, -np.inf)
    return 1 + (values[:, None, :] > values[:, :, None]).sum(axis=2)


def share_first(values: np.ndarray) -> np.ndarray:
    """Per model, the share of rows in which it has the highest value; a tie for first splits the row."""
    values = np.where(np.isfinite(values), values, -np.inf)
    top = values == values.max(axis=1, keepdims=True)
    return (top / top.sum(axis=1, keepdims=True)).mean(axis=0)


def rank_interval(ranks: np.ndarray, level: float = 0.95) -> tuple[int, int]:
    """The central ``level`` range of one model's replicate ranks, as whole ranks (lower and upper)."""
    tail = 100.0 * (1.0 - level) / 2.0
    low, high = np.percentile(ranks, [tail, 100.0 - tail])
    return int(np.floor(low)), int(np.ceil(high))


def _midranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks of ``x``, tied values sharing the mean of their ranks."""
    return rankdata(x, method="average")


def delong(y: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(AUROCs, covariance) of M models scored on the same images, by DeLong et al. (1988) in the fast
    midrank form of Sun and Xu (2014): with m positives and n negatives, each model's positive placements
    V10 = (rank among all - rank among positives) / n and negative placements V01 = 1 - (rank among all - rank
    among negatives) / m; the covariance is S10 / m + S01 / n (S the sample covariances of the placements)."""
    y = np.asarray(y).astype(bool)
    scores = np.atleast_2d(np.asarray(scores, dtype=float))
    m, n = int(y.sum()), int((~y).sum())
    if m < 2 or n < 2:
        raise ValueError("DeLong's covariance needs at least two positives and two negatives")
    v10, v01, aucs = [], [], []
    for s in scores:
        x_pos, x_neg = s[y], s[~y]
        rank_all = _midranks(np.concatenate([x_pos, x_neg]))
        rank_pos, rank_neg = _midranks(x_pos), _midranks(x_neg)
        aucs.append((rank_all[:m].sum() - m * (m + 1) / 2) / (m * n))
        v10.append((rank_all[:m] - rank_pos) / n)
        v01.append(1.0 - (rank_all[m:] - rank_neg) / m)
    s10 = np.atleast_2d(np.cov(np.array(v10)))
    s01 = np.atleast_2d(np.cov(np.array(v01)))
    return np.array(aucs), s10 / m + s01 / n


def delong_test(y: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[float, float | None]:
    """(AUROC(a) - AUROC(b), two-sided p of DeLong's z test); p is None when the difference has no variance
    (e.g. identical scores)."""
    aucs, cov = delong(y, np.vstack([a, b]))
    delta = float(aucs[0] - aucs[1])
    variance = float(cov[0, 0] + cov[1, 1] - 2 * cov[0, 1])
    if not variance > 1e-15:
        return delta, None
    return delta, float(2 * norm.sf(abs(delta) / np.sqrt(variance)))


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values: sort ascending, p * (m - rank + 1), running maximum, clipped at 1.
    None entries stay None and do not count in m."""
    def adjust(p: np.ndarray) -> np.ndarray:
        return np.minimum(np.maximum.accumulate(p * (p.size - np.arange(p.size))), 1.0)

    return adjusted_pvalues(pvalues, adjust)

"""Statistics for comparing several models on the same images: the patient resamples they share, AUROC replicates
of every model under one resample, ranks and the share of resamples each model leads, DeLong's covariance of
correlated AUROCs, and Holm's step-down adjustment.

Resamples are drawn in chunks of replicates so that a weight matrix never holds more than ``MAX_CELLS`` numbers;
chunk ``k`` of stream ``s`` draws from ``SeedSequence([seed, s, k])``, so a task's resamples do not depend on the
size of the chunks' neighbours and independent streams (one per task) never share draws.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np
from scipy.stats import norm, rankdata

from focus_eval.metrics.bootstrap import adjusted_pvalues
from focus_eval.metrics.core import auroc_batch

MAX_CELLS = 4_000_000  # numbers in one chunk of resample weights (32 MB of float64)


def cluster_index(clusters: Sequence[Any]) -> tuple[np.ndarray, int]:
    """(cluster number of each row, number of clusters), clusters numbered in sorted order of their ids."""
    _, cluster_of_row = np.unique(np.asarray(clusters, dtype=object).astype(str), return_inverse=True)
    return cluster_of_row, int(cluster_of_row.max()) + 1 if cluster_of_row.size else 0


def resample_counts(n_clusters: int, n_boot: int, seed: int = 0, stream: int = 0,
                    max_cells: int = MAX_CELLS, width: int | None = None) -> Iterator[np.ndarray]:
    """Chunks (b, n_clusters) of cluster multiplicities, ``n_boot`` rows in all: each row draws ``n_clusters``
    clusters with replacement. ``width`` (the row count of the weights they will be expanded to) sizes chunks."""
    rows = max(1, max_cells // max(width or 0, n_clusters, 1))
    for k, start in enumerate(range(0, max(n_boot, 0), rows)):
        b = min(rows, n_boot - start)
        if n_clusters == 0:
            yield np.zeros((b, 0))
            continue
        rng = np.random.default_rng(np.random.SeedSequence([seed, stream, k]))
        draws = rng.integers(0, n_clusters, size=(b, n_clusters))
        yield np.bincount((draws + (np.arange(b) * n_clusters)[:, None]).ravel(),
                          minlength=b * n_clusters).reshape(b, n_clusters).astype(float)


def resample_weights(clusters: Sequence[Any], n_boot: int, seed: int = 0, stream: int = 0,
                     max_cells: int = MAX_CELLS) -> Iterator[np.ndarray]:
    """Chunks (b, n) of row multiplicities, ``n_boot`` rows in all: each row draws as many patients (clusters) as
    there are, with replacement, and keeps every image of a drawn patient."""
    cluster_of_row, n_clusters = cluster_index(clusters)
    for counts in resample_counts(n_clusters, n_boot, seed, stream, max_cells, width=cluster_of_row.size):
        yield counts[:, cluster_of_row] if n_clusters else np.zeros((counts.shape[0], cluster_of_row.size))


def auroc_replicates(y: np.ndarray, scores: np.ndarray, clusters: Sequence[Any], n_boot: int, seed: int = 0,
                     stream: int = 0, max_cells: int = MAX_CELLS) -> np.ndarray:
    """(1 + n_boot, M): every model's AUROC (row 0 on all images, then one row per shared resample). ``scores``
    is (M, n): the M models' scores of the same n images, labelled ``y``."""
    scores = np.atleast_2d(np.asarray(scores, dtype=float))
    out = [np.array([auroc_batch(y, s)[0] for s in scores])[None, :]]
    for weights in resample_weights(clusters, n_boot, seed, stream, max_cells):
        out.append(np.stack([auroc_batch(y, s, weights) for s in scores], axis=1))
    return np.vstack(out)


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

"""Patient-clustered bootstrap resamples, made chunk by chunk within a memory budget.

A resample draws as many patients (clusters) as the data has, with replacement, and weighs each image by the
number of times its patient was drawn. ``Resamples`` never holds the (n_boot, n) weight matrix: ``map(compute)``
runs ``compute`` over chunks of weight rows (the point row of ones first, where asked) and joins the results, so
a metric over the resamples needs about ``budget`` bytes whatever ``n_boot`` and the number of images.

The draws come from one generator, chunk after chunk, in the order one (n_boot, n_clusters) draw takes them:
the weights, and every metric computed row by row from them, are the same bits whatever the chunk size.

The budget: ``$FOCUS_BOOT_MEMORY_MB`` (default 256 MiB), read when a ``Resamples`` is made. A chunk holds
``budget // (WORKING_COPIES * 8 * max(images, patients))`` rows (at least one): a metric keeps up to
``WORKING_COPIES`` weight-sized float64 arrays of a chunk at once (the weights, their reordered copy, per-level
sums and their running sums). Where one chunk holds every row the weights are made once and kept; past it they
are drawn again for each ``map`` (the same numbers: time instead of memory).
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator, Sequence

import numpy as np

MEMORY_BUDGET_ENV = "FOCUS_BOOT_MEMORY_MB"
DEFAULT_MEMORY_MB = 256
WORKING_COPIES = 8


def memory_budget() -> int:
    """Bytes one chunk of resamples may take while a metric runs over it (``$FOCUS_BOOT_MEMORY_MB`` MiB)."""
    from focus_eval.errors import FocusError

    text = os.environ.get(MEMORY_BUDGET_ENV) or str(DEFAULT_MEMORY_MB)
    try:
        megabytes = float(text)
    except ValueError:
        megabytes = float("nan")
    if not megabytes > 0:
        raise FocusError(f"${MEMORY_BUDGET_ENV}: expected a positive number of MiB, got {text!r}")
    return int(megabytes * 2 ** 20)


def cluster_index(clusters: Sequence[Any]) -> tuple[np.ndarray, int]:
    """(cluster number of each row, number of clusters), clusters numbered in sorted order of their ids."""
    _, cluster_of_row = np.unique(np.asarray(clusters, dtype=object).astype(str), return_inverse=True)
    return cluster_of_row.reshape(-1), int(cluster_of_row.max()) + 1 if cluster_of_row.size else 0


def join(parts: list[Any]) -> Any:
    """Chunk results joined along their first axis: arrays, or dicts of them (nested)."""
    if isinstance(parts[0], dict):
        return {key: join([part[key] for part in parts]) for key in parts[0]}
    return np.concatenate(parts, axis=0)


class Resamples:
    """``n_boot`` cluster resamples of ``len(clusters)`` rows (after a point row of ones where ``point``), fixed
    by ``seed`` (and ``stream``: stream ``s`` draws from ``SeedSequence([seed, s, 0])``, so streams never share
    draws); ``budget`` bytes (default ``memory_budget()``) size the chunks."""

    def __init__(self, clusters: Sequence[Any], n_boot: int, seed: int = 0, stream: int | None = None,
                 point: bool = True, budget: int | None = None):
        self.cluster_of_row, self.n_clusters = cluster_index(clusters)
        self.n_boot, self.seed, self.stream, self.point = max(int(n_boot), 0), int(seed), stream, point
        self.budget = memory_budget() if budget is None else int(budget)
        width = max(self.cluster_of_row.size, self.n_clusters, 1)
        self.chunk_rows = max(1, self.budget // (WORKING_COPIES * 8 * width))
        self._whole: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.cluster_of_row.size)

    @property
    def rows(self) -> int:
        """Weight rows in all: the point row and the resamples."""
        return int(self.point) + self.n_boot

    def _generator(self) -> np.random.Generator:
        if self.stream is None:
            return np.random.default_rng(self.seed)
        return np.random.default_rng(np.random.SeedSequence([self.seed, self.stream, 0]))

    def chunks(self) -> Iterator[np.ndarray]:
        """(b, n) weight rows, ``rows`` in all, at most ``chunk_rows`` at a time."""
        rng = self._generator()
        for start in range(0, self.rows, self.chunk_rows):
            stop = min(start + self.chunk_rows, self.rows)
            ones = 1 if self.point and start == 0 else 0
            b = stop - start - ones
            if self.n_clusters and b:
                draws = rng.integers(0, self.n_clusters, size=(b, self.n_clusters))
                counts = np.bincount((draws + (np.arange(b) * self.n_clusters)[:, None]).ravel(),
                                     minlength=b * self.n_clusters).reshape(b, self.n_clusters)
                del draws
                drawn = counts[:, self.cluster_of_row].astype(float)
            else:
                drawn = np.zeros((b, self.n))
            yield np.vstack([np.ones((1, self.n)), drawn]) if ones else drawn

    def map(self, compute: Callable[[np.ndarray], Any]) -> Any:
        """``compute(weights)`` over every chunk, joined along the first axis (arrays, or dicts of them)."""
        if self.rows <= self.chunk_rows:
            if self._whole is None:
                self._whole = next(self.chunks(), np.zeros((0, self.n)))
            return compute(self._whole)
        return join([compute(chunk) for chunk in self.chunks()])

    def matrix(self) -> np.ndarray:
        """Every weight row at once, (rows, n): for small inputs and checks; metrics go through ``map``."""
        return self.map(lambda weights: weights)


def over(weights: "np.ndarray | Resamples", compute: Callable[[np.ndarray], Any]) -> Any:
    """``compute`` of a weight matrix, or joined over the chunks of a ``Resamples``."""
    if isinstance(weights, Resamples):
        return weights.map(compute)
    return compute(np.asarray(weights, dtype=float))

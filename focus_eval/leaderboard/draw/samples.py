"""Each results line's sample file, read once: its reliability diagram, the per-group values behind its
fairness and robustness gaps and its AUROC's bootstrap replicates (for the interval of a mean of task scores),
or the reason there are none (no file, ``--no-samples``, no scored rows)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from focus_eval.errors import DataError
from focus_eval.leaderboard.draw import charts
from focus_eval.leaderboard.draw.calibration import Calibration, read_test_rows, reliability_bins, samples_path
from focus_eval.leaderboard.draw.subgroups import AttributeGroups, subgroup_values
from focus_eval.metrics.arrays import SampleArrays, metric_batch
from focus_eval.metrics.bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, bootstrap_weights
from focus_eval.results.collect import Entry

NO_SAMPLES_NOTE = "Published without per-image data (--no-samples), so no curve."


@dataclass(frozen=True)
class SampleView:
    """What one results line's sample file adds to the site, or why it adds nothing."""

    entry: Entry
    chart: charts.Reliability | None
    calibration: Calibration | None
    note: str | None
    groups: dict[str, AttributeGroups] = field(default_factory=dict)
    # the line's AUROC and its bootstrap replicates, recomputed from the samples as scoring drew them
    auroc_replicates: np.ndarray | None = None
    # the test rows of the sample file, read once per build (the per-image page shows them)
    rows: list[dict] | None = None


def load_samples(entries: Iterable[Entry], read_samples: bool = True) -> dict[tuple, SampleView]:
    """A view per results line (keyed by ``Entry.key``)."""
    return {entry.key: _view(entry, read_samples) for entry in entries}


def _view(entry: Entry, read_samples: bool) -> SampleView:
    if not read_samples:
        return SampleView(entry=entry, chart=None, calibration=None, note=NO_SAMPLES_NOTE)
    if entry.raw.get("output_type") not in (None, "binary"):
        return SampleView(entry=entry, chart=None, calibration=None,
                          note="A multi-class task: no binary reliability curve.")
    path = samples_path(entry.sample_dir, entry.line.task, entry.line.method)
    if path is None or not path.is_file():
        return SampleView(entry=entry, chart=None, calibration=None,
                          note="No sample file next to the results, so no curve.")
    rows = read_test_rows(path)
    try:
        arrays = SampleArrays.from_samples(rows)
    except ValueError as exc:
        raise DataError(str(exc), file=str(path)) from exc
    scored = arrays.has_score  # the rows the ECE uses: a score and no error
    calibration = Calibration(bins=reliability_bins(arrays.score[scored], arrays.y[scored]), n=int(scored.sum()),
                              n_skipped=int((~scored).sum()))
    if not calibration.n:
        return SampleView(entry=entry, chart=None, calibration=calibration,
                          note="The sample file has no scored test rows.", rows=rows)
    return SampleView(entry=entry, chart=charts.reliability(calibration), calibration=calibration, note=None,
                      groups=subgroup_values(arrays, entry.line.fairness, entry.line.robustness),
                      auroc_replicates=auroc_replicates(entry, arrays), rows=rows)


def auroc_replicates(entry: Entry, arrays: SampleArrays) -> np.ndarray | None:
    """The AUROC and its bootstrap replicates (1 + n_boot values) over the line's test samples, drawn as scoring
    drew them (patients, the line's ``n_boot`` and seed); None without an AUROC or replicates."""
    n_boot = DEFAULT_N_BOOT if entry.line.n_boot is None else int(entry.line.n_boot)
    if entry.metric("auroc") is None or n_boot < 1:
        return None
    seed = entry.line.extra.get("seed")
    weights = bootstrap_weights(arrays.patient_id, n_boot, DEFAULT_SEED if seed is None else int(seed))
    return metric_batch("auroc", arrays, weights)

"""The bootstrap in chunks: the same bits whatever the memory budget, and memory bounded by it."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from focus_eval.errors import FocusError
from focus_eval.metrics import resamples
from focus_eval.metrics.arrays import SampleArrays, metric_batch
from focus_eval.metrics.bootstrap import paired_delta
from focus_eval.metrics.paired import auroc_replicates
from focus_eval.metrics.resamples import MEMORY_BUDGET_ENV, WORKING_COPIES, Resamples
from focus_eval.scoring import evaluate_samples


def budget_for(rows: int, width: int) -> int:
    """The budget that makes chunks of exactly ``rows`` weight rows of ``width`` columns."""
    return rows * WORKING_COPIES * 8 * width


def patients_of(n: int) -> list[str]:
    return [f"p{i // 3}" for i in range(n)]  # three images per patient


@pytest.mark.parametrize("rows", [1, 2, 7, 64])
@pytest.mark.parametrize("stream", [None, 4])
def test_resamples_are_the_same_bits_in_any_chunk_size(rows, stream):
    patients = patients_of(90)
    whole = Resamples(patients, 150, seed=11, stream=stream)
    chunked = Resamples(patients, 150, seed=11, stream=stream, budget=budget_for(rows, 90))
    assert whole.chunk_rows >= whole.rows and chunked.chunk_rows == rows
    assert sum(1 for _ in chunked.chunks()) == -(-151 // rows)
    assert np.array_equal(chunked.matrix(), whole.matrix())
    matrix = whole.matrix()
    assert matrix.shape == (151, 90) and (matrix[0] == 1).all() and (matrix[1:].sum(1) == 90).all()
    assert (matrix[:, 0::3] == matrix[:, 1::3]).all()  # a patient's images are drawn together


def binary_samples(n: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        label = int(rng.random() < 0.4)
        score = float(np.clip(0.3 * label + 0.7 * rng.random(), 0, 1))
        out.append({"image_id": f"i{i}", "patient_id": f"p{i // 2}", "split": "test", "label": label,
                    "score": score, "pred": int(score > 0.5), "age": float(30 + i % 50),
                    "sex": ("male", "female")[i % 2], "quality": ("adequate", "inadequate")[i % 3 == 0],
                    "error": None})
    return out


def meta(**extra) -> dict:
    return {"model": "m", "family": "vm", "domain": "general", "untrained": False, "method": "linear_probe",
            "task": "dr_x", "dataset": "x", "target": "dr", "proxy": False, "adapter": None, "task_version": 1,
            "task_hash": "h", "preset_hash": "p", "age_threshold": 50.0, "n_boot": 120, "seed": 3,
            "created": "2026-01-01T00:00:00Z", "threshold_rule": "argmax", **extra}


def class_samples(n: int) -> list[dict]:
    rng = np.random.default_rng(5)
    out = []
    for i in range(n):
        probs = rng.dirichlet([1, 1, 1])
        out.append({"image_id": f"i{i}", "patient_id": f"p{i // 2}", "split": "test", "label": int(i % 3),
                    "score": None, "pred": int(probs.argmax()), "probs": probs.tolist(), "age": float(40 + i % 30),
                    "sex": ("male", "female")[i % 2], "quality": "adequate", "error": None,
                    "output_type": "multiclass"})
    return out


CLASS_META = {"extra": {"output_type": "multiclass", "classes": ["g0", "g1", "g2"], "multilabel": False,
                        "ordinal": True}}


@pytest.mark.parametrize("samples, extra", [(binary_samples(120), {}), (class_samples(90), CLASS_META)],
                         ids=["binary", "multiclass"])
def test_a_results_line_is_the_same_whatever_the_memory_budget(samples, extra, monkeypatch):
    whole = evaluate_samples(samples, meta(**extra)).to_dict()
    monkeypatch.setenv(MEMORY_BUDGET_ENV, "0.01")  # 10 KiB: one or two resamples per chunk
    assert Resamples([s["patient_id"] for s in samples], 120).chunk_rows <= 2
    chunked = evaluate_samples(samples, meta(**extra)).to_dict()
    assert chunked == whole
    assert whole["ci"]["auroc" if not extra else "macro_auroc"][0] is not None


def test_paired_replicates_and_deltas_are_the_same_whatever_the_memory_budget(monkeypatch):
    samples = binary_samples(100)
    base = SampleArrays.from_samples(samples)
    tuned = SampleArrays.from_samples([{**s, "score": 1 - s["score"] / 2} for s in samples])
    scores = np.vstack([base.score, tuned.score])
    whole = auroc_replicates(base.y, scores, base.patient_id, 200, seed=2, stream=1)
    chunked = auroc_replicates(base.y, scores, base.patient_id, 200, seed=2, stream=1, budget=budget_for(3, 100))
    assert whole.shape == (201, 2) and np.array_equal(chunked, whole, equal_nan=True)
    before = paired_delta(base, tuned, "brier", n_boot=200, seed=2)
    monkeypatch.setenv(MEMORY_BUDGET_ENV, "0.01")
    assert paired_delta(base, tuned, "brier", n_boot=200, seed=2) == before


def peak_bytes(compute) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        compute()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_bootstrap_stays_within_its_memory_budget():
    n, n_boot, budget = 4000, 600, 2 ** 20  # the weights alone: 600 x 4000 x 8 bytes = 19 MB
    arrays = SampleArrays.from_samples(binary_samples(n))
    chunked = Resamples(arrays.patient_id, n_boot, seed=1, budget=budget)
    whole = Resamples(arrays.patient_id, n_boot, seed=1, budget=10 * 2 ** 30)
    values = {}
    chunked_peak = peak_bytes(lambda: values.update(chunked=metric_batch("auroc", arrays, chunked)))
    whole_peak = peak_bytes(lambda: values.update(whole=metric_batch("auroc", arrays, whole)))
    assert np.array_equal(values["chunked"], values["whole"])
    assert chunked_peak < 2 * budget, chunked_peak
    assert whole_peak > 8 * n_boot * n, whole_peak


def test_a_large_bootstrap_is_no_longer_refused_for_memory():
    patients = [f"p{i}" for i in range(20_000)]
    big = Resamples(patients, n_boot=100_000)  # 16 GB of weights at once; here 256 MiB a chunk
    assert 1 <= big.chunk_rows and big.chunk_rows * WORKING_COPIES * 8 * 20_000 <= 256 * 2 ** 20
    first = next(big.chunks())
    assert first.shape == (big.chunk_rows, 20_000) and (first[0] == 1).all()


@pytest.mark.parametrize("value", ["0", "-5", "lots", "nan"])
def test_a_bad_memory_budget_is_refused_naming_the_variable(value, monkeypatch):
    monkeypatch.setenv(MEMORY_BUDGET_ENV, value)
    with pytest.raises(FocusError, match=f"FOCUS_BOOT_MEMORY_MB: expected a positive number of MiB, got '{value}'"):
        resamples.memory_budget()

"""Records and synthetic data roots the task, runner and method tests build."""

from __future__ import annotations

from pathlib import Path

from focus_eval.data.records import ImageRecord


def image_record(dataset: str, **fields) -> ImageRecord:
    """One record of ``dataset`` (image ``img1`` of patient ``p1`` at /x.jpg) with the label ``fields`` given."""
    return ImageRecord(dataset, "img1", "p1", path=Path("/x.jpg"), relpath="x.jpg", **fields)


def synthetic_root(tmp_path_factory, name: str, n: int, seed: int) -> Path:
    """A new temporary folder ``name`` holding the synthetic datasets written with ``n`` and ``seed``."""
    from focus_eval.synth.datasets import write_synthetic

    root = tmp_path_factory.mktemp(name)
    write_synthetic(root, n=n, seed=seed)
    return root

"""Every path under an output folder, spelled once.

    <output>/<model>/run-<UTC stamp>.json            run manifest
    <output>/<model>/samples/<task>.<method>.jsonl   one sample line per evaluated image
    <output>/<model>/samples/<task>.<method>.meta.json   the unit's descriptive record (UnitMeta)
    <output>/<model>/samples/.parts/<task>.<method>.r<rank>.jsonl   lines of an unfinished unit, per process
    <output>/<model>/results.jsonl                   one results line per (task, method, adapter)
    <output>/<model>/limit-<N>/...                   a --limit run: the same files, beside the full results
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SAMPLES_DIR = "samples"
PARTS_DIR = ".parts"
RESULTS_FILE = "results.jsonl"
META_SUFFIX = ".meta.json"
SAMPLES_SUFFIX = ".jsonl"
MANIFEST_GLOB = "run-*.json"


def model_dir_name(model: str, adapter_id: str | None = None) -> str:
    """``<model>`` for a base model, ``<model>@<adapter>`` for one evaluated with a LoRA adapter."""
    return model if not adapter_id else f"{model}@{adapter_id}"


def limit_dir_name(limit: int | float) -> str:
    return f"limit-{limit}"


def unit_stem(task: str, method: str) -> str:
    return f"{task}.{method}"


@dataclass(frozen=True)
class OutputLayout:
    """The files of one model folder, ``<output>/<model>``."""

    root: Path

    @classmethod
    def for_model(cls, output_path: str | Path, model: str, adapter_id: str | None = None,
                  limit: int | float | None = None) -> "OutputLayout":
        root = Path(output_path) / model_dir_name(model, adapter_id)
        return cls(root / limit_dir_name(limit) if limit is not None else root)

    @property
    def samples_dir(self) -> Path:
        return self.root / SAMPLES_DIR

    @property
    def parts_dir(self) -> Path:
        return self.samples_dir / PARTS_DIR

    @property
    def results(self) -> Path:
        return self.root / RESULTS_FILE

    def samples(self, task: str, method: str) -> Path:
        return self.samples_dir / f"{unit_stem(task, method)}{SAMPLES_SUFFIX}"

    def meta(self, task: str, method: str) -> Path:
        return self.samples_dir / f"{unit_stem(task, method)}{META_SUFFIX}"

    def part(self, task: str, method: str, rank: int) -> Path:
        return self.parts_dir / f"{unit_stem(task, method)}.r{rank}{SAMPLES_SUFFIX}"

    def started(self, task: str, method: str) -> Path:
        """The fingerprint of a unit whose scoring has begun (removed when it finishes)."""
        return self.parts_dir / f"{unit_stem(task, method)}.fingerprint.json"

    def parts(self, task: str, method: str) -> list[Path]:
        """Part files of one unit, every process's, in rank order."""
        return sorted(self.parts_dir.glob(f"{unit_stem(task, method)}.r*{SAMPLES_SUFFIX}"))

    def manifest(self, stamp: str) -> Path:
        return self.root / f"run-{stamp}.json"

    def manifests(self) -> list[Path]:
        return sorted(self.root.glob(MANIFEST_GLOB))

    def meta_files(self) -> list[Path]:
        return sorted(self.samples_dir.glob(f"*{META_SUFFIX}"))

    def sample_files(self) -> list[Path]:
        return sorted(self.samples_dir.glob(f"*{SAMPLES_SUFFIX}"))

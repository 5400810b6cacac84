"""The harmonized per-image record every dataset reader yields, and the result of loading a dataset."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TARGETS = ("dr", "referable_dr", "glaucoma")
SPLITS = ("train", "val", "test")
SEXES = ("male", "female")
QUALITIES = ("adequate", "inadequate")


@dataclass
class ImageRecord:
    """One image of one dataset with its harmonized labels and metadata.

    Targets are 1, 0 or None (not defined / excluded for this image). ``path`` is absolute and always
    inside the dataset folder; ``relpath`` is the same file relative to that folder.
    """

    dataset: str
    image_id: str
    patient_id: str
    path: Path
    relpath: str
    split: str | None = None
    dr: int | None = None
    referable_dr: int | None = None
    glaucoma: int | None = None
    age: float | None = None
    sex: str | None = None
    quality: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def label(self, target: str) -> int | None:
        if target not in TARGETS:
            raise KeyError(f"unknown target {target!r}; expected one of {', '.join(TARGETS)}")
        return getattr(self, target)


@dataclass
class Skipped:
    """A label row (or image file) left out of a dataset, with the reason."""

    file: str
    row: int | None
    image_id: str | None
    reason: str

    def __str__(self) -> str:
        where = self.file if self.row is None else f"{self.file}, row {self.row}"
        who = f" ({self.image_id})" if self.image_id else ""
        return f"{where}{who}: {self.reason}"


@dataclass
class DatasetLoad:
    """Everything a reader found in one dataset folder, after cohort filtering and splitting."""

    name: str
    root: Path
    records: list[ImageRecord]
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    # image id -> where its record came from (label row and file), to name both places of a repeated id
    origins: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def split(self, split: str) -> list[ImageRecord]:
        return [r for r in self.records if r.split == split]

    def by_id(self) -> dict[str, ImageRecord]:
        return {r.image_id: r for r in self.records}

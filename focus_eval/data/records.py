"""The harmonized per-image record every dataset reader yields, and the result of loading a dataset."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TARGETS = ("dr", "referable_dr", "glaucoma")
SPLITS = ("train", "val", "test")
SEXES = ("male", "female")
QUALITIES = ("adequate", "inadequate")
LATERALITIES = ("left", "right")
NORMAL = "normal"  # the one condition of an image its dataset calls normal
MODALITIES = ("cfp", "oct", "uwf")  # colour fundus photograph, optical coherence tomography, ultra-wide field
# Record fields a non-binary task may read its label from. Scalar fields hold one value per image; named
# fields are dictionaries read one entry at a time as ``<field>.<name>`` (``findings.hemorrhage``); list
# values (``conditions``, ``lesion_quadrants.<lesion>``) feed multi-answer tasks.
SCALAR_FIELDS = ("laterality", "dr_grade", "abnormal", "modality", "fovea_position")
NAMED_FIELDS = ("findings", "lesion_quadrants", "lesion_size", "lesion_count")
LIST_FIELDS = ("conditions", "lesion_quadrants")
LABEL_FIELDS = SCALAR_FIELDS + ("conditions",) + NAMED_FIELDS + TARGETS


@dataclass
class ImageRecord:
    """One image of one dataset with its harmonized labels and metadata.

    Targets are 1, 0 or None (not defined / excluded for this image). ``path`` is absolute and always
    inside the dataset folder; ``relpath`` is the same file relative to that folder.

    The fields FunBench-style tasks read (None: the dataset does not say): ``laterality`` ("left"/"right"),
    ``dr_grade`` (ICDR 0-4), ``abnormal`` (1/0), ``findings`` (finding name -> 1/0, only the findings the
    dataset annotates) and ``conditions`` (the conditions present, ``("normal",)`` for an image its dataset
    calls normal, an empty tuple for an abnormal image none of whose listed conditions applies). The rule
    per dataset is in docs/DATASETS.md.

    Imaging and anatomy: ``modality`` (``MODALITIES``), ``fovea_position`` (the side of the image, "left" or
    "right", on which the fovea lies relative to the optic disc centre). Per lesion, from lesion masks:
    ``lesion_quadrants`` (lesion -> the quadrants around the optic disc centre it occupies),
    ``lesion_size`` (lesion -> size bin) and ``lesion_count`` (lesion -> count bin); the rules and bins are
    in docs/TASKS.md.
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
    laterality: str | None = None
    dr_grade: int | None = None
    abnormal: int | None = None
    findings: dict[str, int] = field(default_factory=dict)
    conditions: tuple[str, ...] | None = None
    modality: str | None = None
    fovea_position: str | None = None
    lesion_quadrants: dict[str, tuple[str, ...]] = field(default_factory=dict)
    lesion_size: dict[str, str] = field(default_factory=dict)
    lesion_count: dict[str, str] = field(default_factory=dict)

    def label(self, target: str) -> int | None:
        if target not in TARGETS:
            raise KeyError(f"unknown target {target!r}; expected one of {', '.join(TARGETS)}")
        return getattr(self, target)

    def value(self, name: str) -> Any:
        """The value of a label field (``LABEL_FIELDS``; ``<field>.<name>`` for an entry of a named field)."""
        head, dot, entry = name.partition(".")
        if dot and head in NAMED_FIELDS and entry:
            return getattr(self, head).get(entry)
        if name not in LABEL_FIELDS or name in NAMED_FIELDS:
            raise KeyError(f"unknown label field {name!r}; expected one of {', '.join(SCALAR_FIELDS)}, conditions, "
                           f"{', '.join(f + '.<name>' for f in NAMED_FIELDS)} or a target ({', '.join(TARGETS)})")
        return getattr(self, name)


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
    # canonical file path (os.path.realpath) -> its record: one file enters once
    files: dict[str, ImageRecord] = field(default_factory=dict, repr=False, compare=False)

    def split(self, split: str) -> list[ImageRecord]:
        return [r for r in self.records if r.split == split]

    def by_id(self) -> dict[str, ImageRecord]:
        return {r.image_id: r for r in self.records}

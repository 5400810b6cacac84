"""``ReaderSpec``: what the registry needs to know about a dataset reader besides its ``read(folder)``
function (targets, cohorts, split policy, group key, documented counts), declared once per reader module."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from focus_eval.data.records import MODALITIES, TARGETS, DatasetLoad, ImageRecord
from focus_eval.errors import FocusError

Cohort = Callable[[ImageRecord], bool]
ALL_IMAGES = "all images"  # the documented_counts key of counts over every image, before cohort and split


def every_image(record: ImageRecord) -> bool:
    """The cohort that keeps every image."""
    return True


@dataclass(frozen=True)
class ReaderSpec:
    """One dataset reader's contract with the registry.

    ``cohorts`` maps a cohort name to the test that keeps a record; ``official_split`` says that ``read``
    sets every record's split; ``group_key`` says in words what keeps images of one person in one split
    (for reports); ``documented_counts`` holds the figures the dataset's documentation states, per split
    or ``ALL_IMAGES`` -> count name (``n``, ``<target>_pos``, ``<target>_neg``) -> number, and may be empty.
    ``targets`` may be empty for a dataset whose labels are only the FunBench record fields (localization
    centres, say). ``folder`` names the folder under the data root that the reader reads when it is not the
    registry name (one download whose parts several readers read, like IDRiD's parts A, B and C); ``part``
    then names the folder, at any depth below it, that holds this reader's part, so that the shared folder
    counts as this dataset only where that part is present. ``modality`` is the imaging modality of every
    record that does not set its own (``MODALITIES``; a reader of a mixed dataset sets it per record).
    ``label_rules`` says, per label field, how the reader derives it from the dataset's own columns; every
    load records it in its metadata.

    What every reader shares lives here and in the registry, so that a reader states only what differs: the
    registry calls ``read`` with an existing folder only (a missing one is a DataError naming the folder to
    extract the archive into), a reader starts its load with ``new_load`` and ends it with ``finish_load``.
    """

    name: str
    targets: tuple[str, ...]
    group_key: str
    cohorts: Mapping[str, Cohort] = field(default_factory=lambda: {"all": every_image})
    default_cohort: str = "all"
    official_split: bool = False
    documented_counts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    folder: str | None = None
    part: str | None = None
    modality: str = "cfp"
    label_rules: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        where = f"reader spec {self.name!r}"
        unknown = [t for t in self.targets if t not in TARGETS]
        if unknown:
            raise FocusError(f"{where}: targets must be some of {', '.join(TARGETS)}; got {list(self.targets)}")
        if self.default_cohort not in self.cohorts:
            raise FocusError(f"{where}: default_cohort {self.default_cohort!r} is not one of its cohorts "
                             f"({', '.join(self.cohorts)})")
        if not self.group_key:
            raise FocusError(f"{where}: group_key must say what groups the images (e.g. 'patient')")
        if self.modality not in MODALITIES:
            raise FocusError(f"{where}: modality must be one of {', '.join(MODALITIES)}; got {self.modality!r}")


    def new_load(self, folder: Path, warnings: Sequence[str] = ()) -> DatasetLoad:
        """An empty load of this dataset read from ``folder``, with the reader's first warnings."""
        return DatasetLoad(name=self.name, root=Path(folder), records=[], warnings=list(warnings))

    def finish_load(self, load: DatasetLoad, label_files: str | Sequence[str] | Mapping[str, Any] | None = None,
                    **metadata: Any) -> DatasetLoad:
        """The metadata tail of every ``read``: ``label_file``, the label file's path or the paths of several
        joined by ", " (nested mappings and empty entries allowed; None: none read); ``label_files`` when
        they are given per split or part (a mapping); the spec's ``label_rules`` when it has any; then the
        reader's own fields. Returns ``load``."""
        if label_files is None:
            load.metadata.setdefault("label_file", None)
        elif isinstance(label_files, str):
            load.metadata["label_file"] = label_files
        else:
            load.metadata["label_file"] = ", ".join(_paths(label_files))
            if isinstance(label_files, Mapping):
                load.metadata["label_files"] = label_files
        if self.label_rules:
            load.metadata["label_rules"] = self.label_rules
        load.metadata.update(metadata)
        return load


def _paths(label_files: Sequence[str] | Mapping[str, Any]) -> Iterator[str]:
    """The paths of a list or of a (nested) mapping of label files, in order, empty entries left out."""
    for value in (label_files.values() if isinstance(label_files, Mapping) else label_files):
        if isinstance(value, Mapping):
            yield from _paths(value)
        elif value:
            yield value

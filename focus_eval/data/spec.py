"""``ReaderSpec``: what the registry needs to know about a dataset reader besides its ``read(folder)``
function (targets, cohorts, split policy, group key, documented counts), declared once per reader module."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from focus_eval.data.records import MODALITIES, TARGETS, ImageRecord
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


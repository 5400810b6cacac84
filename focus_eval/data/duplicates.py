"""Byte-identical images in one dataset: the content-digest pass of ``datasets check``. Two records whose files
have the same content digest (``data/content.py``: blake2b of the whole file, remembered per file) are one
picture filed twice: under two patients it escapes the patient-grouped split, across splits it is leakage, and
a test image equal to a training image is an error (the probe would be scored on a picture it was fitted on)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations
from typing import Callable, Iterable

from focus_eval.data import content
from focus_eval.data.records import ImageRecord

SHOWN = 10  # pairs named in a warning or an error (the JSON report lists every group)


@dataclass(frozen=True)
class Pair:
    """Two records of one picture."""

    first: ImageRecord
    second: ImageRecord

    @property
    def across_patients(self) -> bool:
        return self.first.patient_id != self.second.patient_id

    @property
    def across_splits(self) -> bool:
        return self.first.split != self.second.split

    @property
    def test_and_train(self) -> bool:
        return {self.first.split, self.second.split} == {"test", "train"}

    def __str__(self) -> str:
        return f"{_named(self.first)} = {_named(self.second)}"


def _named(record: ImageRecord) -> str:
    return f"{record.image_id} (patient {record.patient_id}, {record.split or 'no split'})"


@dataclass
class Identical:
    """The groups of records whose files are byte-identical (each group in load order), and the files that
    could not be read to compare (path: reason)."""

    groups: list[list[ImageRecord]] = field(default_factory=list)
    unreadable: dict[str, str] = field(default_factory=dict)

    def pairs(self) -> list[Pair]:
        return [Pair(a, b) for group in self.groups for a, b in combinations(group, 2)]

    def leakage(self) -> str | None:
        """The error when a test image is byte-identical to a training image, naming the pairs; else None."""
        leaked = [p for p in self.pairs() if p.test_and_train]
        if not leaked:
            return None
        tests = {(p.first if p.first.split == "test" else p.second).image_id for p in leaked}
        return (f"{len(tests)} test image(s) byte-identical to a training image (leakage: the test split holds "
                f"pictures the training split holds): {_listed(leaked)}")

    def warnings(self) -> list[str]:
        """One warning for pairs across patients or splits (possible leakage), one for pairs within one patient
        and split (a picture counted twice), one for files that could not be read."""
        pairs = self.pairs()
        out = []
        crossing = [p for p in pairs if p.across_patients or p.across_splits]
        if crossing:
            patients = sum(p.across_patients for p in crossing)
            splits = sum(p.across_splits for p in crossing)
            out.append(f"{len(crossing)} pair(s) of byte-identical images filed apart ({patients} across patients, "
                       f"{splits} across splits; possible leakage): {_listed(crossing)}")
        twice = [p for p in pairs if not (p.across_patients or p.across_splits)]
        if twice:
            out.append(f"{len(twice)} pair(s) of byte-identical images within one patient and split (one picture "
                       f"counted twice): {_listed(twice)}")
        if self.unreadable:
            path, reason = next(iter(self.unreadable.items()))
            out.append(f"{len(self.unreadable)} image file(s) could not be read to compare contents (e.g. {path}: "
                       f"{reason})")
        return out

    def to_dict(self) -> dict:
        pairs = self.pairs()
        return {"groups": [[{"image_id": r.image_id, "patient_id": r.patient_id, "split": r.split, "path": r.relpath}
                            for r in group] for group in self.groups],
                "pairs": len(pairs), "across_patients": sum(p.across_patients for p in pairs),
                "across_splits": sum(p.across_splits for p in pairs),
                "test_and_train": sum(p.test_and_train for p in pairs), "unreadable": dict(self.unreadable)}


def _listed(pairs: list[Pair]) -> str:
    more = f"; and {len(pairs) - SHOWN} more (see --json)" if len(pairs) > SHOWN else ""
    return "; ".join(str(p) for p in pairs[:SHOWN]) + more


def find_identical(records: Iterable[ImageRecord], digest: Callable[[ImageRecord], str] | None = None,
                   progress=None) -> Identical:
    """The byte-identical groups among ``records``: each file's content digest (``digest``, by default
    ``content.file_digest`` of its path, remembered per file), grouped. ``progress`` is a bar to update."""
    digest = digest or (lambda r: content.file_digest(r.path))
    by_digest: dict[str, list[ImageRecord]] = defaultdict(list)
    found = Identical()
    try:
        for record in records:
            try:
                by_digest[digest(record)].append(record)
            except OSError as exc:
                found.unreadable[record.relpath] = exc.strerror or str(exc)
            if progress is not None:
                progress.update(1)
    finally:
        content.save_digests()
    found.groups = [group for group in by_digest.values() if len(group) > 1]
    return found

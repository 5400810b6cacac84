"""A line's sample file against the benchmark's data. With the dataset at hand (``--data-root``): every sample
line's image id, split, label, patient id, age, sex and image quality against the dataset as focus-eval reads it
(``load_dataset`` and the task's selection), every test image present once, and the unit's age threshold.
Without it: the digest of the test rows' image ids and labels against the task's published digest
(``task.test_digests``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from focus_eval.results.schema import SampleLine, UnitMeta
from focus_eval.results.verdict import MISMATCH, UNVERIFIABLE, Finding
from focus_eval.task.test_digests import at_hand, published_digest, same_version, split_digest

FIELDS = ("patient_id", "label", "age", "sex", "quality")
SPLITS = ("test", "val")
EXAMPLES = 3


class DataCheck:
    """The data side of verification for one run of ``verify``: the data root (or None) and the dataset loads
    read so far, one per (dataset, cohort)."""

    def __init__(self, index, data_root: Path | None = None):
        self.index, self.root = index, data_root
        self._loads: dict[tuple[str, str | None], Any] = {}

    def findings(self, task, row: dict[str, Any], meta: UnitMeta, samples: list[SampleLine]) -> list[Finding]:
        if meta.fingerprint.get("split_file_sha256"):
            return [Finding(UNVERIFIABLE, "data", "run with --split-file: its splits are not the benchmark's, "
                            "so neither the data nor the published digest can confirm them")]
        stray = sorted({s.split for s in samples} - set(SPLITS))
        found = [Finding(MISMATCH, "data", f"sample lines of the {', '.join(stray)} split: a run writes test and "
                         "validation rows only", "samples.split")] if stray else []
        if at_hand(self.root, task.dataset):
            return found + against_data(task, row, meta, samples, self.load(task))
        return found + self.against_digest(task, row, samples)

    def load(self, task):
        from focus_eval.data.registry import load_dataset

        key = (task.dataset, task.cohort)
        if key not in self._loads:
            self._loads[key] = load_dataset(task.dataset, self.root, cohort=task.cohort)
        return self._loads[key]

    def against_digest(self, task, row: dict[str, Any], samples: list[SampleLine]) -> list[Finding]:
        absent = (f"no {task.dataset} folder under {self.root}" if self.root is not None
                  else "no --data-root given")
        if row.get("limited"):
            return [Finding(UNVERIFIABLE, "digest", f"a --limit run covers part of the test split, which the "
                            f"published digest cannot confirm ({absent})")]
        source = digest_task(self.index, task)
        published = published_digest(self.index, source)
        if published is None:
            return [Finding(UNVERIFIABLE, "digest", f"no published digest for this task ({absent})")]
        if not same_version(published.version, source.version):
            return [Finding(UNVERIFIABLE, "digest", f"the published digest is for task version {published.version}, "
                            f"the installed task is version {source.version} ({absent})")]
        try:
            sha, n = split_digest((s.image_id, s.label) for s in samples if s.split == "test")
        except ValueError as exc:
            return [Finding(MISMATCH, "digest", f"test rows: {exc}")]
        if sha != published.sha256:
            return [Finding(MISMATCH, "digest", f"test split: the samples' image ids and labels ({n} images) differ "
                            f"from the published test split ({published.n_test} images): another copy of the data "
                            "or other labels; --data-root checks each line against a copy at hand", "test_digest",
                            sha, published.sha256)]
        return []


def digest_task(index, task):
    """The task whose published digest covers ``task``'s test split: the base task of a fragility copy that
    keeps its split and labels (a prompt variant, a corruption, a label budget), the task itself otherwise (a
    copy relabelled by another rule has a split of its own, and no published digest)."""
    if "base_task" in task.variant and "label_rule" not in task.variant:
        return index.get(task.variant["base_task"])
    return task


def against_data(task, row: dict[str, Any], meta: UnitMeta, samples: list[SampleLine], load) -> list[Finding]:
    """Each sample line against the record of its image, each split complete, and the age threshold."""
    findings: list[Finding] = []
    by_id = {r.image_id: r for r in load.records}
    for split in SPLITS:
        rows = [s for s in samples if s.split == split]
        if split not in task.splits or (not rows and split != "test"):
            continue
        expected = {r.image_id: r for r in task.records(load, split)}
        findings += _row_findings(task, rows, split, expected, by_id, load.name)
        findings += _coverage(rows, split, expected, limited=bool(row.get("limited")), dataset=load.name)
    from focus_eval.metrics.fairness import age_threshold

    threshold = age_threshold([r.age for r in task.records(load, "test")])
    if not _same_number(meta.age_threshold, threshold):
        findings.append(Finding(MISMATCH, "data", f"age_threshold: recorded {meta.age_threshold}, the test split's "
                                f"median age {threshold}", "age_threshold", meta.age_threshold, threshold))
    return findings


def _same_number(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(b)))


def _row_findings(task, rows: list[SampleLine], split: str, expected: dict, by_id: dict, dataset: str
                  ) -> list[Finding]:
    wrong: dict[str, list[str]] = {}
    for s in rows:
        record = expected.get(s.image_id)
        if record is None:
            other = by_id.get(s.image_id)
            where = (f"not in {dataset}" if other is None else
                     f"in the {other.split} split" if task.label(other) is not None else "without a label here")
            wrong.setdefault("split", []).append(f"{s.image_id} ({where})")
            continue
        truth = {"patient_id": record.patient_id, "label": task.label(record), "age": record.age,
                 "sex": record.sex, "quality": record.quality}
        for name in FIELDS:
            if getattr(s, name) != truth[name]:
                wrong.setdefault(name, []).append(f"{s.image_id}: sample {getattr(s, name)!r}, dataset "
                                                  f"{truth[name]!r}")
    return [Finding(MISMATCH, "data", f"{len(items)} {split} sample line(s) {_WHAT.get(name, name + ' values')} "
                    f"{dataset} as read here: {'; '.join(items[:EXAMPLES])}{' ...' if len(items) > EXAMPLES else ''}",
                    f"samples.{name}")
            for name, items in wrong.items()]


_WHAT = {"split": "name images outside the task's split in", "label": "have labels that disagree with",
         "patient_id": "have patient ids that disagree with", "age": "have ages that disagree with",
         "sex": "have sexes that disagree with", "quality": "have image qualities that disagree with"}


def _coverage(rows: list[SampleLine], split: str, expected: dict, limited: bool, dataset: str) -> list[Finding]:
    """Every image of the split once (the first N in image-id order for a --limit run)."""
    counts = Counter(s.image_id for s in rows)
    findings = []
    twice = sorted(i for i, c in counts.items() if c > 1)
    if twice:
        findings.append(Finding(MISMATCH, "data", f"{len(twice)} {split} image(s) listed more than once: "
                                f"{', '.join(twice[:EXAMPLES])}", f"samples.{split}.duplicates"))
    wanted = sorted(expected)[:len(counts)] if limited else sorted(expected)
    missing = sorted(set(wanted) - set(counts))
    if missing:
        findings.append(Finding(MISMATCH, "data", f"{len(missing)} of the {len(wanted)} {split} images of {dataset} "
                                f"have no sample line: {', '.join(missing[:EXAMPLES])}"
                                f"{' ...' if len(missing) > EXAMPLES else ''}", f"samples.{split}.missing"))
    return findings

"""Published test-split digests: for each task, a digest of its test split's image ids and labels, computed once
from the official data and shipped beside the task files (``_test_digests.yaml`` at the top of a task folder), so
that a results line can be checked against the benchmark's test split where the data itself cannot travel
(docs/BENCHMARK_CARD.md, "Published test-split digests").

The digest, canonically: for every image of the task's test split (``Task.records(load, "test")``: the dataset
as ``load_dataset`` reads it, the task's cohort, split mapping and label rule) one line ``<image_id>\\t<label>``,
where ``<label>`` is the class index in decimal (0/1 for a binary task) or, for a task with several answers per
image, the sorted class indices joined by ``,``; the lines sorted by code point, each ended by ``\\n``, encoded as
UTF-8; the sha256 of those bytes in hex. A sample file's test rows give the same digest exactly when they hold the
same images with the same labels."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from focus_eval.digests import text_sha256
from focus_eval.errors import FocusError

DIGESTS_FILE = "_test_digests.yaml"
HEADER = """\
# Published test-split digests (docs/BENCHMARK_CARD.md, "Published test-split digests"): per task, the sha256 of
# the sorted lines "<image_id>\\t<label>" of its test split, the number of test images, and the task version they
# were computed for. Written by `focus-eval verify --write-digests --data-root ROOT` from the official data; a
# task without an entry has no published digest.
"""


@dataclass(frozen=True)
class PublishedDigest:
    """A task's published digest: the sha256, how many test images it covers, and the task version."""

    task: str
    sha256: str
    n_test: int
    version: Any
    file: Path

    def to_dict(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "n_test": self.n_test, "version": self.version}


def label_text(label: Any) -> str:
    """A label as the digest writes it: ``1``, ``3``, or ``0,2`` for several answers."""
    if isinstance(label, (list, tuple)):
        return ",".join(str(int(k)) for k in sorted(label))
    return str(int(label))


def split_digest(pairs: Iterable[tuple[str, Any]]) -> tuple[str, int]:
    """(sha256, count) of (image id, label) pairs, canonically (see the module docstring). An image id holding a
    tab or a line break cannot be written canonically and is a ValueError, as is an image listed twice."""
    lines = []
    for image_id, label in pairs:
        if any(c in image_id for c in "\t\r\n"):
            raise ValueError(f"image id {image_id!r} holds a tab or a line break")
        lines.append(f"{image_id}\t{label_text(label)}\n")
    ids = [line.split("\t", 1)[0] for line in lines]
    if len(set(ids)) != len(ids):
        raise ValueError("an image is listed twice")
    return text_sha256("".join(sorted(lines))), len(lines)


def split_pairs(task, load) -> list[tuple[str, Any]]:
    """(image id, label) of every image of the task's test split in ``load``."""
    return [(r.image_id, task.label(r)) for r in task.records(load, "test")]


def task_root(index, task) -> Path | None:
    """The task folder (shipped, or an --include-path folder) that holds the task's file."""
    path = Path(task.path).resolve()
    return next((root for root in index.roots if root == path or root in path.parents), None)


def read_digests(root: Path) -> dict[str, PublishedDigest]:
    """The digests published in a task folder (none when it has no digest file); a malformed entry is an error
    naming the file and the task."""
    import yaml

    from focus_eval.files import load_yaml_file

    path = Path(root) / DIGESTS_FILE
    if not path.is_file():
        return {}
    try:
        data = load_yaml_file(path) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise FocusError(f"{path}: cannot read the published digests: {exc}") from None
    if not isinstance(data, dict):
        raise FocusError(f"{path}: expected a mapping of task names to digests")
    return {name: _entry(path, name, value) for name, value in data.items()}


def _entry(path: Path, name: Any, value: Any) -> PublishedDigest:
    ok = (isinstance(name, str) and isinstance(value, dict) and isinstance(value.get("sha256"), str)
          and len(value["sha256"]) == 64 and isinstance(value.get("n_test"), int) and value["n_test"] >= 0)
    if not ok:
        raise FocusError(f"{path}: {name!r}: expected sha256 (64 hex digits), n_test and version")
    return PublishedDigest(name, value["sha256"], value["n_test"], value.get("version"), path)


def published_digest(index, task) -> PublishedDigest | None:
    """The digest published for ``task`` beside its task file, or None."""
    root = task_root(index, task)
    return read_digests(root).get(task.name) if root is not None else None


def same_version(a: Any, b: Any) -> bool:
    """Task versions compared as the task files write them (1, 1.0 and "1.0" are one version)."""
    try:
        return math.isclose(float(a), float(b))
    except (TypeError, ValueError):
        return str(a) == str(b)


def at_hand(data_root: Path | None, dataset: str) -> bool:
    """Whether ``dataset``'s folder is under ``data_root``."""
    from focus_eval.data.registry import dataset_present

    return data_root is not None and dataset_present(data_root, dataset)


ABSENT = "its dataset is not under the data root"
POOLED = ("a pooled dataset: its test split is the union of whichever member datasets are present, so no digest "
          "is published; verify its lines with --data-root")


def write_digests(index, tasks: list, data_root: Path) -> tuple[list[PublishedDigest], dict[str, str]]:
    """Compute the digest of each of ``tasks`` whose dataset is under ``data_root`` and write it into the digest
    file of the task's folder (other entries kept). Returns the digests written and the tasks left out, with
    the reason."""
    import yaml

    from focus_eval.data.registry import POOLED_DATASETS, load_dataset
    from focus_eval.files import atomic_write_text

    loads: dict[tuple[str, str | None], Any] = {}
    by_root: dict[Path, dict[str, PublishedDigest]] = {}
    left_out: dict[str, str] = {}
    for task in tasks:
        root = task_root(index, task)
        if task.dataset in POOLED_DATASETS:
            left_out[task.name] = POOLED
            continue
        if root is None or not at_hand(data_root, task.dataset):
            left_out[task.name] = ABSENT
            continue
        key = (task.dataset, task.cohort)
        if key not in loads:
            loads[key] = load_dataset(task.dataset, data_root, cohort=task.cohort)
        sha, n = split_digest(split_pairs(task, loads[key]))
        by_root.setdefault(root, {})[task.name] = PublishedDigest(task.name, sha, n, task.version,
                                                                  root / DIGESTS_FILE)
    written = []
    for root, new in by_root.items():
        entries = {**read_digests(root), **new}
        body = yaml.safe_dump({name: entries[name].to_dict() for name in sorted(entries)}, sort_keys=False)
        atomic_write_text(root / DIGESTS_FILE, HEADER + body)
        written += new.values()
    return written, left_out

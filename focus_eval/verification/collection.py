"""Verification of the results a leaderboard or report reads: each line of a submission bundle (and, on request,
of every results folder) judged as ``verify`` judges it, its verdict put on its entry (``Entry.verdict``), so
that the one rule of ``results.identity.set_aside`` keeps an unverified line out of every ranking, page, report
and export, and every page can show each line's state.

    verify_collection(collection, everything=False, data_root=None, index=None, include_unverified=False)

Bundles are always verified (their lines are another group's claims; a bundle was already checked on arrival
when it was read); a results folder of one's own only with ``everything`` (``--verify``), so that reading one's
own runs costs nothing more than before. ``include_unverified`` (``--include-unverified``) keeps the verdicts
and their marks but ranks the unverified lines with the others."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from focus_eval.results.collect import Collection
from focus_eval.results.verdict import LineVerdict, summary


@dataclass(frozen=True)
class Verified:
    """A collection with its verdicts, and every verdict (task and group lines, in file order)."""

    collection: Collection
    verdicts: list[LineVerdict]

    def counts(self) -> dict[str, int]:
        """How many lines ended in each state."""
        return summary(self.verdicts)


def verify_collection(collection: Collection, *, everything: bool = False,
                      data_root: str | os.PathLike | None = None, index=None,
                      include_unverified: bool = False) -> Verified:
    """The collection with a verdict on each line of its bundles (of every results file with ``everything``);
    lines nothing verified keep ``verdict`` None. ``index``: the ``TaskIndex`` the results were computed with."""
    from focus_eval.data.registry import optional_data_root
    from focus_eval.task.index import TaskIndex
    from focus_eval.verification.dataset import DataCheck
    from focus_eval.verification.lines import verify_results_file

    inputs = collection.inputs
    chosen = [p for p in inputs.results_files if everything or inputs.submitter(p) is not None]
    if not chosen:
        return Verified(collection, [])
    index = index if index is not None else TaskIndex()
    data = DataCheck(index, optional_data_root(data_root))
    verdicts = [v for path in chosen for v in verify_results_file(path, index, data, inputs.submitter(path))]
    found = {(Path(v.source), v.row): v for v in verdicts}

    def judged(item, **more):
        verdict = found.get((item.source, item.row))
        return item if verdict is None else replace(item, verdict=verdict, **more)

    entries = [judged(e, rank_unverified=include_unverified) for e in collection.entries]
    groups = [judged(g) for g in collection.group_lines]
    return Verified(replace(collection, entries=entries, group_lines=groups), verdicts)

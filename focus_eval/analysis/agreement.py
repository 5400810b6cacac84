"""Agreement of submitters: the same configuration on the same task (and variant) from several submitters, as two
or more lines side by side, never averaged into one. The lines come from the one pairing step
(``results.identity.pair``, varying ``submitter``: every other axis of the identity held fixed); a line of a
results folder of one's own counts as one more submitter (none), so a receiver's own run of a configuration is
compared with each group's.

The rule, for every two lines of a group, on the task's primary metric (AUROC, or FunBench F1 for a multi-class
task): the difference of the two scores against the root of the sum of their squared 95% interval half-widths.
The two **agree** when the difference is no larger (its 95% interval, taking the two estimates as independent,
holds zero); otherwise they **differ**. Two runs on the same test images are not independent, so the rule is
lenient: a difference it lets pass may still be real (``focus-eval report pairwise`` pairs the images)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations
from typing import Iterable, Sequence

from focus_eval.analysis.base import ReportOptions, Table
from focus_eval.errors import FocusError
from focus_eval.results.collect import Collection, Entry
from focus_eval.results.identity import Identity, context, pair

VARIES = "submitter"
AGREE, DIFFER, NO_INTERVAL, NO_SCORE = "agree", "differ", "no interval", "no score"
RULE = ("two lines agree when the difference of their scores is at most the root of the sum of their squared 95% "
        "interval half-widths (the 95% interval of the difference of two independent estimates holds zero); the "
        "same test images make the two runs dependent, so the rule is lenient")
COLUMNS = ("model", "method", "adapter", "conventions", "task", "variant", "metric", "submitter_a", "value_a",
           "ci_low_a", "ci_high_a", "verification_a", "submitter_b", "value_b", "ci_low_b", "ci_high_b",
           "verification_b", "difference", "margin", "agreement")


@dataclass(frozen=True)
class Pair:
    """Two lines of one configuration on one task from two submitters, and whether their scores agree."""

    key: Identity
    metric: str
    a: Entry
    b: Entry
    difference: float | None
    margin: float | None
    verdict: str


@dataclass
class Agreement:
    pairs: list[Pair] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def groups(self) -> int:
        return len({p.key for p in self.pairs})


def agree(value_a: float | None, ci_a: Sequence | None, value_b: float | None, ci_b: Sequence | None
          ) -> tuple[float | None, float | None, str]:
    """(a - b, the margin, the verdict) of two scores with their 95% intervals, by the rule above."""
    if value_a is None or value_b is None:
        return None, None, NO_SCORE
    difference = value_a - value_b
    halves = [_half(ci) for ci in (ci_a, ci_b)]
    if None in halves:
        return difference, None, NO_INTERVAL
    margin = math.hypot(*halves)
    return difference, margin, AGREE if abs(difference) <= margin + 1e-12 else DIFFER


def _half(ci: Sequence | None) -> float | None:
    if not ci or len(ci) != 2 or any(v is None for v in ci):
        return None
    return (ci[1] - ci[0]) / 2


def agreement(entries: Iterable[Entry], include_limited: bool = False) -> Agreement:
    """Every two lines that differ in their submitter only, with their agreement; the lines left out in the
    notes."""
    pairing = pair(entries, VARIES, include_limited=include_limited, min_group=2)
    out = Agreement(notes=[RULE])
    for key, members in sorted(pairing.groups.items(), key=lambda item: _order(item[1][0])):
        members = sorted(members, key=lambda e: e.submitter or "")
        for a, b in combinations(members, 2):
            metric = a.primary_metric
            found = agree(a.metric(metric), a.metric_ci(metric), b.metric(metric), b.metric_ci(metric))
            out.pairs.append(Pair(key, metric, a, b, *found))
    verdicts = [p.verdict for p in out.pairs]
    if out.pairs:
        out.notes.append(f"{verdicts.count(AGREE)} of {len(out.pairs)} pair(s) of lines agree, "
                         f"{verdicts.count(DIFFER)} differ" + "".join(
                             f", {verdicts.count(v)} {v}" for v in (NO_INTERVAL, NO_SCORE) if v in verdicts))
    out.notes += pairing.notes()
    return out


def _order(entry: Entry) -> tuple:
    line = entry.line
    return (line.task, line.model, line.method, line.adapter or "", entry.convention_text)


def agreement_table(result: Agreement) -> Table:
    table = Table(COLUMNS, title="Agreement: one configuration from several submitters", notes=list(result.notes))
    for p in result.pairs:
        line = p.a.line
        row = [line.model, line.method, line.adapter, p.a.convention_text or None, line.task, context(p.key) or None,
               p.metric]
        for e in (p.a, p.b):
            low, high = e.metric_ci(p.metric) or (None, None)
            row += [e.submitter, e.metric(p.metric), low, high, e.verification]
        table.add(*row, p.difference, p.margin, p.verdict)
    return table


@dataclass(frozen=True)
class AgreementAnalysis:
    """``focus-eval report agreement``."""

    name: str = "agreement"
    summary: str = ("one configuration on one task from several submitters: the two scores, their difference and "
                    "whether their intervals agree")
    inputs: tuple[str, ...] = ("results",)
    varies: str = VARIES

    def compute(self, collection: Collection, options: ReportOptions = ReportOptions()) -> Table:
        result = agreement(collection.entries, options.include_limited)
        if not result.pairs:
            raise FocusError("no configuration has lines on one task from two submitters under "
                             + ", ".join(map(str, collection.paths))
                             + " (a submitter is the one a bundle names; results folders of one's own are one more)")
        return agreement_table(result)


ANALYSIS = AgreementAnalysis()

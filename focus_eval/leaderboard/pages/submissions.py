"""The submissions page: who sent what, what verification found, and where two submitters ran one configuration,
whether they agree. Built only for a site with submission bundles or verified lines.

- **submissions**: one row per submitter (the results folders of the site's own are one more, without a name):
  the bundle's digest and time, and its lines by verification state;
- **lines not verified**: each with its submitter, state and every reason; they are ranked nowhere unless the site
  was built with ``--include-unverified``;
- **agreement**: every two lines of one configuration on one task from two submitters (``analysis.agreement``,
  the table ``focus-eval report agreement`` prints), never averaged into one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from focus_eval.analysis.agreement import agreement, agreement_table
from focus_eval.analysis.base import Table
from focus_eval.leaderboard.pages.site import Site
from focus_eval.leaderboard.pages.views import ViewPage
from focus_eval.results.collect import GroupEntry
from focus_eval.results.verdict import STATES, VERIFIED

LINE_COLUMNS = ("submitter", "model", "method", "adapter", "task", "kind", "verification", "reasons")


@dataclass
class Submitted:
    """One submitter's lines (task and group lines) by verification state, and the bundles it sent."""

    submitter: str | None
    digests: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    states: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATES, 0))
    unchecked: int = 0

    @property
    def lines(self) -> int:
        return sum(self.states.values()) + self.unchecked


def submissions_view(site: Site) -> ViewPage | None:
    if not (site.submitted or site.verified):
        return None
    lines = [*site.entries, *site.group_lines]
    found = agreement(site.entries, site.include_limited)
    table = agreement_table(found)
    return ViewPage(name="submissions", title="Submissions", template="submissions.html",
                    summary="who submitted each line, what verification found, and where two submitters agree",
                    csv={"submissions": lines_table(lines), "agreement": table},
                    context={"submitters": by_submitter(site), "agreement": found,
                             "not_verified": [x for x in lines if x.verification not in (None, VERIFIED)]})


def by_submitter(site: Site) -> list[Submitted]:
    """Each submitter's counts, bundles first in the order they were given, then the site's own folders."""
    out: dict[str | None, Submitted] = {}
    for bundle in site.bundles:
        one = out.setdefault(bundle.submitter, Submitted(bundle.submitter))
        one.digests.append(bundle.digest)
        one.created.append(bundle.created or "")
    for line in [*site.entries, *site.group_lines]:
        one = out.setdefault(line.submitter, Submitted(line.submitter))
        if line.verification is None:
            one.unchecked += 1
        else:
            one.states[line.verification] += 1
    return list(out.values())


def lines_table(lines) -> Table:
    """``data/submissions.csv``: every line of the site (task lines, then group lines) with its submitter,
    verification state and reasons."""
    table = Table(LINE_COLUMNS, title="Results lines by submitter, with their verification")
    for x in lines:
        group = isinstance(x, GroupEntry)
        reasons = "; ".join(x.verdict.reasons) if x.verdict is not None else None
        table.add(x.submitter, x.model, x.line.method, x.line.adapter, f"group:{x.group}" if group else x.line.task,
                  "group" if group else "task", x.verification, reasons or None)
    return table

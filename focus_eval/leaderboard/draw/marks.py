"""Row pieces the big tables repeat for every results line: the row's opening tag, model and task links, and the
badges. Written in Python rather than as template macros because a full grid calls them ~10^4 times per build;
every value from a results line is escaped here."""

from __future__ import annotations

from typing import Any, Iterable

from markupsafe import Markup, escape

from focus_eval.results.collect import Convention, Entry
from focus_eval.results.identity import LIMITED, LOW_COVERAGE, NO_ANSWERS, OTHER_VERSION, UNVERIFIED, set_aside
from focus_eval.results.power import MIN_POSITIVES

BADGE_NOTES = {
    "proxy": "Proxy task: the label is a stand-in for the target and is left out of group means",
    "underpowered": f"Fewer than {MIN_POSITIVES} test positives: left out of group means",
    "untrained": "Untrained model (random weights, for plumbing tests only); shown apart from trained models",
    "contaminated": "Contaminated: {note}",
    "limited": "A --limit run (the first N test images only): left out of rankings unless the site was built "
               "with --include-limited",
    "chance": "AUROC cannot be told from chance (its 95% interval reaches 0.5): a small gap says nothing here",
    "local": "Weights from local files, not a public hub release: {note}",
    "low_coverage": "Low coverage: fewer readable answers than the coverage floor; the line is shown but ranked "
                    "nowhere (its score says more about the answer format than about the model)",
    "no_answers": "No answers: not a single answer could be scored, so the line has no score and no rank",
    "version_mismatch": "Another version of the task than most of its lines: shown, compared with nothing. {note}",
    "verified": "Verified: every figure recomputed from its samples, its task, focus-eval version and data (or "
                "published digest) checked",
    "unverified": "Not verified ({note}): shown, ranked nowhere unless the site was built with --include-unverified",
}


# the reason a line is left out of a ranking (results.identity) -> the flag its badge shows
LEFT_OUT_FLAGS = {OTHER_VERSION: "version_mismatch", NO_ANSWERS: "no_answers", LOW_COVERAGE: "low_coverage",
                  LIMITED: "limited", UNVERIFIED: "unverified"}


def left_out_flag(kind: str) -> str:
    return LEFT_OUT_FLAGS.get(kind, "left_out")


def not_ranked(entry: Entry, include_limited: bool) -> str:
    """Why a line has no rank on its task page, in a few words."""
    if entry.line.untrained:
        return "untrained baseline"
    return (set_aside(entry, include_limited) or "no score").partition(":")[0]


def badge(flag: str, note: str = "", text: str = "") -> Markup:
    title = BADGE_NOTES.get(flag, note or flag).replace("{note}", note)
    text = text or flag.replace("_", " ")
    return Markup(f'<span class="badge badge-{escape(flag)}" title="{escape(title)}">{escape(text)}</span>')


def convention_badges(conventions: Iterable[Convention], skip: tuple[str, ...] = ()) -> Markup:
    return Markup("".join(f'<span class="badge badge-convention" title="{escape(c.description)}">'
                          f"{escape(c.label)}</span>" for c in conventions if c.key not in skip))


def badges(entry: Entry) -> Markup:
    """The line's flags (a verified line's ``verified`` among them; an unverified one's badge says its state),
    then its non-default conventions (the limit is said by the ``limited`` flag)."""
    notes = {"contaminated": entry.contamination or "", "version_mismatch": entry.version_note or ""}
    marks = "".join(badge(flag, notes.get(flag, "")) for flag in entry.flags if flag != "unverified")
    return Markup(marks) + verification_badge(entry.verdict) + convention_badges(entry.conventions, skip=("limit",))


def verification_badge(verdict) -> Markup:
    """``verified``, or the state of a line verification did not find verified with its reasons as the badge's
    title; nothing for a line that was not verified (``results.verdict.LineVerdict`` or None)."""
    if verdict is None:
        return Markup("")
    if verdict.verified:
        return badge("verified")
    return badge("unverified", f"{verdict.state}: " + "; ".join(verdict.reasons), verdict.state)


def state_badge(state: str | None) -> Markup:
    """The badge of a verification state alone (a main-table row's: its lines' worst state)."""
    if state is None:
        return Markup("")
    return badge("verified") if state == "verified" else badge("unverified", state, state)


def row_open(entry: Entry, extra: dict[str, Any] | None = None) -> Markup:
    """``<tr>`` with a class per flag and the data attributes the filters select on."""
    line = entry.line
    attrs = {"family": line.family, "domain": line.domain, "method": line.method, "target": line.target,
             "dataset": line.dataset, **(extra or {})}
    classes = " ".join(f"is-{flag}" for flag in entry.flags)
    data = "".join(f' data-{escape(k)}="{escape(v or "")}"' for k, v in attrs.items())
    return Markup(f'<tr class="{classes}"{data}>')


def model_link(entry: Entry, root: str, slugs: dict[str, str]) -> Markup:
    link = f'<a href="{escape(root)}models/{escape(slugs[entry.model])}.html">{escape(entry.model)}</a>'
    if entry.line.adapter:
        link += f' <span class="adapter">+ {escape(entry.line.adapter)}</span>'
    return Markup(link)


def task_link(entry: Entry, root: str, slugs: dict[str, str]) -> Markup:
    task = entry.line.task
    return Markup(f'<a href="{escape(root)}tasks/{escape(slugs[task])}.html">{escape(task)}</a>')

"""What may be compared: the identity of a results line, and the one pairing step every analysis takes its
lines from.

**The identity** (``Identity``) names everything that changes a line's numbers: the configuration (model,
method, adapter, and the run conventions that are not the defaults: ``--seed``, ``--limit``, ``--zs-scale``,
``--probe-compat``, ``--probe-select``, a split file, raw images; and who submitted the line, the submitter of the
bundle it came in, none for a results folder of one's own), the task as defined (its name, version and
file hash; a variant's ``base_task``), and each variant axis of the fragility runs: the prompt variant, the
label rule, the corruption and its severity, the label budget (training fraction and draw). Two lines that differ
in any of them are two configurations: neither replaces the other, and no table averages them as one.

**Axes** (``AXES``): the named groups of identity fields an analysis may vary. An axis lists the fields it moves
(``prompt_variant`` moves the task hash too, as a paraphrase's hash covers its prompt; ``configuration`` moves the
submitter too, so that a ranking compares every group's lines, while ``submitter`` alone holds the configuration
fixed, for the agreement of two groups' runs of one configuration). ``Identity.without(axis)`` is the identity with
that axis set aside: two lines with the same ``without(axis)`` differ in that axis only.

**The pairing step** (``pair``): an analysis declares the one axis it varies (``Analysis.varies``) and gets its
lines from ``pair``, which sets aside, each with its reason, the lines nothing may be compared with (``--limit``
runs unless counted, unverified lines of a submission unless counted, lines without answers, lines below the
coverage floor, lines of another version of their task than most lines of it), then groups the rest by ``without(axis)``. Where the axis is the configuration, the
lines must also be plain (no variant axis moved: those are the fragility reports' lines). Groups that cannot be
compared (a line alone, a group without its baseline) are set aside too. ``Pairing.notes`` says once which lines
were left out and why.

To add an axis: a field on ``Identity`` with its default, its value read in
``Identity.of``, an entry in ``AXES`` (and in ``VARIANTS`` when it is a variant of a task rather than of a
configuration), and, if it has a name for people, in ``AXIS_TITLES``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import MISSING, dataclass, field, fields, replace
from functools import cached_property
from typing import Any, Callable, Iterable


@dataclass(frozen=True)
class Identity:
    """Everything that changes a results line's numbers; equal identities are the same configuration on the same
    task under the same variant. Empty texts and None are the defaults (no adapter, the default conventions, the
    task's own prompt and label rule, clean images, every training patient)."""

    model: str
    method: str
    adapter: str = ""
    conventions: str = ""  # the non-default run conventions, as results.collect.signature writes them
    task: str = ""  # the task as defined: a variant's base task
    task_version: str = ""
    task_hash: str = ""
    prompt_variant: str = ""
    label_rule: str = ""
    corruption: str = ""  # kind and severity, e.g. "blur:3"
    train_fraction: float | None = None
    train_seed: int | None = None
    submitter: str = ""  # the submitter of the bundle the line came in; empty for a results folder of one's own

    @classmethod
    def of(cls, line: Any, conventions: str = "", submitter: str | None = None) -> "Identity":
        """The identity of a ``ResultLine`` (``conventions``: the signature of its non-default conventions;
        ``submitter``: who sent it, if it came in a bundle)."""
        extra = line.extra or {}
        fraction = extra.get("train_fraction")
        return cls(model=line.model, method=line.method, adapter=line.adapter or "", conventions=conventions,
                   task=str(extra.get("base_task") or line.task), task_version=version_text(line.task_version),
                   task_hash=str(line.task_hash or ""), prompt_variant=_text(extra.get("prompt_variant")),
                   label_rule=_text(extra.get("label_rule")), corruption=_text(extra.get("corruption")),
                   train_fraction=None if fraction is None or float(fraction) >= 1 else float(fraction),
                   train_seed=None if fraction is None or float(fraction) >= 1 else _int(extra.get("train_seed")),
                   submitter=submitter or "")

    def without(self, axis: str) -> "Identity":
        """The identity with ``axis`` set aside (its fields at their defaults)."""
        return replace(self, **{name: DEFAULTS[name] for name in fields_of(axis)})

    def value(self, axis: str) -> tuple:
        """The identity's value on ``axis`` (its fields, in order)."""
        return tuple(getattr(self, name) for name in fields_of(axis))

    def at_default(self, axis: str) -> bool:
        """Whether ``axis`` is at its default (for a variant axis: the task as it is)."""
        return all(getattr(self, name) == DEFAULTS[name] for name in fields_of(axis) if name not in _SHARED)

    @cached_property
    def plain(self) -> bool:
        """No variant axis moved: the task as defined, asked and labelled as usual, on clean images, with every
        training patient."""
        return all(self.at_default(axis) for axis in VARIANTS)

    def variants(self) -> list[str]:
        """The moved variant axes as short texts (``prompt plain``, ``blur:3``, ``train 0.5 draw 1``)."""
        found = []
        if self.prompt_variant:
            found.append(f"prompt {self.prompt_variant}")
        if self.label_rule:
            found.append(f"rule {self.label_rule}")
        if self.corruption:
            found.append(self.corruption)
        if self.train_fraction is not None:
            found.append(f"train {self.train_fraction:g} draw {self.train_seed}")
        return found


# each field's default: what ``without`` sets an axis to (the configuration's fields have none: the empty text)
DEFAULTS = {f.name: ("" if f.default is MISSING else f.default) for f in fields(Identity)}
# axis -> the identity fields it moves
AXES: dict[str, tuple[str, ...]] = {
    "configuration": ("model", "method", "adapter", "conventions", "submitter"),
    "task": ("task", "task_version", "task_hash"),
    "prompt_variant": ("prompt_variant", "task_hash"),
    "label_rule": ("label_rule", "task_hash"),
    "corruption": ("corruption",),
    "label_budget": ("train_fraction", "train_seed"),
    "submitter": ("submitter",),
}
# the variant axes: the same task asked another way (the fragility runs)
VARIANTS = ("prompt_variant", "label_rule", "corruption", "label_budget")
# fields an axis moves that another axis names too (a paraphrase and a label rule each change the task hash)
_SHARED = frozenset({"task_hash"})
AXIS_TITLES = {"configuration": "configuration", "task": "task", "prompt_variant": "prompt variant",
               "label_rule": "label rule", "corruption": "corruption", "label_budget": "label budget",
               "submitter": "submitter"}


def fields_of(axis: str) -> tuple[str, ...]:
    try:
        return AXES[axis]
    except KeyError:
        raise ValueError(f"unknown axis {axis!r}; axes: {', '.join(AXES)}") from None


def version_text(value: Any) -> str:
    """A task version as text, the same for 1 and 1.0."""
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _int(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


# ----- one version per task


def task_version_key(line: Any) -> tuple[str, str]:
    return version_text(line.task_version), str(line.task_hash or "")


def reference_versions(lines: Iterable[Any]) -> dict[str, tuple[str, str]]:
    """Task name -> the (version, hash) its lines are compared on: the one most of the task's lines have; a tie
    goes to the version of the most recently created line, then to the larger (version, hash) in text order, so the
    choice never depends on the order the lines were read in."""
    counts: dict[str, Counter] = {}
    newest: dict[tuple[str, tuple[str, str]], str] = {}
    for line in lines:
        key = task_version_key(line)
        counts.setdefault(line.task, Counter())[key] += 1
        place = (line.task, key)
        newest[place] = max(newest.get(place, ""), str(line.created or ""))
    return {task: max(found, key=lambda k: (found[k], newest[(task, k)], k)) for task, found in counts.items()}


def version_note(line: Any, reference: tuple[str, str]) -> str | None:
    """Why a line of another task version than ``reference`` is compared with nothing, or None."""
    mine = task_version_key(line)
    if mine == reference:
        return None
    return (f"task {line.task} version {_version(mine)}, not the version {_version(reference)} most of its lines "
            "have")


def _version(key: tuple[str, str]) -> str:
    version, digest = key
    return f"{version or '?'} (hash {digest[:8] or '?'})"


# ----- the pairing step


@dataclass(frozen=True)
class LeftOut:
    """A line the pairing set aside, and why."""

    entry: Any
    reason: str


@dataclass
class Pairing:
    """The lines of one analysis: groups of lines that differ in ``axis`` only (keyed by the identity without
    it), and the lines left out with their reasons."""

    axis: str
    groups: dict[Identity, list[Any]] = field(default_factory=dict)
    left_out: list[LeftOut] = field(default_factory=list)

    @property
    def entries(self) -> list[Any]:
        return [e for members in self.groups.values() for e in members]

    def notes(self, limit: int = 20) -> list[str]:
        """One note per reason: how many lines were left out and which (the first ``limit`` named)."""
        by_reason: dict[str, list[str]] = {}
        for item in self.left_out:
            by_reason.setdefault(_reason_kind(item.reason), []).append(line_name(item.entry, item.reason))
        out = []
        for kind, names in by_reason.items():
            shown = "; ".join(names[:limit]) + (f"; and {len(names) - limit} more" if len(names) > limit else "")
            out.append(f"left out {len(names)} line(s), {kind}: {shown}")
        return out


def configuration_text(model: str, method: str, adapter: str | None = None, conventions: str = "",
                       submitter: str | None = None) -> str:
    """A configuration as tables and notes name it: ``model · method [+ adapter] [conventions] [from submitter]``."""
    text = f"{model} \u00b7 {method}" + (f" + {adapter}" if adapter else "")
    text += f" [{conventions}]" if conventions else ""
    return text + (f" from {submitter}" if submitter else "")


def line_name(entry: Any, reason: str = "") -> str:
    """A line as the notes name it: configuration and task (and the detail of its reason, if any)."""
    line = entry.line
    text = configuration_text(line.model, line.method, line.adapter, getattr(entry, "convention_text", ""),
                              getattr(entry, "submitter", None))
    detail = reason.partition(": ")[2]
    return f"{text} on {line.task}" + (f" ({detail})" if detail else "")


def _reason_kind(reason: str) -> str:
    return reason.partition(": ")[0]


# reasons (the text before ": " is the kind the notes count by; the rest is the line's own detail)
LIMITED = "a --limit run (--include-limited counts it)"
UNVERIFIED = "unverified"
NO_ANSWERS = "no answers, so no score"
LOW_COVERAGE = "coverage below the floor"
OTHER_VERSION = "another version of the task"
VARIANT_LINE = "a variant of its task, compared on the fragility reports"


def set_aside(entry: Any, include_limited: bool = False, coverage: bool = True) -> str | None:
    """Why a line is compared with nothing, or None: the one rule of every table, page and report (a submitted
    line whose verification found a mismatch or could not be made, unless the build ranks unverified lines; a
    ``--limit`` run unless counted, a line without answers, a line below the coverage floor, a line of another task
    version than most lines of its task). ``coverage=False`` keeps a low-coverage line for a table that shows it
    unranked (its score is still none where it has no answers)."""
    if entry.unverified and not entry.rank_unverified:
        return f"{UNVERIFIED}: {entry.unverified}"
    if entry.limited and not include_limited:
        return LIMITED
    if entry.no_answers:
        return f"{NO_ANSWERS}: 0 of {entry.line.n} rows answered"
    if coverage and entry.low_coverage:
        return f"{LOW_COVERAGE}: coverage {entry.line.coverage:.3f} < {entry.coverage_floor:g}"
    if entry.version_note:
        return f"{OTHER_VERSION}: {entry.version_note}"
    return None


def pair(entries: Iterable[Any], varies: str, *, include_limited: bool = False, min_group: int = 2,
         baseline: bool = False, keep: Callable[[Any], str | None] | None = None, plain: bool | None = None,
         coverage: bool = True) -> Pairing:
    """The lines an analysis that varies ``varies`` may compare, grouped by their identity without it.

    Set aside first, each with its reason: what ``set_aside`` names, what ``keep`` (the analysis's own filter,
    returning a reason or None) rejects, and, with ``plain`` (the default where ``varies`` is the
    configuration), lines of a variant task. Then groups with fewer than ``min_group`` lines, and, with
    ``baseline``, groups without a line whose axis is at its default (a corruption without its clean line), are
    left out whole."""
    fields_of(varies)
    plain = varies == "configuration" if plain is None else plain
    out = Pairing(axis=varies)
    groups: dict[Identity, list[Any]] = {}
    for entry in entries:
        reason = set_aside(entry, include_limited, coverage) or (keep(entry) if keep else None)
        if reason is None and plain and not entry.identity.plain:
            reason = f"{VARIANT_LINE}: {', '.join(entry.identity.variants())}"
        if reason is not None:
            out.left_out.append(LeftOut(entry, reason))
            continue
        groups.setdefault(entry.identity.without(varies), []).append(entry)
    title = AXIS_TITLES.get(varies, varies)
    for key, members in groups.items():
        if baseline and not any(e.identity.at_default(varies) for e in members):
            out.left_out += [LeftOut(e, f"no line of the same identity at the default {title}") for e in members]
        elif len(members) < min_group:
            out.left_out += [LeftOut(e, f"no other line that differs from it in {title} only") for e in members]
        else:
            out.groups[key] = members
    return out


def context(key: Identity) -> str:
    """What a group holds fixed beyond its configuration and task (its key: an identity without the varied axis),
    as a short text: the other variant axes moved (``train 0.5 draw 1``), empty for a plain task."""
    return ", ".join(key.variants())

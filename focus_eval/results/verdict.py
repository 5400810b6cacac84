"""What verification says about one results line: ``LineVerdict`` (verified, mismatch or unverifiable, with the
findings behind it and who submitted the line). ``focus_eval.verification`` computes these records; anything that
shows results (the command line, a leaderboard of submissions) reads them from here, so that they stay plain data
on the lowest layer that reads results.

A line's state is its worst finding: any mismatch makes it ``mismatch``; otherwise any finding that stopped a check
makes it ``unverifiable``; a line without findings is ``verified``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

VERIFIED = "verified"
MISMATCH = "mismatch"
UNVERIFIABLE = "unverifiable"
STATES = (VERIFIED, MISMATCH, UNVERIFIABLE)
# the checks, in the order their findings are listed
CHECKS = ("line", "files", "task", "data", "digest", "member", "scores", "version")


@dataclass(frozen=True)
class Finding:
    """One way a line departs from what its files and the installed benchmark say (``mismatch``), or one check
    that could not be made (``unverifiable``). ``check`` names the check (``scores``, ``task``, ``version``,
    ``data``, ``digest``, ``files``, ``line``); ``figure`` the key that differs (``metrics.auroc``), with the
    reported and the recomputed value, where there is one."""

    state: str
    check: str
    message: str
    figure: str | None = None
    reported: Any = None
    recomputed: Any = None

    def __post_init__(self):
        if self.state not in (MISMATCH, UNVERIFIABLE):
            raise ValueError(f"a finding is {MISMATCH!r} or {UNVERIFIABLE!r}, not {self.state!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Finding":
        return cls(**{k: d.get(k) for k in ("state", "check", "message", "figure", "reported", "recomputed")})


@dataclass
class LineVerdict:
    """One results line (a task line or a group line) as verification leaves it. ``source`` and ``row`` say where
    the line is (the results file and its 1-based line number); ``submitter`` is the name recorded in the
    submission bundle it came in (None for a plain results folder)."""

    source: str
    row: int
    model: str | None
    task: str | None
    method: str | None
    adapter: str | None = None
    kind: str = "task"
    submitter: str | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def state(self) -> str:
        states = {f.state for f in self.findings}
        return MISMATCH if MISMATCH in states else UNVERIFIABLE if states else VERIFIED

    @property
    def verified(self) -> bool:
        return not self.findings

    @property
    def reasons(self) -> list[str]:
        """Every finding, one line each: mismatches first, and among them those that explain the others (a line
        off the contract, missing files, another task, other data) before the figures that differ."""
        order = sorted(self.findings, key=lambda f: (f.state != MISMATCH, CHECKS.index(f.check)
                                                     if f.check in CHECKS else len(CHECKS)))
        return [f.message for f in order]

    @property
    def key(self) -> tuple[str, str, str, str]:
        """(model, task or ``group:<name>``, method, adapter): the line's place in a results file."""
        return (self.model or "", self.task or "", self.method or "", self.adapter or "")

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "row": self.row, "model": self.model, "task": self.task,
                "method": self.method, "adapter": self.adapter, "kind": self.kind, "submitter": self.submitter,
                "state": self.state, "reasons": self.reasons, "findings": [f.to_dict() for f in self.findings]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LineVerdict":
        return cls(source=d["source"], row=int(d["row"]), model=d.get("model"), task=d.get("task"),
                   method=d.get("method"), adapter=d.get("adapter"), kind=d.get("kind") or "task",
                   submitter=d.get("submitter"), findings=[Finding.from_dict(f) for f in d.get("findings") or []])


def summary(verdicts: list[LineVerdict]) -> dict[str, int]:
    """How many lines ended in each state."""
    return {state: sum(v.state == state for v in verdicts) for state in STATES}

"""FunBench's random-guess row computed from the datasets' documented per-class test counts
(``funbench_test_counts.yaml`` beside this module), so the paper's row can be checked without the images: per
subtask and source, the expected FunBench F1 of a uniform random run (``metrics.chance``) of focus-eval's question
form over the counts the source's documentation states; a subtask's value is the mean over its documented
sources, a code's the mean over its subtasks with a value (the rule of ``analysis.attribution``). Sources whose
counts are not published are listed with the reason and left out; a code none of whose sources is documented has
no value."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any

from focus_eval.errors import FocusError
from focus_eval.metrics.chance import expected_run, form_chances

COUNTS = Path(__file__).with_name("funbench_test_counts.yaml")
CODES = ("L1a", "L1b", "L2a", "L2b", "L3a", "L3b", "L3c", "L3d", "L4a", "L4b", "L4c", "L4d")


@dataclass
class SetGuess:
    """One documented test set of one subtask: its counts, its value and how the value was found."""

    code: str
    subtask: str
    source: str
    counts: list[int]
    value: float | None
    how: str
    cite: list[str]


@dataclass
class DocumentedCounts:
    """Every documented set's value, the sources left out per code (with why), the paper's row and citations."""

    sets: list[SetGuess]
    unpublished: dict[str, list[str]]
    paper: dict[str, Any]
    citations: dict[str, str]
    path: Path = COUNTS
    notes: list[str] = field(default_factory=list)

    def codes(self) -> dict[str, float]:
        """Code -> the mean over its subtasks of each subtask's mean over its documented sources."""
        subtasks: dict[tuple[str, str], list[float]] = {}
        for s in self.sets:
            if s.value is not None:
                subtasks.setdefault((s.code, s.subtask), []).append(s.value)
        by_code: dict[str, list[float]] = {}
        for (code, _), values in subtasks.items():
            by_code.setdefault(code, []).append(fmean(values))
        return {code: fmean(by_code[code]) for code in CODES if code in by_code}


def _fail(path: Path, message: str) -> FocusError:
    return FocusError(f"{path}: {message}")


def _counts(value: Any, n_classes: int, where: str, path: Path) -> list[int]:
    if not (isinstance(value, list) and len(value) == n_classes
            and all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in value)):
        raise _fail(path, f"{where}: counts must be {n_classes} whole numbers of 0 or more, got {value!r}")
    return value


def _sets(entry: dict, path: Path) -> list[SetGuess]:
    code, subtask, classes = entry["code"], str(entry["subtask"]), entry.get("classes") or []
    options = (entry.get("form") or {}).get("options")
    out = []
    for source, block in (entry.get("sets") or {}).items():
        where = f"{code} {subtask} {source}"
        if not isinstance(options, int) or options < 2:
            raise _fail(path, f"{where}: a documented set needs form.options, the options a question shows (2 or more)")
        counts = _counts(block.get("counts"), len(classes), where, path)
        run = expected_run(form_chances(counts, options))
        cite = block.get("cite")
        out.append(SetGuess(code, subtask, source, counts, run.value, run.describe(),
                            cite if isinstance(cite, list) else [cite]))
    return out


def documented_counts(path: Path = COUNTS) -> DocumentedCounts:
    """The documented sets of ``path`` with their expected-run values."""
    from focus_eval.files import load_yaml_file

    data = load_yaml_file(path)
    if not isinstance(data, dict) or not isinstance(data.get("subtasks"), list):
        raise _fail(path, "expected a mapping with a 'subtasks' list")
    citations = data.get("citations") or {}
    sets, unpublished = [], {}
    for entry in data["subtasks"]:
        if not isinstance(entry, dict) or entry.get("code") not in CODES:
            raise _fail(path, f"each subtask needs a code, one of {', '.join(CODES)}; got {entry!r}")
        found = _sets(entry, path)
        unknown = {c for s in found for c in s.cite} - set(citations)
        if unknown:
            raise _fail(path, f"{entry['code']} {entry['subtask']}: unknown citation(s) {', '.join(sorted(unknown))}")
        sets += found
        for source, why in (entry.get("unpublished") or {}).items():
            unpublished.setdefault(entry["code"], []).append(f"{entry['subtask']} on {source}: {why}")
    return DocumentedCounts(sets, unpublished, data.get("paper") or {}, citations, Path(path))

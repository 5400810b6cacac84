"""A results line against its own files: the line recomputed from its sample file and meta record with the
recorded seed and n_boot (``scoring.evaluate_samples``, the path every results line is written by) and compared
figure by figure; a group line recomputed from its member tasks' samples (``group_scores.group_line``)."""

from __future__ import annotations

import math
from typing import Any

from focus_eval.errors import FocusError
from focus_eval.results import store
from focus_eval.results.layout import OutputLayout
from focus_eval.results.schema import SampleLine, UnitMeta, clean_json
from focus_eval.results.verdict import MISMATCH, UNVERIFIABLE, Finding
from focus_eval.validators import MAX_N_BOOT

# Figures agree when they differ by at most this much, relatively or absolutely: a sum taken in another order
# (another numpy build or CPU) can move the last bits of a float; a changed figure moves far more.
TOLERANCE = 1e-9
_ABSENT = "(absent)"


def differences(reported: Any, recomputed: Any, where: str = "") -> list[tuple[str, Any, Any]]:
    """(key path, reported, recomputed) for every value that differs, numbers within TOLERANCE counting as
    equal; a key on one side only is a difference."""
    if isinstance(reported, dict) and isinstance(recomputed, dict):
        out = []
        for key in sorted(set(reported) | set(recomputed), key=str):
            path = f"{where}.{key}" if where else str(key)
            if key not in reported or key not in recomputed:
                out.append((path, reported.get(key, _ABSENT), recomputed.get(key, _ABSENT)))
            else:
                out += differences(reported[key], recomputed[key], path)
        return out
    if isinstance(reported, list) and isinstance(recomputed, list) and len(reported) == len(recomputed):
        return [d for i, (a, b) in enumerate(zip(reported, recomputed)) for d in differences(a, b, f"{where}[{i}]")]
    if _number(reported) and _number(recomputed):
        same = math.isclose(reported, recomputed, rel_tol=TOLERANCE, abs_tol=TOLERANCE)
    else:
        same = type(reported) is type(recomputed) and reported == recomputed
    return [] if same else [(where, reported, recomputed)]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    text = str(value)
    return text if len(text) <= 70 else text[:67] + "..."


def _order(path: str) -> tuple[int, str]:
    """Metrics first, then their intervals, then counts and the rest."""
    rank = 0 if path.startswith("metrics.") else 1 if path.startswith("ci.") else 2
    return (rank, path)


def mismatches(reported: dict[str, Any], recomputed: dict[str, Any], check: str = "scores") -> list[Finding]:
    found = sorted(differences(reported, recomputed), key=lambda d: _order(d[0]))
    return [Finding(MISMATCH, check, f"{path}: reported {_shown(a)}, recomputed {_shown(b)}", path, a, b)
            for path, a, b in found]


def read_unit(layout: OutputLayout, task: str, method: str) -> tuple[UnitMeta | None, list[Finding]]:
    """The unit's meta record, or the finding that stops its recomputation."""
    path = layout.meta(task, method)
    if not path.is_file():
        return None, [Finding(UNVERIFIABLE, "files", f"no meta file {path.name}: the line cannot be recomputed")]
    try:
        meta = store.read_meta(path)
    except FocusError as exc:
        return None, [Finding(MISMATCH, "files", f"meta file unreadable: {exc}")]
    limits = []
    if (meta.n_boot or 0) > MAX_N_BOOT:  # a recomputation's time grows with n_boot; the runner allows no more
        limits.append(f"n_boot {meta.n_boot} above {MAX_N_BOOT}")
    if meta.seed is not None and not (isinstance(meta.seed, int) and 0 <= meta.seed < 2 ** 32):
        limits.append(f"seed {meta.seed!r} is not a whole number from 0 to 2**32 - 1")
    if limits:
        return None, [Finding(UNVERIFIABLE, "scores", f"{'; '.join(limits)}: not recomputed")]
    return meta, []


def all_samples(layout: OutputLayout, meta: UnitMeta) -> list[SampleLine] | None:
    """Every readable line of the unit's sample file (test and validation rows), None when there is none."""
    path = layout.samples(meta.task, meta.method)
    return store.read_samples(path, skip_bad=True) if path.is_file() else None


def recompute_line(layout: OutputLayout, meta: UnitMeta, row: dict[str, Any]) -> list[Finding]:
    """The task line ``row`` against the line its sample file and meta record give now."""
    from focus_eval.scoring import evaluate_samples, with_file_record

    bad: list = []
    path = layout.samples(meta.task, meta.method)
    if not path.is_file():
        return [Finding(UNVERIFIABLE, "files", f"no sample file {path.name}: the line cannot be recomputed")]
    samples, reason = store.unit_status(layout, meta, skip_bad=True, bad=bad)
    if samples is None:
        return [Finding(MISMATCH, "files", f"{path.name}: {reason}, but the line was written")]
    try:
        result = with_file_record(evaluate_samples(samples, meta), layout, len(bad))
    except ValueError as exc:
        return [Finding(MISMATCH, "scores", f"{path.name} cannot be scored: {exc}")]
    recomputed = clean_json(result.to_dict())
    if meta.created is None:  # the line's time then came from the clock, not from the record
        recomputed["created"] = row.get("created")
    return mismatches(row, recomputed)


def recompute_group(layout: OutputLayout, row: dict[str, Any]) -> list[Finding]:
    """A group line against the group line its member tasks' lines and samples give now."""
    from focus_eval.group_scores import group_line

    members = row.get("members") or []
    try:
        recomputed = group_line(layout, row["group"], list(members), row["method"],
                                include_proxy=bool(row.get("include_proxy")))
    except (ValueError, FocusError) as exc:
        return [Finding(MISMATCH, "scores", f"the group line cannot be recomputed: {exc}")]
    if recomputed is None:
        return [Finding(MISMATCH, "scores", "no member task has a usable line, but the group line was written")]
    recomputed = clean_json(recomputed)
    recomputed["created"] = row.get("created")  # the time a group line was written is not a figure
    return mismatches(row, recomputed)

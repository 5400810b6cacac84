"""Every line of one results file judged: its task lines first (recomputed from their samples, their task and
version, their data), then its group lines (recomputed, and no better than their member lines)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from focus_eval.results import store
from focus_eval.results.bundle import plain_name
from focus_eval.results.layout import OutputLayout
from focus_eval.results.verdict import MISMATCH, UNVERIFIABLE, VERIFIED, Finding, LineVerdict
from focus_eval.verification import identity, scores


def verify_results_file(results: Path, index, data, submitter: str | None = None) -> list[LineVerdict]:
    """A verdict for each line of ``results`` (a ``results.jsonl``), in file order."""
    from focus_eval.files import read_jsonl_rows
    from focus_eval.results.collect import read_runs

    layout = OutputLayout(results.parent)
    runs = read_runs([results])
    verdicts: dict[int, LineVerdict] = {}
    groups = []
    for number, row, problem in read_jsonl_rows(results):
        verdict = _verdict(results, number, row, submitter)
        if problem is not None or not isinstance(row, dict):
            verdict.findings.append(Finding(MISMATCH, "line", problem or "a results line must be a JSON object"))
        elif row.get("kind") == "group":
            groups.append((verdict, row))
        else:
            verdict.findings += task_line(layout, results, number, row, index, runs, data)
        verdicts[number] = verdict
    for verdict, row in groups:
        verdict.findings += group_line(layout, row, list(verdicts.values()))
    return [verdicts[n] for n in sorted(verdicts)]


def _verdict(results: Path, number: int, row: Any, submitter: str | None) -> LineVerdict:
    d = row if isinstance(row, dict) else {}
    group = d.get("kind") == "group"
    text = {k: d.get(k) if isinstance(d.get(k), str) else None for k in ("model", "task", "method", "adapter")}
    if group and isinstance(d.get("group"), str):
        text["task"] = f"group:{d['group']}"
    return LineVerdict(source=str(results), row=number, kind="group" if group else "task", submitter=submitter,
                       **text)


def task_line(layout: OutputLayout, results: Path, number: int, row: dict[str, Any], index, runs, data
              ) -> list[Finding]:
    """Every check of one task line; a line off the results-line contract is judged on that alone."""
    from focus_eval.results.collect import Entry
    from focus_eval.results.schema import ResultLine, validate_result_dict

    try:
        validate_result_dict(row)
    except ValueError as exc:
        return [Finding(MISMATCH, "line", f"not a valid results line: {exc}")]
    if not (plain_name(row["task"]) and plain_name(row["method"])):
        return [Finding(MISMATCH, "line", "the task and method must be plain names (no '/', not hidden)")]
    meta, findings = scores.read_unit(layout, row["task"], row["method"])
    if meta is not None:
        findings += scores.recompute_line(layout, meta, row)
    task, why = identity.installed_task(index, row)
    findings += [Finding(UNVERIFIABLE, "task", why)] if task is None else identity.task_findings(task, row)
    entry = Entry(line=ResultLine.from_dict(row), raw=row, source=results, row=number, underpowered=False,
                  contamination=None)
    findings += identity.version_findings(runs, entry)
    samples = scores.all_samples(layout, meta) if meta is not None else None
    if task is not None and samples is not None:
        findings += data.findings(task, row, meta, samples)
    return findings


def group_line(layout: OutputLayout, row: dict[str, Any], verdicts: list[LineVerdict]) -> list[Finding]:
    """A group line recomputed, and a finding for each member line that is not verified."""
    from focus_eval.results.schema import validate_group_dict

    try:
        validate_group_dict(row)
    except ValueError as exc:
        return [Finding(MISMATCH, "line", f"not a valid group line: {exc}")]
    members = row["members"] + row["tasks"]
    if not all(plain_name(t) for t in members) or not plain_name(row["method"]):
        return [Finding(MISMATCH, "line", "member tasks and the method must be plain names")]
    findings = scores.recompute_group(layout, row)
    by_key = {(v.task, v.method, v.adapter or ""): v for v in verdicts if v.kind == "task"}
    for task in row["tasks"]:
        member = by_key.get((task, row["method"], row.get("adapter") or ""))
        if member is None:
            findings.append(Finding(UNVERIFIABLE, "member", f"member task {task} has no line in this file"))
        elif member.state != VERIFIED:
            findings.append(Finding(member.state, "member", f"member task {task}: {member.state}"))
    return findings

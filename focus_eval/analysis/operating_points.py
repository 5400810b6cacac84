"""Operating points at pre-specified thresholds, and whether a model would pass a screening trial's endpoints.

For each configuration and binary task whose sample file holds validation rows (the source task), each rule
(``endpoints.yaml``: Youden, sensitivity >= 0.90, specificity >= 0.90) chooses a threshold on those rows; the
threshold is then applied unchanged to the source task's test rows and to the test rows of every other task of
the same target the configuration was run on (external sets), never refit. Sensitivity and specificity have
patient-clustered bootstrap 95% intervals; PPV and NPV are at each set's own prevalence. A row meets the
endpoints of its target when it clears all of them. Prompt methods' thresholds are on ``score_norm`` where the
rows carry it. Runs write a binary task's validation rows (split ``val``) beside its test rows; a line whose
sample file has none (a run with ``--no-val-scores``, a run before validation rows were written, a task without
a validation split, a corruption copy) has no threshold of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from focus_eval.analysis.base import ReportOptions, Table
from focus_eval.analysis.samplesets import (NORMALISED_SCORE_METHODS, compared, config_label, read_rows,
                                            score_of)
from focus_eval.errors import FocusError
from focus_eval.files import load_yaml_file
from focus_eval.metrics.bootstrap import percentile_ci
from focus_eval.metrics.operating import Rule, choose_threshold, rates_batch
from focus_eval.metrics.resamples import Resamples
from focus_eval.results.collect import Collection, Entry

PRESET = Path(__file__).with_name("endpoints.yaml")
# the threshold or scaling of one task is carried to the other tasks of the same configuration
VARIES = "task"
COLUMNS = ("model", "task", "source_task", "rule", "threshold", "sensitivity", "sens_low", "sens_high",
           "specificity", "spec_low", "spec_high", "ppv", "npv", "meets", "endpoints")
NO_VALIDATION = ("no validation rows in their sample files (run with --no-val-scores or before validation rows "
                 "were written, or the task has no validation split), so nothing was chosen or fitted in-domain "
                 "for")


@dataclass(frozen=True)
class Endpoint:
    name: str
    target: str
    sensitivity: float
    specificity: float
    compare: str = "point"  # or "lower_bound"
    title: str = ""
    source: str = ""
    caveat: str = ""

    def met(self, row: "OperatingPoint") -> bool | None:
        values = ((row.sensitivity, row.specificity) if self.compare == "point"
                  else (row.sens_ci[0], row.spec_ci[0]))
        if None in values:
            return None
        return values[0] > self.sensitivity and values[1] > self.specificity


@dataclass(frozen=True)
class Settings:
    rules: tuple[Rule, ...]
    endpoints: tuple[Endpoint, ...]


def _rule(item: Any, where: str) -> Rule:
    if item == "youden":
        return Rule("youden")
    if isinstance(item, dict) and len(item) == 1:
        (kind, target), = item.items()
        if kind in ("sensitivity", "specificity") and isinstance(target, (int, float)) and 0 < target <= 1:
            return Rule(kind, float(target))
    raise FocusError(f"{where}: a rule is `youden`, `sensitivity: X` or `specificity: X` (0 < X <= 1), "
                     f"got {item!r}")


def _endpoint(item: Any, where: str) -> Endpoint:
    keys = set(Endpoint.__dataclass_fields__)
    if not isinstance(item, dict) or not {"name", "target", "sensitivity", "specificity"} <= set(item) \
            or set(item) - keys:
        raise FocusError(f"{where}: an endpoint has name, target, sensitivity and specificity (and optionally "
                         f"compare, title, source, caveat), got {item!r}")
    endpoint = Endpoint(**{k: (" ".join(v.split()) if isinstance(v, str) else v) for k, v in item.items()})
    if endpoint.compare not in ("point", "lower_bound") or not all(
            isinstance(v, (int, float)) and 0 <= v <= 1 for v in (endpoint.sensitivity, endpoint.specificity)):
        raise FocusError(f"{where}: endpoint {endpoint.name!r}: sensitivity and specificity are fractions in "
                         "[0, 1] and compare is point or lower_bound")
    return endpoint


def load_settings(extra: Path | None = None) -> Settings:
    """The shipped rules and endpoints, with a user file's endpoints added and its rules, if any, instead."""
    def read(path: Path) -> dict:
        try:
            data = load_yaml_file(path) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise FocusError(f"{path}: cannot read the endpoints file: {exc}") from None
        if not isinstance(data, dict) or set(data) - {"rules", "endpoints"}:
            raise FocusError(f"{path}: an endpoints file has `rules` and/or `endpoints`")
        return data

    base = read(PRESET)
    rules = [_rule(r, str(PRESET)) for r in base["rules"]]
    endpoints = [_endpoint(e, str(PRESET)) for e in base["endpoints"]]
    if extra is not None:
        if not Path(extra).is_file():
            raise FocusError(f"--endpoints {extra}: no such file")
        user = read(Path(extra))
        if user.get("rules"):
            rules = [_rule(r, str(extra)) for r in user["rules"]]
        endpoints += [_endpoint(e, str(extra)) for e in user.get("endpoints") or []]
    return Settings(tuple(rules), tuple(endpoints))


@dataclass(frozen=True)
class OperatingPoint:
    model: str
    task: str
    source_task: str
    target: str | None
    rule: str
    threshold: float
    n: int
    sensitivity: float | None
    sens_ci: list[float | None]
    specificity: float | None
    spec_ci: list[float | None]
    ppv: float | None
    npv: float | None
    meets: bool | None = None
    endpoints: tuple[str, ...] = ()


@dataclass
class OperatingPoints:
    rows: list[OperatingPoint] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    settings: Settings | None = None
    no_validation: list[Entry] = field(default_factory=list)


def no_validation_note(lines: list[Entry]) -> list[str]:
    """One note naming every line without validation rows, by configuration."""
    if not lines:
        return []
    tasks: dict[str, list[str]] = {}
    for e in lines:
        tasks.setdefault(config_label(e), []).append(e.line.task)
    return [f"{len(lines)} line(s) have {NO_VALIDATION}: "
            + "; ".join(f"{label} on {', '.join(sorted(t))}" for label, t in sorted(tasks.items()))]


def _xy(rows: list[dict], normalised: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    kept = [(r, score_of(r, normalised)) for r in rows]
    kept = [(r, s) for r, s in kept if s is not None]
    return (np.array([r["label"] for r, _ in kept], dtype=float), np.array([s for _, s in kept], dtype=float),
            np.array([str(r.get("patient_id", r.get("image_id"))) for r, _ in kept], dtype=object))


def apply_threshold(y, score, patients, threshold: float, options: ReportOptions, stream: int) -> dict[str, Any]:
    """The four rates at ``threshold`` with patient-bootstrap intervals for sensitivity and specificity."""
    point = {k: v[0] for k, v in rates_batch(y, score, threshold, np.ones((1, y.size))).items()}
    resamples = Resamples(patients, options.n_boot, options.seed, stream=stream, point=False)
    replicates = resamples.map(lambda w: rates_batch(y, score, threshold, w)) if resamples.rows else None
    ci = {k: percentile_ci(replicates[k]) if replicates else [None, None] for k in ("sensitivity", "specificity")}
    value = {k: (float(v) if np.isfinite(v) else None) for k, v in point.items()}
    return {**value, "sens_ci": ci["sensitivity"], "spec_ci": ci["specificity"], "n": int(y.size)}


def _config_points(lines: list[Entry], settings: Settings, options: ReportOptions, out: OperatingPoints) -> None:
    """One configuration's rows: each source task with validation rows, each rule, each same-target task."""
    normalised = lines[0].line.method in NORMALISED_SCORE_METHODS
    tests = {e.line.task: _xy(read_rows(e, "test") or [], normalised) for e in lines}
    for source in lines:
        val = _xy(read_rows(source, "val") or [], normalised)
        if not val[0].size:
            out.no_validation.append(source)
            continue
        targets = [e for e in lines if e.line.target == source.line.target]
        for rule in settings.rules:
            threshold = choose_threshold(val[0], val[1], rule)
            if threshold is None:
                out.notes.append(f"{config_label(source)} on {source.line.task}: rule {rule.name} has no "
                                 "threshold on the validation rows (one class only, or the target is unreachable)")
                continue
            for stream, e in enumerate(sorted(targets, key=lambda e: e.line.task)):
                y, score, patients = tests[e.line.task]
                if not y.size:
                    continue
                rates = apply_threshold(y, score, patients, threshold, options, stream)
                out.rows.append(_judged(OperatingPoint(
                    config_label(e), e.line.task, source.line.task, e.line.target, rule.name, threshold, rates["n"],
                    rates["sensitivity"], rates["sens_ci"], rates["specificity"], rates["spec_ci"], rates["ppv"],
                    rates["npv"]), settings))


def _judged(row: OperatingPoint, settings: Settings) -> OperatingPoint:
    applicable = [p for p in settings.endpoints if p.target == row.target]
    if not applicable:
        return row
    verdicts = [p.met(row) for p in applicable]
    meets = None if None in verdicts else all(verdicts)
    return OperatingPoint(**{**row.__dict__, "meets": meets, "endpoints": tuple(p.name for p in applicable)})


def operating_points(collection: Collection, options: ReportOptions) -> OperatingPoints:
    settings = load_settings(options.endpoints)
    out = OperatingPoints(settings=settings)
    configs: dict[str, list[Entry]] = {}
    pairing = compared(collection, options, VARIES)
    for e in pairing.entries:
        configs.setdefault(config_label(e), []).append(e)
    for label in sorted(configs):
        _config_points(sorted(configs[label], key=lambda e: e.line.task), settings, options, out)
    out.notes = no_validation_note(out.no_validation) + out.notes + pairing.notes()
    return out


def operating_table(result: OperatingPoints) -> Table:
    table = Table(COLUMNS, title="Operating points: thresholds chosen on validation, applied unchanged to test "
                                 "and external sets", notes=list(result.notes))
    for r in result.rows:
        table.add(r.model, r.task, r.source_task, r.rule, r.threshold, r.sensitivity, *r.sens_ci, r.specificity,
                  *r.spec_ci, r.ppv, r.npv, r.meets, " ".join(r.endpoints) or None)
    for p in (result.settings.endpoints if result.settings else ()):
        table.notes.append(f"endpoint {p.name} ({p.target}): sensitivity > {p.sensitivity:g} and specificity > "
                           f"{p.specificity:g} ({'point estimates' if p.compare == 'point' else 'lower 95% bounds'})"
                           + (f"; source: {p.source}" if p.source else ""))
    return table


@dataclass(frozen=True)
class OperatingPointsAnalysis:
    """``focus-eval report operating-points [--endpoints FILE]``."""

    name: str = "operating-points"
    summary: str = ("sensitivity, specificity, PPV and NPV at thresholds chosen on validation and applied unchanged "
                    "to test and external sets; screening endpoints met or not")
    inputs: tuple[str, ...] = ("results",)
    varies: str = VARIES

    def compute(self, collection: Collection, options: ReportOptions = ReportOptions()) -> Table:
        result = operating_points(collection, options)
        if not result.rows and not result.notes:
            raise FocusError("no binary results lines with sample files under "
                             + ", ".join(map(str, collection.paths)))
        return operating_table(result)


ANALYSIS = OperatingPointsAnalysis()

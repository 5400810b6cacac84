"""Recalibration: temperature scaling (P' = sigmoid(logit(P) / T)) and Platt scaling (P' = sigmoid(a logit(P) +
b)), each fitted by maximum likelihood on the validation rows of a configuration's task and applied unchanged to
that task's test rows and to the test rows of every other task of the same target (external sets); ECE (10
equal-width bins) and Brier score before and after. Temperature scaling is monotone, so it leaves the AUROC as
it is (Platt's too when a > 0); a row whose Platt slope is negative (the recalibrated scores reverse the ranking)
or zero, or whose AUROC moved, is flagged in its ``flags`` column and counted in the notes. A line without
validation rows (split ``val`` in its sample file: a run with ``--no-val-scores``, or a task without a validation
split) has no recalibration of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from focus_eval.analysis.base import ReportOptions, Table
from focus_eval.analysis.operating_points import _xy, no_validation_note
from focus_eval.analysis.samplesets import compared, config_label, read_rows
from focus_eval.errors import FocusError
from focus_eval.metrics.core import auroc, brier, ece
from focus_eval.metrics.operating import fit_platt, fit_temperature, platt_logit, sigmoid, temperature_logit
from focus_eval.results.collect import Collection, Entry

# the threshold or scaling of one task is carried to the other tasks of the same configuration
VARIES = "task"
COLUMNS = ("model", "method", "task", "source_task", "scaling", "parameters", "n", "ece", "ece_recalibrated",
           "brier", "brier_recalibrated", "auroc", "auroc_recalibrated", "flags")
# flags where a recalibrated number means something else than "the same scores, better calibrated"
NEGATIVE_SLOPE = "negative slope"  # Platt's a < 0: the recalibrated scores reverse the ranking
FLAT = "zero slope"  # Platt's a = 0: every image gets the same score
AUROC_CHANGED = "AUROC changed"  # the map did not keep the order of the scores
FLAG_NOTES = {NEGATIVE_SLOPE: "Platt's slope a < 0: the recalibrated scores reverse the ranking of the images",
              FLAT: "Platt's slope a = 0: every image gets the same recalibrated score",
              AUROC_CHANGED: "the recalibrated AUROC differs from the AUROC before: the map did not keep the order "
                             "of the scores"}
AUROC_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Recalibrated:
    """One test set under one scaling fitted on ``source_task``'s validation rows: its scores before, and the
    log-odds after (the probabilities are their sigmoid; the AUROC after is computed on the log-odds, which keep
    the order that probabilities rounded to 0 or 1 in floating point would tie)."""

    model: str
    method: str
    task: str
    source_task: str
    scaling: str
    parameters: str
    y: np.ndarray
    before: np.ndarray
    after_logit: np.ndarray
    slope_flags: tuple[str, ...] = ()

    @property
    def after(self) -> np.ndarray:
        return sigmoid(self.after_logit)

    @property
    def flags(self) -> tuple[str, ...]:
        """What makes the row's recalibrated numbers mean something else (``FLAG_NOTES``)."""
        before, after = self.value(auroc, False), self.value(auroc, True)
        changed = (before is None) != (after is None) or (
            before is not None and after is not None and abs(before - after) > AUROC_TOLERANCE)
        return self.slope_flags + ((AUROC_CHANGED,) if changed else ())

    def value(self, metric, after: bool) -> float | None:
        if metric is auroc and after:
            return auroc(self.y, self.after_logit)
        return metric(self.y, self.after if after else self.before)


@dataclass
class Recalibration:
    rows: list[Recalibrated] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    no_validation: list[Entry] = field(default_factory=list)


def fit_scalings(y: np.ndarray, p: np.ndarray) -> list[tuple[str, str, object, tuple[str, ...]]]:
    """(name, parameters as text, map from probabilities to recalibrated log-odds, flags of the fit) of each
    scaling fitted on (y, p)."""
    t = fit_temperature(y, p)
    a, b = fit_platt(y, p)
    slope = (NEGATIVE_SLOPE,) if a < 0 else (FLAT,) if a == 0 else ()
    return [("temperature", f"T={t:.4g}", lambda q: temperature_logit(q, t), ()),
            ("platt", f"a={a:.4g} b={b:.4g}", lambda q: platt_logit(q, a, b), slope)]


def _config_rows(lines: list[Entry], out: Recalibration) -> None:
    tests = {e.line.task: _xy(read_rows(e, "test") or [], False) for e in lines}
    for source in lines:
        vy, vp, _ = _xy(read_rows(source, "val") or [], False)
        if not vy.size:
            out.no_validation.append(source)
            continue
        if vy.min() == vy.max():
            out.notes.append(f"{config_label(source)} on {source.line.task}: validation rows of one class only")
            continue
        if vp.min() < 0 or vp.max() > 1:
            out.notes.append(f"{config_label(source)} on {source.line.task}: scores are not probabilities")
            continue
        for name, params, scale, flags in fit_scalings(vy, vp):
            for e in lines:
                y, p, _ = tests[e.line.task]
                if e.line.target == source.line.target and y.size:
                    out.rows.append(Recalibrated(config_label(e), e.line.method, e.line.task, source.line.task,
                                                 name, params, y, p, scale(p), flags))


def recalibration(collection: Collection, options: ReportOptions) -> Recalibration:
    out = Recalibration()
    configs: dict[str, list[Entry]] = {}
    pairing = compared(collection, options, VARIES)
    for e in pairing.entries:
        configs.setdefault(config_label(e), []).append(e)
    for label in sorted(configs):
        _config_rows(sorted(configs[label], key=lambda e: e.line.task), out)
    out.notes = no_validation_note(out.no_validation) + out.notes + pairing.notes()
    return out


def recalibration_table(result: Recalibration) -> Table:
    table = Table(COLUMNS, title="Recalibration fitted on validation: ECE and Brier before and after",
                  notes=list(result.notes))
    flagged: dict[str, int] = {}
    for r in result.rows:
        flags = r.flags
        for flag in flags:
            flagged[flag] = flagged.get(flag, 0) + 1
        table.add(r.model, r.method, r.task, r.source_task, r.scaling, r.parameters, int(r.y.size),
                  r.value(ece, False), r.value(ece, True), r.value(brier, False), r.value(brier, True),
                  r.value(auroc, False), r.value(auroc, True), "; ".join(flags) or None)
    table.notes += [f"{flag} ({n} row(s)): {FLAG_NOTES[flag]}" for flag, n in flagged.items()]
    return table


@dataclass(frozen=True)
class RecalibrationAnalysis:
    """``focus-eval report recalibration``."""

    name: str = "recalibration"
    summary: str = ("temperature and Platt scaling fitted on validation: ECE and Brier before and after on test and "
                    "external sets")
    inputs: tuple[str, ...] = ("results",)
    varies: str = VARIES

    def compute(self, collection: Collection, options: ReportOptions = ReportOptions()) -> Table:
        result = recalibration(collection, options)
        if not result.rows and not result.notes:
            raise FocusError("no binary results lines with sample files under "
                             + ", ".join(map(str, collection.paths)))
        return recalibration_table(result)


ANALYSIS = RecalibrationAnalysis()

"""Views of the FOCUS paper computed from results lines, each a ``Table`` that ``focus-eval report NAME``
prints and the leaderboard page of the same name draws:

- ``domain-gap`` (Table 4): per dataset, the mean AUROC of general-domain lines minus that of
  ophthalmic-domain lines, over the vision encoders (family ``vm``) as the paper's table is, beside the dataset's
  country and imaging devices (``analysis.origins``); ``domain-gap-pooled`` the same over every family;
- ``fairness-calibration`` (Fig. 3): Pearson's r between AUROC and the equalised-odds gap (per attribute) and
  between AUROC and ECE, per model family;
- ``specialisation`` (Fig. 5): mean AUROC of a general model and its medical specialisation at each scale, over
  the tasks and method both have results for (``SPECIALISATION_PAIRS``; a pair appears only when both members do);
- ``zero-shot-probe`` (Fig. 24): each dual encoder's zero-shot AUROC against its linear-probe AUROC, per task;
- ``interfaces`` (Fig. 28, the interface summary): per interface, the way a model is asked (a vision encoder's
  linear probe, a dual encoder's zero-shot prompts or linear probe, a multimodal LLM's yes/no prompt), its lines'
  mean AUROC, AUPRC, accuracy and ECE and the paper's Fairness, Quality and Shift (``analysis.summary``);
- ``reliability`` (Fig. 29, the reliability matrix): per configuration (model and method) the five reliability
  dimensions side by side: AUROC, calibration (1 - mean ECE), Fairness, Quality and Shift.

Lines that enter: trained base models (no adapter) under the default conventions, proxy and underpowered tasks
left out (``summary.included``), ``--limit`` runs only when asked, and lines with an AUROC only; through the one
pairing step (``results.identity.pair``), so also plain lines (no prompt variant, label rule, corruption or label
budget) of the task version most lines have, with answers and coverage at the floor. The lines left out are
named in the notes.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from statistics import fmean
from typing import TYPE_CHECKING, Iterable, Sequence

from focus_eval.analysis.base import ReportOptions, Table
from focus_eval.analysis.origins import origin
from focus_eval.analysis.summary import included, summarize
from focus_eval.results.identity import Pairing, pair

if TYPE_CHECKING:
    from focus_eval.results.collect import Collection, Entry

#: (scale, general model, specialised model): the preset names whose results the specialisation view pairs
SPECIALISATION_PAIRS: tuple[tuple[str, str, str], ...] = (
    ("4B", "gemma3-4b", "medgemma-4b"),
    ("27B", "gemma3-27b", "medgemma-27b"),
)
#: the x-axes of the fairness and calibration view: (column name, section, attribute, key)
FAIRNESS_AXES: tuple[tuple[str, str, str | None, str], ...] = (
    ("eo_gap_age", "fairness", "age", "eo_gap"), ("eo_gap_sex", "fairness", "sex", "eo_gap"),
    ("ece", "metrics", None, "ece"))
DUAL_ENCODERS = "vlm"
VISION_ENCODERS = "vm"
#: (family, method) -> the interface's name in the interface summary, in the paper's order
INTERFACES: dict[tuple[str, str], str] = {
    ("vm", "linear_probe"): "vision encoder, linear probe",
    ("vlm", "zero_shot"): "dual encoder, zero-shot",
    ("vlm", "linear_probe"): "dual encoder, linear probe",
    ("mllm", "prompt"): "multimodal LLM, yes/no prompt",
}
#: the columns of the reliability matrix, each 0..1 with higher better
RELIABILITY = ("auroc", "calibration", "fairness", "quality", "shift")


def _not_in_view(entry: "Entry", include_proxy: bool) -> str | None:
    if not included([entry], include_proxy):
        return "a proxy or underpowered task"
    if entry.line.adapter:
        return "a fine-tuned adapter (the views show base models)"
    if entry.line.untrained:
        return "an untrained baseline"
    if any(c.key != "limit" for c in entry.conventions):
        return "non-default run conventions"
    if entry.metric("auroc") is None:
        return "no AUROC"
    return None


def eligible_lines(entries: Iterable["Entry"], include_limited: bool = False,
                   include_proxy: bool = False) -> Pairing:
    """Trained base-model lines under the default conventions (a limited run only with ``include_limited``)
    that have an AUROC, and the lines left out with their reasons."""
    return pair(entries, "configuration", include_limited=include_limited, min_group=1,
                keep=lambda e: _not_in_view(e, include_proxy))


def eligible(entries: Iterable["Entry"], include_limited: bool = False, include_proxy: bool = False) -> list["Entry"]:
    return eligible_lines(entries, include_limited, include_proxy).entries


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's correlation coefficient; None for fewer than three pairs or a constant variable."""
    if len(xs) < 3:
        return None
    mx, my = fmean(xs), fmean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx, syy = sum((x - mx) ** 2 for x in xs), sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else None


def _mean(values: Sequence[float]) -> float | None:
    return fmean(values) if values else None


# ------------------------------------------------------------------------------------------ Table 4
def domain_gap_table(lines: Sequence["Entry"], pooled: bool = False) -> Table:
    """Table 4 over the vision encoders' lines, or over every family's (``pooled``)."""
    by_dataset: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for e in lines:
        if pooled or e.line.family == VISION_ENCODERS:
            by_dataset[e.line.dataset][e.line.domain].append(e.metric("auroc"))
    who = "every family pooled" if pooled else "vision encoders"
    table = Table(("dataset", "country", "device", "n_general", "general_auroc", "n_ophthalmic",
                   "ophthalmic_auroc", "difference"),
                  title=f"Mean AUROC per dataset, {who}: general minus ophthalmic pretraining")
    for dataset in sorted(by_dataset):
        general, ophthalmic = by_dataset[dataset]["general"], by_dataset[dataset]["ophthalmic"]
        g, o = _mean(general), _mean(ophthalmic)
        place = origin(dataset)
        table.add(dataset, place.country, place.device, len(general), g, len(ophthalmic), o,
                  g - o if g is not None and o is not None else None)
    table.notes.append("difference = mean AUROC of general-domain lines minus that of ophthalmic-domain lines; "
                       "empty where one domain has no line on the dataset")
    table.notes.append("every family's lines pooled (dual encoders and multimodal LLMs too): the paper's Table 4 is "
                       "over vision encoders only, see domain-gap" if pooled else
                       "vision encoders only (family vm), as the paper's Table 4; domain-gap-pooled pools every family")
    return table


# ------------------------------------------------------------------------------------------ Fig. 3
@dataclass(frozen=True)
class AxisPoint:
    entry: "Entry"
    axis: str
    x: float
    auroc: float


def fairness_points(lines: Sequence["Entry"]) -> list[AxisPoint]:
    points = []
    for e in lines:
        for axis, section, attribute, key in FAIRNESS_AXES:
            value = e.metric(key) if section == "metrics" else (getattr(e.line, section).get(attribute) or {}).get(key)
            if value is not None:
                points.append(AxisPoint(e, axis, value, e.metric("auroc")))
    return points


def fairness_calibration_table(points: Sequence[AxisPoint]) -> Table:
    grouped: dict[tuple[str, str], list[AxisPoint]] = defaultdict(list)
    for p in points:
        grouped[(p.entry.line.family, p.axis)].append(p)
    order = {axis: i for i, (axis, *_) in enumerate(FAIRNESS_AXES)}
    table = Table(("family", "x", "n_lines", "pearson_r", "mean_x", "mean_auroc"),
                  title="AUROC against the equalised-odds gap and ECE: Pearson's r per family")
    for family, axis in sorted(grouped, key=lambda k: (k[0], order[k[1]])):
        members = grouped[(family, axis)]
        xs, ys = [p.x for p in members], [p.auroc for p in members]
        table.add(family, axis, len(members), pearson(xs, ys), fmean(xs), fmean(ys))
    table.notes.append("r is empty for fewer than three lines or a constant variable")
    return table


# ------------------------------------------------------------------------------------------ Fig. 5
def specialisation_table(lines: Sequence["Entry"],
                         pairs: Sequence[tuple[str, str, str]] = SPECIALISATION_PAIRS) -> Table:
    scores: dict[str, dict[tuple[str, str], float]] = defaultdict(dict)
    for e in lines:
        scores[e.model][(e.line.method, e.line.task)] = e.metric("auroc")
    table = Table(("scale", "general_model", "specialised_model", "method", "n_tasks", "general_auroc",
                   "specialised_auroc", "difference"),
                  title="Specialisation against scale: mean AUROC over the tasks both models have")
    for scale, general, special in pairs:
        common = sorted(set(scores.get(general, {})) & set(scores.get(special, {})))
        for method in sorted({m for m, _ in common}):
            keys = [k for k in common if k[0] == method]
            g = fmean(scores[general][k] for k in keys)
            s = fmean(scores[special][k] for k in keys)
            table.add(scale, general, special, method, len(keys), g, s, s - g)
    table.notes.append("difference = specialised minus general; pairs: " + ", ".join(
        f"{s}: {g} / {m}" for s, g, m in pairs))
    return table


# ------------------------------------------------------------------------------------------ Fig. 24
def zero_shot_probe_table(lines: Sequence["Entry"]) -> Table:
    scores: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for e in lines:
        if e.line.family == DUAL_ENCODERS and e.line.method in ("zero_shot", "linear_probe"):
            scores[(e.model, e.line.task)][e.line.method] = e.metric("auroc")
    table = Table(("model", "task", "zero_shot_auroc", "linear_probe_auroc", "difference"),
                  title="Dual encoders: zero-shot against linear-probe AUROC per task")
    for model, task in sorted(scores):
        both = scores[(model, task)]
        if len(both) == 2:
            table.add(model, task, both["zero_shot"], both["linear_probe"], both["linear_probe"] - both["zero_shot"])
    table.notes.append("difference = linear probe minus zero-shot; a task appears where the model has both")
    return table


# ------------------------------------------------------------------------------------------ Fig. 28
def interface_table(lines: Sequence["Entry"]) -> Table:
    grouped: dict[tuple[str, str], list["Entry"]] = defaultdict(list)
    for e in lines:
        grouped[(e.line.family, e.line.method)].append(e)
    order = list(INTERFACES)
    table = Table(("interface", "family", "method", "n_models", "n_lines", "auroc", "auprc", "accuracy", "ece",
                   "fairness", "quality", "shift"),
                  title="Interface summary: each way of asking a model, over its lines")
    for key in sorted(grouped, key=lambda k: (order.index(k) if k in order else len(order), k)):
        s = summarize(grouped[key])
        table.add(INTERFACES.get(key, f"{key[0]}, {key[1]}"), *key, s.n_models, s.n_lines, s.means["auroc"],
                  s.means["auprc"], s.means["accuracy"], s.means["ece"], s.fairness.value, s.quality.value, s.shift)
    table.notes.append("means over the interface's lines; Fairness and Quality as the paper's summary (1 - mean gap, "
                       "no imputation, chance-level lines left out), Shift = 1 - (max - min) of per-dataset mean AUROC")
    return table


# ------------------------------------------------------------------------------------------ Fig. 29
def reliability_table(lines: Sequence["Entry"]) -> Table:
    grouped: dict[tuple[str, str], list["Entry"]] = defaultdict(list)
    for e in lines:
        grouped[(e.model, e.line.method)].append(e)
    table = Table(("model", "family", "method", "n_tasks", *RELIABILITY),
                  title="Reliability matrix: per configuration, five dimensions (higher is better)")
    for model, method in sorted(grouped):
        members = grouped[(model, method)]
        s = summarize(members)
        ece = s.means["ece"]
        table.add(model, members[0].line.family, method, len({e.line.task for e in members}), s.means["auroc"],
                  None if ece is None else 1.0 - ece, s.fairness.value, s.quality.value, s.shift)
    table.notes.append("auroc = mean AUROC over the configuration's tasks; calibration = 1 - mean ECE; fairness, "
                       "quality and shift as the paper's summary columns (empty where no line carries the gaps, or "
                       "for shift with fewer than two datasets)")
    return table


@dataclass(frozen=True)
class FocusView:
    """One of the views above as an analysis (``focus-eval report NAME``)."""

    name: str
    summary: str
    inputs: tuple[str, ...] = ("results",)
    varies: str = "configuration"

    def table(self, entries: Iterable["Entry"], include_limited: bool = False, include_proxy: bool = False) -> Table:
        pairing = eligible_lines(entries, include_limited, include_proxy)
        lines = pairing.entries
        if self.name in ("domain-gap", "domain-gap-pooled"):
            table = domain_gap_table(lines, pooled=self.name == "domain-gap-pooled")
        elif self.name == "interfaces":
            table = interface_table(lines)
        elif self.name == "reliability":
            table = reliability_table(lines)
        elif self.name == "fairness-calibration":
            table = fairness_calibration_table(fairness_points(lines))
        elif self.name == "specialisation":
            table = specialisation_table(lines)
        else:
            table = zero_shot_probe_table(lines)
        table.notes += pairing.notes()
        return table

    def compute(self, collection: "Collection", options: ReportOptions = ReportOptions()) -> Table:
        return self.table(collection.entries, options.include_limited)


DOMAIN_GAP = FocusView("domain-gap", "FOCUS Table 4: per dataset, general minus ophthalmic mean AUROC of the "
                                     "vision encoders, with its country and devices")
DOMAIN_GAP_POOLED = FocusView("domain-gap-pooled", "FOCUS Table 4 with every family pooled (the paper's table is "
                                                   "vision encoders only)")
INTERFACES_VIEW = FocusView("interfaces", "FOCUS Fig. 28, the interface summary: AUROC, ECE, Fairness, Quality and "
                                          "Shift per way of asking a model (probe, zero-shot, prompt)")
RELIABILITY_VIEW = FocusView("reliability", "FOCUS Fig. 29, the reliability matrix: AUROC, calibration, Fairness, "
                                            "Quality and Shift per configuration")
FAIRNESS_CALIBRATION = FocusView("fairness-calibration", "FOCUS Fig. 3: Pearson's r of AUROC against the "
                                                         "equalised-odds gap and ECE, per family")
SPECIALISATION = FocusView("specialisation", "FOCUS Fig. 5: general vs medical model at each scale (mean AUROC)")
ZERO_SHOT_PROBE = FocusView("zero-shot-probe", "FOCUS Fig. 24: zero-shot against linear-probe AUROC per dual "
                                               "encoder and task")

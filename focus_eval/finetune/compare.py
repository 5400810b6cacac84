"""Fine-tuned vs base model: paired per-task deltas and in-domain / out-of-domain summaries
(``focus-eval compare``).

Inputs are model folders written by the runner: ``<output>/<model>`` (the base) and one
``<output>/<model>@<adapter>`` per adapter. A comparison is one (adapter, test task, method) whose task target is
the adapter's training target and which the base model was evaluated on too.

Per comparison and metric:
- rows are paired by image id; images present in only one folder, or whose labels differ, are left out and
  counted (``n_unpaired``, ``n_label_mismatch``); a metric then uses the rows where both models have a score
  (auroc, auprc, ece) or a parsed prediction (accuracy, f1);
- delta = M(fine-tuned) - M(base); 95% percentile interval from a paired bootstrap that resamples patients
  (every image of a drawn patient, both models on the same draw);
- p is the bootstrap-percentile p of the FOCUS paper (``P_METHOD``): it says where zero falls in the bootstrap
  distribution of the delta; it is not a test against a null-centred distribution;
- q: Benjamini-Hochberg over all comparisons of the same metric in this output.

Summaries, per metric and domain (in-domain: the adapter's training dataset is the test dataset; OOD:
anything else): the mean of the per-comparison deltas. Its interval and p come from a bootstrap in which each
test dataset's patients are drawn once per replicate and that same draw weights every comparison evaluated on
that dataset (comparisons on different datasets share no patients, so their draws are independent). Each
replicate recomputes every comparison's delta under its dataset's draw and averages them, so the interval
carries the sampling variance within comparisons and the correlation between comparisons that share a test
set, instead of treating comparisons as independent draws. Replicates in which some comparison's delta is
undefined are dropped (``n_boot_used``). q: Benjamini-Hochberg over the domain summaries of the same metric.
``win_rate``: share of the summarised comparisons that improved (delta > 0; delta < 0 for ECE, where lower
is better). Proxy and underpowered (fewer paired positives than ``results.power.MIN_POSITIVES``) comparisons get
delta lines but stay out of the summaries unless asked (``include_all``).
"""

from __future__ import annotations

import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from focus_eval.errors import FocusError
from focus_eval.metrics.arrays import SampleArrays, metric_batch
from focus_eval.metrics.bootstrap import (DEFAULT_N_BOOT, bh_qvalues, bootstrap_p, bootstrap_weights, paired_delta,
                                          percentile_ci)
from focus_eval.metrics.core import METRIC_FUNCTIONS
from focus_eval.results.power import underpowered
from focus_eval.results.schema import CompareLine, CompareSummaryLine

METRICS = ("auroc", "auprc", "accuracy", "f1", "ece")
LOWER_IS_BETTER = {"ece", "brier"}
DOMAINS = ("in_domain", "ood")
DEFAULT_SEED = 0
P_METHOD = ("bootstrap_percentile: p = min(1, 2 * min((1 + #{d* <= 0}) / (B + 1), (1 + #{d* >= 0}) / (B + 1))) "
            "over the B bootstrap deltas d*, as in the FOCUS paper; where zero falls in the bootstrap "
            "distribution, not a test against a null-centred distribution")
CI_LEVEL = 0.95


@dataclass
class PairedUnit:
    """One adapter on one test task, paired with the base model's samples of that task."""

    adapter: str
    base_model: str
    model: str
    train_dataset: str
    target: str
    test_task: str
    test_dataset: str
    method: str
    proxy: bool
    base: SampleArrays
    tuned: SampleArrays
    n_unpaired: int = 0
    n_label_mismatch: int = 0

    @property
    def in_domain(self) -> bool:
        return self.train_dataset == self.test_dataset

    @property
    def domain(self) -> str:
        return "in_domain" if self.in_domain else "ood"

    @property
    def n_pos(self) -> int:
        return int(self.base.y.sum())

    @property
    def underpowered(self) -> bool:
        return underpowered(self.n_pos)


@dataclass
class CompareReport:
    lines: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# ----- reading model folders


def read_units(model_dir: Path) -> dict[tuple[str, str], tuple[dict[str, Any], list]]:
    """(task, method) -> (meta, samples) of every finished unit in a model folder."""
    from focus_eval.results import store

    units = {}
    for path, record in store.read_units(model_dir):
        samples, reason = store.unit_status(model_dir, record)
        if samples is None:
            raise FocusError(f"{path}: {reason}; finish that run before comparing")
        units[(record.task, record.method)] = (record.to_dict(), samples)
    if not units:
        raise FocusError(f"{model_dir}: no evaluated (task, method) units")
    return units


def pair_rows(base: Sequence, tuned: Sequence) -> tuple[SampleArrays, SampleArrays, int, int]:
    """Rows of both sample lists aligned by image id, keeping images both have with equal labels.
    Returns (base, tuned, n_unpaired, n_label_mismatch)."""
    for name, rows in (("base", base), ("fine-tuned", tuned)):
        ids = [s.image_id for s in rows]
        if len(set(ids)) != len(ids):
            raise FocusError(f"{name} samples repeat an image id; pairing needs one row per image")
    by_id = {s.image_id: s for s in tuned}
    kept_base, kept_tuned, mismatched = [], [], 0
    for sample in base:
        other = by_id.get(sample.image_id)
        if other is None:
            continue
        if other.label != sample.label:
            mismatched += 1
            continue
        kept_base.append(sample)
        kept_tuned.append(other)
    unpaired = len(base) + len(tuned) - 2 * (len(kept_base) + mismatched)
    if not kept_base:
        raise FocusError("base and fine-tuned samples share no image with the same label")
    return SampleArrays.from_samples(kept_base), SampleArrays.from_samples(kept_tuned), unpaired, mismatched


def build_comparisons(base_dir: Path, ft_dirs: Sequence[Path], report: CompareReport) -> list[PairedUnit]:
    base_units = read_units(base_dir)
    base_models = {meta["model"] for meta, _ in base_units.values()}
    if any(meta.get("adapter") for meta, _ in base_units.values()):
        raise FocusError(f"{base_dir}: this folder holds adapter evaluations; --base must be the base model's folder")
    comparisons = []
    for ft_dir in ft_dirs:
        for (task, method), (meta, samples) in sorted(read_units(ft_dir).items()):
            where = f"{ft_dir}/samples/{task}.{method}"
            if not meta.get("adapter"):
                raise FocusError(f"{where}: not an adapter evaluation (no adapter in its meta); --ft takes "
                                 f"folders written by 'focus-eval --adapter DIR'")
            if meta["model"] not in base_models:
                raise FocusError(f"{where}: adapter on model {meta['model']!r}, but --base holds {sorted(base_models)}")
            train_dataset, target = meta.get("adapter_train_dataset"), meta.get("adapter_train_target")
            if not train_dataset or not target:
                raise FocusError(f"{where}: the meta does not name the adapter's training dataset and target "
                                 f"(adapter_train_dataset, adapter_train_target); evaluate an adapter trained by "
                                 f"'focus-eval sft', whose folder holds focus_eval_adapter.json")
            if meta["target"] != target:
                report.notes.append(f"skipped {where}: task target {meta['target']} is not the adapter's "
                                    f"training target {target}")
                continue
            if (task, method) not in base_units:
                report.notes.append(f"skipped {where}: the base model was not evaluated on {task} ({method})")
                continue
            base_meta, base_samples = base_units[(task, method)]
            if base_meta.get("task_hash") != meta.get("task_hash"):
                raise FocusError(f"{where}: evaluated with another version of task {task} than the base model "
                                 f"(task_hash {meta.get('task_hash')} vs {base_meta.get('task_hash')}); "
                                 f"evaluate both with the same task files")
            try:
                a, b, unpaired, mismatched = pair_rows(base_samples, samples)
            except FocusError as exc:
                raise FocusError(f"{where}: {exc}") from None
            comparisons.append(PairedUnit(
                adapter=str(meta["adapter"]), base_model=str(meta["model"]), model=Path(ft_dir).name,
                train_dataset=str(train_dataset), target=str(target), test_task=task,
                test_dataset=str(meta["dataset"]), method=method, proxy=bool(meta.get("proxy")), base=a,
                tuned=b, n_unpaired=unpaired, n_label_mismatch=mismatched))
            if unpaired or mismatched:
                report.notes.append(f"{where}: {unpaired} unpaired image(s) and {mismatched} label mismatch(es) "
                                    f"left out")
    if not comparisons:
        raise FocusError("nothing to compare: no adapter task matched a base-model task of the adapter's target")
    return comparisons


# ----- deltas and summaries


def improved(metric: str, delta: float) -> bool:
    return delta < 0 if metric in LOWER_IS_BETTER else delta > 0


def delta_lines(comparisons: Sequence[PairedUnit], metrics: Sequence[str], n_boot: int,
                seed: int) -> list[dict[str, Any]]:
    """One line per (comparison, metric) with delta, interval, p and (per metric) BH q."""
    lines = []
    for metric in metrics:
        block = []
        for c in comparisons:
            result = paired_delta(c.base, c.tuned, metric, n_boot=n_boot, seed=seed, level=CI_LEVEL)
            block.append(CompareLine(
                adapter=c.adapter, base_model=c.base_model, model=c.model, train_dataset=c.train_dataset,
                target=c.target, test_task=c.test_task, test_dataset=c.test_dataset, in_domain=c.in_domain,
                method=c.method, metric=metric, base=result["base"], ft=result["tuned"], delta=result["delta"],
                ci=result["ci"], p=result["p"], q=None, n=result["n"], n_pos=c.n_pos, n_boot=n_boot, seed=seed,
                ci_method=result["ci_method"], p_method=P_METHOD, proxy=c.proxy, underpowered=c.underpowered,
                n_unpaired=c.n_unpaired, n_label_mismatch=c.n_label_mismatch))
        lines += _with_q(block)
    return lines


def _with_q(block: list) -> list[dict[str, Any]]:
    """The lines of one metric with their Benjamini-Hochberg q values, as written."""
    for line, q in zip(block, bh_qvalues([line.p for line in block])):
        line.q = q
    return [line.to_dict() for line in block]


def _usable(c: PairedUnit, metric: str) -> np.ndarray:
    column = METRIC_FUNCTIONS[metric][1]
    return c.base.rows(column) & c.tuned.rows(column)


def _dataset_seed(seed: int, dataset: str) -> int:
    return zlib.crc32(f"{seed}|{dataset}".encode()) & 0x7FFFFFFF


def joint_deltas(comparisons: Sequence[PairedUnit], metric: str, n_boot: int, seed: int) -> np.ndarray:
    """(K, 1 + n_boot) deltas: column 0 the point estimates, then replicates in which every comparison on a
    test dataset is weighted by the same patient draw of that dataset."""
    out = np.full((len(comparisons), 1 + n_boot), np.nan)
    by_dataset: dict[str, list[int]] = {}
    for k, c in enumerate(comparisons):
        by_dataset.setdefault(c.test_dataset, []).append(k)
    for dataset, members in sorted(by_dataset.items()):
        rows = [_usable(comparisons[k], metric) for k in members]
        patients = np.concatenate([comparisons[k].base.patient_id[r] for k, r in zip(members, rows)])
        stops = np.cumsum([int(r.sum()) for r in rows])
        pairs = [(comparisons[k].base.take(r), comparisons[k].tuned.take(r)) for k, r in zip(members, rows)]

        def deltas(weights: np.ndarray) -> dict[int, np.ndarray]:
            parts = np.split(weights, stops[:-1], axis=1)
            return {k: metric_batch(metric, tuned, w) - metric_batch(metric, base, w)
                    for k, (base, tuned), w in zip(members, pairs, parts)}

        for k, values in bootstrap_weights(patients, n_boot, _dataset_seed(seed, dataset)).map(deltas).items():
            out[k] = values
    return out


def summary_lines(comparisons: Sequence[PairedUnit], metrics: Sequence[str], n_boot: int, seed: int,
                  include_all: bool = False) -> list[dict[str, Any]]:
    lines = []
    for metric in metrics:
        block = []
        for domain in DOMAINS:
            members = [c for c in comparisons if c.domain == domain
                       and (include_all or not (c.proxy or c.underpowered))]
            deltas = joint_deltas(members, metric, n_boot, seed) if members else np.empty((0, 1 + n_boot))
            defined = np.isfinite(deltas[:, 0])
            members = [c for c, ok in zip(members, defined) if ok]
            deltas = deltas[defined]
            if not members:
                continue
            mean = deltas.mean(axis=0)
            replicates = mean[1:][np.isfinite(mean[1:])]
            block.append(CompareSummaryLine(
                metric=metric, domain=domain, mean_delta=float(mean[0]), ci=percentile_ci(replicates, CI_LEVEL),
                p=bootstrap_p(replicates), q=None, n_comparisons=len(members),
                win_rate=float(np.mean([improved(metric, d) for d in deltas[:, 0]])), n_boot=n_boot,
                n_boot_used=int(replicates.size), seed=seed,
                resampling="patients of each test dataset, one joint draw per replicate shared by every "
                           "comparison on that dataset",
                p_method=P_METHOD, included="all" if include_all else "not proxy, not underpowered",
                adapters=sorted({c.adapter for c in members}), test_tasks=sorted({c.test_task for c in members})))
        lines += _with_q(block)
    return lines


def compare(base_dir: Path, ft_dirs: Sequence[Path], metrics: Sequence[str] = METRICS,
            n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED, include_all: bool = False) -> CompareReport:
    unknown = [m for m in metrics if m not in METRIC_FUNCTIONS]
    if unknown:
        raise FocusError(f"unknown metric(s) {unknown}; known: {', '.join(METRIC_FUNCTIONS)}")
    if n_boot < 1:
        raise FocusError("--n-boot must be at least 1")
    report = CompareReport()
    comparisons = build_comparisons(Path(base_dir), [Path(d) for d in ft_dirs], report)
    report.lines = delta_lines(comparisons, metrics, n_boot, seed)
    report.lines += summary_lines(comparisons, metrics, n_boot, seed, include_all)
    return report


def _signed(value) -> str:
    return "-" if value is None else f"{value:+.3f}"


def _prob(value) -> str:
    return "-" if value is None else f"{value:.3g}"


def print_report(report: CompareReport, out=None) -> None:
    out = out or sys.stdout
    for line in report.lines:
        lo, hi = line["ci"]
        ci = f"[{_signed(lo)}, {_signed(hi)}] p={_prob(line['p'])} q={_prob(line['q'])}"
        if line["kind"] == "delta":
            domain = "in-domain" if line["in_domain"] else "OOD"
            print(f"{line['model']:<36} {line['test_task']:<26} {domain:<9} {line['metric']:<9} "
                  f"{_signed(line['delta'])} {ci} n={line['n']}", file=out)
        else:
            print(f"summary {line['domain']:<9} {line['metric']:<9} mean {_signed(line['mean_delta'])} {ci} "
                  f"win rate {line['win_rate']:.2f} over {line['n_comparisons']} comparisons", file=out)

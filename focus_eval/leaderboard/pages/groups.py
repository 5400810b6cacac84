"""Group results lines the ways the site shows them: configurations, tasks, models and the paper-style table."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

from focus_eval.analysis.summary import GroupSummary, included, summarize
from focus_eval.leaderboard.draw.catalog import Catalog
from focus_eval.results.collect import Entry
from focus_eval.results.collect import weights_text
from focus_eval.results.identity import configuration_text
from focus_eval.results.schema import LOWER_IS_BETTER
from focus_eval.results.verdict import MISMATCH, UNVERIFIABLE, VERIFIED

TABLE_COLUMNS = ("accuracy", "auroc", "auprc", "ece", "fairness", "quality", "shift")


@dataclass(frozen=True)
class Configuration:
    """One model run with one method (and adapter): a row of the heatmap and a candidate for the radar chart."""

    model: str
    method: str
    adapter: str
    family: str | None
    domain: str | None
    untrained: bool
    entries: list[Entry]
    summary: GroupSummary
    conventions: str = ""
    submitter: str = ""  # who submitted the lines (empty: a results folder of one's own)

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return self.entries[0].config if self.entries else (self.model, self.method, self.adapter, "", "")

    @property
    def convention_text(self) -> str:
        return self.entries[0].convention_text if self.entries else ""

    @property
    def limited(self) -> bool:
        return any(e.limited for e in self.entries)

    @property
    def verification(self) -> str | None:
        """The row's verification: the worst state among its lines (``mismatch``, then ``unverifiable``), else
        ``verified``; None when any of its lines was not verified."""
        states = {e.verification for e in self.entries}
        if not states or None in states:
            return None
        return next(s for s in (MISMATCH, UNVERIFIABLE, VERIFIED) if s in states)

    @property
    def label(self) -> str:
        return configuration_text(self.model, self.method, self.adapter, self.convention_text, self.submitter)


@dataclass(frozen=True)
class TaskDefinition:
    """What the task file says about a task: how its label is derived, and the hash of the file as loaded."""

    label_rule: str
    description: str
    hash: str


@dataclass(frozen=True)
class TaskInfo:
    """One task with its results lines, best AUROC first."""

    name: str
    slug: str
    dataset: str | None
    target: str | None
    proxy: bool
    underpowered: bool
    definition: TaskDefinition | None
    task_hashes: list[str]
    threshold_rules: list[tuple[str, str]]
    entries: list[Entry]

    @property
    def hash_mismatch(self) -> bool:
        """True when some results were computed from a different version of the task file than the one shown."""
        return self.definition is not None and any(h != self.definition.hash for h in self.task_hashes)


@dataclass(frozen=True)
class ModelInfo:
    """One model with its results lines and where its weights came from (``extra.provenance`` of its lines)."""

    name: str
    slug: str
    family: str | None
    domain: str | None
    untrained: bool
    adapters: list[str]
    preset_hashes: list[str]
    entries: list[Entry]
    provenance: tuple[str, ...] = ()
    local_weights: bool = False


def provenance_text(record: dict) -> str:
    """One line saying where a model came from: hub id and revision, or local files and their digest, and
    which preset (built-in, a user file, a family adapter with arguments, an adapter class from a package)."""
    weights = weights_text(record)
    origin = {"built-in": "built-in preset", "family": f"family adapter {record.get('adapter')}",
              "user": f"user preset {record.get('preset_file') or ''}".strip()}.get(str(record.get("preset")), "")
    code = ""
    if record.get("adapter_class"):
        package = record.get("adapter_package")
        code = f"adapter {record['adapter_class']}" + (f" from {package}" if package else "")
    return "; ".join(p for p in (weights, origin, code) if p)


@dataclass(frozen=True)
class TableRow:
    target: str | None
    family: str | None
    method: str
    summary: GroupSummary
    untrained: bool = False

    def value(self, column: str) -> float | None:
        s = self.summary
        named = {"fairness": s.fairness.value, "quality": s.quality.value, "shift": s.shift}
        return named[column] if column in named else s.means[column]


@dataclass(frozen=True)
class TableBlock:
    """The rows of one target (or of all targets) with the best value per column, for bold type."""

    target: str | None
    overall: bool
    rows: list[TableRow]
    best: dict[str, float | None]


def rank_key(entry: Entry) -> tuple[bool, bool, float]:
    """Sort key of a task's lines: adequate coverage first, then by the task's primary metric (missing last)."""
    value = entry.metric(entry.primary_metric)
    return (entry.low_coverage, value is None, -(value or 0.0))


def configurations(entries: Sequence[Entry], catalog: Catalog, include_proxy: bool) -> list[Configuration]:
    """Configurations by family (schema order), then mean AUROC over the included lines, best first."""
    grouped: dict[tuple[str, str, str, str, str], list[Entry]] = defaultdict(list)
    for entry in entries:
        grouped[entry.config].append(entry)
    configs = []
    for (model, method, adapter, conventions, submitter), members in grouped.items():
        first = members[0].line
        configs.append(Configuration(
            model=model, method=method, adapter=adapter, family=first.family, domain=first.domain,
            untrained=any(e.line.untrained for e in members), entries=members,
            summary=summarize(included(members, include_proxy)), conventions=conventions, submitter=submitter))
    return sorted(configs, key=lambda c: (catalog.order("families", c.family), _desc(c.summary.means["auroc"]),
                                          c.label))


def top_configurations(configs: Sequence[Configuration], count: int) -> list[Configuration]:
    """The best ``count`` by mean AUROC; untrained baselines only when no trained model has a score."""
    ranked = [c for c in configs if c.summary.means["auroc"] is not None]
    if any(not c.untrained for c in ranked):
        ranked = [c for c in ranked if not c.untrained]
    return sorted(ranked, key=lambda c: (-c.summary.means["auroc"], c.label))[:count]


def tasks(entries: Sequence[Entry], catalog: Catalog, slugs: dict[str, str],
          definitions: dict[str, TaskDefinition]) -> list[TaskInfo]:
    grouped: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        grouped[entry.line.task].append(entry)
    infos = []
    for name, members in grouped.items():
        first = members[0].line
        infos.append(TaskInfo(
            name=name, slug=slugs[name], dataset=first.dataset, target=first.target,
            proxy=any(e.line.proxy for e in members), underpowered=any(e.underpowered for e in members),
            definition=definitions.get(name), task_hashes=_distinct(e.line.task_hash for e in members),
            threshold_rules=sorted({(e.line.method, str(e.line.extra["threshold_rule"])) for e in members
                                    if e.line.extra.get("threshold_rule")}),
            entries=sorted(members, key=lambda e: (*rank_key(e), e.model, e.line.method))))
    return sorted(infos, key=lambda t: (catalog.order("targets", t.target), t.dataset or "", t.name))


def models(entries: Sequence[Entry], catalog: Catalog, slugs: dict[str, str]) -> list[ModelInfo]:
    grouped: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        grouped[entry.model].append(entry)
    infos = []
    for name, members in grouped.items():
        first = members[0].line
        records = [e.line.extra["provenance"] for e in members if isinstance(e.line.extra.get("provenance"), dict)]
        infos.append(ModelInfo(
            name=name, slug=slugs[name], family=first.family, domain=first.domain,
            untrained=any(e.line.untrained for e in members),
            adapters=_distinct(e.line.adapter for e in members),
            preset_hashes=_distinct(e.line.preset_hash for e in members),
            provenance=tuple(_distinct(provenance_text(r) for r in records)),
            local_weights=any(r.get("local") for r in records),
            entries=sorted(members, key=lambda e: (catalog.order("targets", e.line.target), e.line.task,
                                                   e.line.method))))
    return sorted(infos, key=lambda m: (catalog.order("families", m.family), m.name))


def paper_table(entries: Sequence[Entry], catalog: Catalog, include_proxy: bool) -> list[TableBlock]:
    """Blocks per target and an ``Overall`` block, each with one row per (family, method) of base models, and
    untrained baselines in rows of their own after them (never averaged with trained models).

    Lines evaluated with a fine-tuned adapter are left out (they belong on the fine-tuning page), and so are runs
    under non-default conventions (another seed, ``--probe-compat``...): they have rows of their own elsewhere.
    """
    base = [e for e in included(entries, include_proxy) if not e.line.adapter and not e.conventions]
    by_target: dict[str | None, list[Entry]] = defaultdict(list)
    for entry in base:
        by_target[entry.line.target].append(entry)
    targets = sorted(by_target, key=lambda t: catalog.order("targets", t))
    blocks = [_block(t, by_target[t], catalog, overall=False) for t in targets]
    if len(targets) > 1:
        blocks.append(_block(None, base, catalog, overall=True))
    return blocks


def _block(target: str | None, entries: list[Entry], catalog: Catalog, overall: bool) -> TableBlock:
    grouped: dict[tuple[bool, str | None, str], list[Entry]] = defaultdict(list)
    for entry in entries:
        grouped[(entry.line.untrained, entry.line.family, entry.line.method)].append(entry)
    keys = sorted(grouped, key=lambda k: (k[0], catalog.order("families", k[1]), catalog.order("methods", k[2])))
    rows = [TableRow(target=target, family=f, method=m, summary=summarize(grouped[(u, f, m)]), untrained=u)
            for u, f, m in keys]
    return TableBlock(target=target, overall=overall, rows=rows, best={c: _best(rows, c) for c in TABLE_COLUMNS})


def _best(rows: list[TableRow], column: str) -> float | None:
    """The best value of a column among trained models' rows (an untrained baseline is never marked best)."""
    values = [round(v, 3) for v in (r.value(column) for r in rows if not r.untrained) if v is not None]
    if not values:
        return None
    return min(values) if column in LOWER_IS_BETTER else max(values)


def _desc(value: float | None) -> tuple[bool, float]:
    return (value is None, -(value or 0.0))


def _distinct(values) -> list[str]:
    return sorted({str(v) for v in values if v not in (None, "")})

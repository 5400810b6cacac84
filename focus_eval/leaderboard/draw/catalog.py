"""The leaderboard's display schema: metric labels, directions and the order of families, targets and methods."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from focus_eval.errors import DataError
from focus_eval.resources import resource_dir
from focus_eval.results.schema import FAIRNESS_GAPS, LOWER_IS_BETTER, METRICS, QUALITY_GAPS

_SECTIONS = ("metrics", "gaps", "attributes", "families", "domains", "methods", "targets")


@dataclass(frozen=True)
class MetricInfo:
    """How the site names one metric or gap, and which direction is better."""

    name: str
    label: str
    description: str
    lower_is_better: bool

    @property
    def arrow(self) -> str:
        return "\u2193" if self.lower_is_better else "\u2191"

    @property
    def direction(self) -> str:
        return "lower is better" if self.lower_is_better else "higher is better"


@dataclass(frozen=True)
class Catalog:
    """Display names keyed by metric, gap, attribute, family, domain, method and target."""

    metrics: dict[str, MetricInfo]
    gaps: dict[str, MetricInfo]
    names: dict[str, dict[str, str]]

    def metric(self, name: str) -> MetricInfo:
        return self.metrics.get(name) or self.gaps[name]

    def metric_label(self, name: str) -> str:
        """A metric's or gap's display name; an unknown name shows as written."""
        info = self.metrics.get(name) or self.gaps.get(name)
        return info.label if info else name

    def label(self, section: str, value: Any) -> str:
        """Display name of a family/domain/method/target/attribute value; unknown values show as written."""
        if value is None:
            return "\u2014"
        return self.names[section].get(str(value), str(value))

    def order(self, section: str, value: Any) -> tuple[int, str]:
        """Sort key: values listed in the schema first, in schema order, then the rest alphabetically."""
        known = list(self.names[section])
        text = "" if value is None else str(value)
        return (known.index(text) if text in known else len(known), text)


def load_catalog(path: Path | None = None) -> Catalog:
    path = path or resource_dir("leaderboard") / "schema.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    missing = [s for s in _SECTIONS if not isinstance(data.get(s), dict)]
    if missing:
        raise DataError(f"sections {missing} are missing", file=str(path))
    metrics = _infos(data["metrics"], path)
    gaps = _infos(data["gaps"], path)
    absent = [m for m in METRICS if m not in metrics] + [
        g for g in (*FAIRNESS_GAPS, *QUALITY_GAPS) if g not in gaps]
    if absent:
        raise DataError(f"no display entry for {sorted(set(absent))}", file=str(path))
    names = {s: {str(k): str(v) for k, v in data[s].items()} for s in _SECTIONS[2:]}
    return Catalog(metrics=metrics, gaps=gaps, names=names)


def _infos(section: dict[str, Any], path: Path) -> dict[str, MetricInfo]:
    infos = {}
    for name, entry in section.items():
        if not isinstance(entry, dict) or "label" not in entry:
            raise DataError(f"entry {name!r} needs a label", file=str(path))
        infos[name] = MetricInfo(name=name, label=str(entry["label"]), description=str(entry.get("description", "")),
                                 lower_is_better=name in LOWER_IS_BETTER)
    return infos

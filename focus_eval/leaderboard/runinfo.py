"""Provenance of each results line: the run manifest it came from (``run-*.json`` beside ``results.jsonl``:
focus-eval version, git commit, the preset as used) and where its weights came from (``extra.provenance``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from focus_eval.leaderboard.entries import Entry
from focus_eval.results.layout import MANIFEST_GLOB


@dataclass(frozen=True)
class RunInfo:
    """What one run manifest says about the run that wrote some results lines."""

    path: Path
    started: str | None
    finished: str | None
    version: str | None
    commit: str | None
    preset_hash: str | None
    preset: dict[str, Any] = field(default_factory=dict)
    units: frozenset[str] = frozenset()

    @property
    def short_commit(self) -> str | None:
        return self.commit[:10] if self.commit else None


@dataclass
class RunIndex:
    """The manifests of every results folder of a build, and the manifests that could not be read."""

    runs: dict[Path, list[RunInfo]] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)

    def run_of(self, entry: Entry) -> RunInfo | None:
        """The run that computed ``entry``: one that finished its unit, of the same preset, whose time span holds
        the line's creation time; else the newest such run; else None."""
        unit = f"{entry.line.task}.{entry.line.method}"
        runs = [r for r in self.runs.get(entry.source.parent, [])
                if unit in r.units and r.preset_hash in (None, entry.line.preset_hash)]
        created = entry.line.created or ""
        within = [r for r in runs if (r.started or "") <= created <= (r.finished or "~")]
        chosen = within or runs
        return chosen[-1] if chosen else None

    def presets(self, model: str) -> list[RunInfo]:
        """Runs of ``model`` that recorded its preset, newest last."""
        found = [r for runs in self.runs.values() for r in runs if r.preset.get("name") == model]
        return sorted(found, key=lambda r: r.started or "")


def read_runs(results_files: Iterable[Path]) -> RunIndex:
    """Every ``run-*.json`` beside each results file; one that is not valid JSON is listed, not fatal (a
    manifest describes a run, the results lines are the record)."""
    index = RunIndex()
    for results in results_files:
        folder = results.parent
        runs = []
        for path in sorted(folder.glob(MANIFEST_GLOB)):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                index.unreadable.append(f"{path}: {exc}")
                continue
            if isinstance(data, dict):
                runs.append(_run(path, data))
        index.runs[folder] = sorted(runs, key=lambda r: r.started or "")
    return index


def _run(path: Path, data: dict[str, Any]) -> RunInfo:
    units = data.get("units") if isinstance(data.get("units"), dict) else {}
    done = [u for key in ("finished", "skipped_as_done") for u in (units.get(key) or []) if isinstance(u, str)]
    versions = data.get("versions") if isinstance(data.get("versions"), dict) else {}
    preset = data.get("preset") if isinstance(data.get("preset"), dict) else {}
    return RunInfo(path=path, started=_text(data.get("started")), finished=_text(data.get("finished")),
                   version=_text(versions.get("focus-eval")), commit=_text(data.get("git_commit")),
                   preset_hash=_text(data.get("preset_hash")), preset=preset, units=frozenset(done))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class LineProvenance:
    """Where one results line came from, as its model page lists it."""

    created: str | None
    version: str | None
    commit: str | None
    weights: str
    revision: str | None
    adapter: str | None
    manifest: str | None


def weights_text(record: dict[str, Any], revision: bool = True) -> str:
    """Where the weights came from: hub id (and revision), local files and their digest, a tiny or packaged
    model, or none."""
    if record.get("hub_id"):
        text = f"hub {record['hub_id']}"
        return f"{text} @ {record.get('revision') or 'unpinned'}" if revision else text
    if record.get("local"):
        return f"local files {record.get('weights') or ''} (digest {str(record.get('digest') or '?')[:12]})"
    if record.get("kind"):
        return f"{record['kind']}:{record.get('name')}"
    return "no weights (the adapter's code alone)" if record.get("no_weights") else "source not recorded"


def line_provenance(entry: Entry, run: RunInfo | None) -> LineProvenance:
    record = entry.line.extra.get("provenance")
    record = record if isinstance(record, dict) else {}
    adapter = entry.line.adapter
    if adapter and entry.line.extra.get("adapter_digest"):
        adapter = f"{adapter} ({str(entry.line.extra['adapter_digest'])[:12]})"
    return LineProvenance(created=entry.line.created or None, version=run.version if run else None,
                          commit=run.short_commit if run else None, weights=weights_text(record, revision=False),
                          revision=record.get("revision") if record.get("hub_id") else None, adapter=adapter,
                          manifest=run.path.name if run else None)

"""Model cards: what a model is (from its preset) and what it was evaluated on (from its results).

The preset comes from the run manifest beside the results (the preset exactly as the run used it); failing
that, from the shipped preset file of the same name, with a note when that file is not the one the results used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from focus_eval.analysis.summary import included
from focus_eval.errors import FocusError
from focus_eval.leaderboard.conventions import method_choices
from focus_eval.leaderboard.pages.groups import ModelInfo, rank_key
from focus_eval.presets import load_preset
from focus_eval.resources import resource_dir
from focus_eval.results.collect import Entry
from focus_eval.results.collect import RunIndex

_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_PRESET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
HUB_URL = "https://huggingface.co/"
SHOWN_TASKS = 3


@dataclass(frozen=True)
class ModelCard:
    """The facts a model page shows above its results."""

    preset: dict[str, Any]
    preset_from: str
    preset_note: str | None
    source: str | None
    source_url: str | None
    revision: str | None
    datasets: list[tuple[str, int]]
    best: list[Entry]
    worst: list[Entry]
    # values its methods chose themselves (zero-shot's logit scale): (what, method, value), shown as facts
    chosen: tuple[tuple[str, str, str], ...] = ()

    def get(self, key: str) -> Any:
        value = self.preset.get(key)
        return value if value not in (None, "", []) else None

    @property
    def parameters(self) -> str | None:
        """The parameter count when the preset records one (``parameters``, or under ``settings``)."""
        value = self.preset.get("parameters") or (self.preset.get("settings") or {}).get("parameters")
        return str(value) if value else None


def model_card(model: ModelInfo, runs: RunIndex, ranked: Sequence[Entry], include_proxy: bool = False) -> ModelCard:
    """``ranked`` are the lines that enter rankings; best and worst tasks come from its included ones."""
    preset, preset_from, note = _preset(model, runs)
    record = next((e.line.extra["provenance"] for e in model.entries
                   if isinstance(e.line.extra.get("provenance"), dict)), {})
    source = record.get("hub_id") or preset.get("source")
    revision = record.get("revision") or preset.get("revision")
    url = None
    if isinstance(source, str) and _HUB_ID.match(source):
        url = HUB_URL + source
        if isinstance(revision, str) and _REVISION.match(revision) and revision != "main":
            url += f"/tree/{revision}"
    scored = sorted((e for e in included(ranked, include_proxy) if e.model == model.name
                     and e.metric("auroc") is not None), key=rank_key)
    best = scored[:SHOWN_TASKS]
    worst = list(reversed(scored[SHOWN_TASKS:]))[:SHOWN_TASKS]
    datasets: dict[str, set[str]] = {}
    for e in model.entries:
        datasets.setdefault(e.line.dataset or "\u2014", set()).add(e.line.task)
    return ModelCard(preset=preset, preset_from=preset_from, preset_note=note, source=source, source_url=url,
                     revision=revision, datasets=sorted((d, len(t)) for d, t in datasets.items()), best=best,
                     worst=worst, chosen=_chosen(model.entries))


def _chosen(entries: Sequence[Entry]) -> tuple[tuple[str, str, str], ...]:
    """Each distinct (what, method, value) its methods recorded as their own choice."""
    found = {(what, e.line.method, f"{value:g}" if isinstance(value, float) else str(value))
             for e in entries for what, value in method_choices(e.line.extra)}
    return tuple(sorted(found))


def _preset(model: ModelInfo, runs: RunIndex) -> tuple[dict[str, Any], str, str | None]:
    """The preset as a dict, where it was found, and a note when it may not be what the results used."""
    recorded = [r for r in runs.presets(model.name) if r.preset_hash in model.preset_hashes or not model.preset_hashes]
    if recorded:
        return recorded[-1].preset, f"run manifest {recorded[-1].path.name}", None
    path = resource_dir("models") / f"{model.name}.yaml"
    if not _PRESET_NAME.match(model.name) or not path.is_file():
        return {}, "", None
    try:
        preset = load_preset(str(path))
    except FocusError as exc:
        return {}, "", f"the shipped preset file could not be read: {exc}"
    note = None
    if model.preset_hashes and preset.hash not in model.preset_hashes:
        note = (f"from the shipped preset file, whose hash ({preset.hash}) differs from the one these results "
                f"used ({', '.join(model.preset_hashes)}): details may have changed since")
    return preset.to_dict(), "shipped preset file", note

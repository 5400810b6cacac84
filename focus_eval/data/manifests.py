"""User datasets made addressable by name: the dataset cards a run, ``focus-eval datasets`` or ``focus-eval tasks``
is pointed at are registered as ``manifest`` datasets (reader, folder), and the task index asks for them to
generate their ``<target>_<name>`` tasks.

Cards are found four ways: ``--dataset-path NAME=DIR`` (DIR holds ``dataset.yaml``, or is the card file),
``--dataset-path DIR`` (a folder of cards, one ``*.yaml`` per dataset), ``$FOCUS_DATASETS_PATH`` (values as for
``--dataset-path``, separated like PATH), and ``DATA_ROOT/<name>/dataset.yaml``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from focus_eval.data import registry
from focus_eval.data.cards import CARD_FILE, DatasetCard, read_card
from focus_eval.data.readers.manifest import manifest_reader
from focus_eval.errors import FocusError

DATASETS_PATH_ENV = "FOCUS_DATASETS_PATH"

_CARDS: dict[str, DatasetCard] = {}


def register_card(card: DatasetCard) -> DatasetCard:
    """Make a card's dataset addressable by name (reader, folder, generated tasks); registering the same name
    again replaces an earlier card, never a built-in dataset or one from a package."""
    if card.name in registry.dataset_names() and card.name not in _CARDS:
        raise FocusError(f"{card.path}: dataset name {card.name!r} is taken by a registered dataset; name yours "
                         f"differently")
    registry.register_dataset(card.name, manifest_reader(card), replace=True, folder=card.folder)
    _CARDS[card.name] = card
    return card


def manifest_cards() -> list[DatasetCard]:
    """Every registered manifest dataset, in registration order."""
    return list(_CARDS.values())


def card_paths(value: str) -> list[tuple[str | None, Path]]:
    """(name or None, card file) pairs of one ``--dataset-path`` value: ``NAME=DIR``, ``NAME=CARD.yaml`` or a
    folder of cards."""
    name, _, where = value.rpartition("=") if "=" in value else (None, "", value)
    path = Path(where).expanduser()
    if name is not None:
        card = path / CARD_FILE if path.is_dir() else path
        if not os.path.lexists(card):
            raise FocusError(f"--dataset-path {value}: no dataset card {card} (a {CARD_FILE} beside the manifest)")
        return [(name.strip(), card)]
    if not path.is_dir():
        raise FocusError(f"--dataset-path {value}: not a folder of dataset cards (or give NAME=DIR)")
    cards = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
    if not cards:
        raise FocusError(f"--dataset-path {value}: the folder holds no dataset card (*.yaml)")
    return [(None, card) for card in cards]


def register_manifests(data_root: str | os.PathLike | None = None,
                       dataset_paths: Iterable[str] = ()) -> list[DatasetCard]:
    """Register the cards of ``--dataset-path`` values (then ``$FOCUS_DATASETS_PATH``) and those in
    ``DATA_ROOT/<name>/dataset.yaml``."""
    found: list[tuple[str | None, Path]] = []
    env = [v for v in os.environ.get(DATASETS_PATH_ENV, "").split(os.pathsep) if v.strip()]
    for value in [*dataset_paths, *env]:
        found += card_paths(str(value))
    if data_root is not None and Path(data_root).is_dir():
        found += [(None, sub / CARD_FILE) for sub in sorted(Path(data_root).iterdir())
                  if sub.name not in registry.BUILTIN and (sub / CARD_FILE).is_file()]
    cards: dict[str, DatasetCard] = {}
    for name, path in found:
        card = read_card(path, name)
        if card.name in cards and cards[card.name].path != card.path:
            raise FocusError(f"dataset {card.name!r} has two cards: {cards[card.name].path} and {card.path}")
        cards[card.name] = card
    return [register_card(card) for card in cards.values()]

"""Where each dataset of the benchmark was collected and with which imaging devices, as the datasets' own
papers and release notes state it (docs/DATASETS.md gives the sources). ``None`` where the documentation this
project relies on does not state it: the table never guesses. The FOCUS per-dataset domain table
(``analysis.focus_figures``) shows these beside each dataset's difference of means."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Origin:
    country: str | None
    device: str | None


ORIGINS: dict[str, Origin] = {
    "brset": Origin("Brazil", "Canon CR; Nikon NF5050"),
    "mbrset": Origin("Brazil", "Phelcom Eyer (smartphone-based)"),
    "papila": Origin("Spain", "Topcon TRC-NW400"),
    "rfmid": Origin("India", "three fundus cameras (not named)"),
    "rfmid2": Origin("India", None),
    "idrid": Origin("India", "Kowa VX-10\u03b1"),
    "messidor2": Origin("France", "Topcon TRC NW6"),
    "refuge": Origin(None, "Zeiss Visucam 500 (train); Canon CR-2 (validation, test)"),
    "g1020": Origin("Germany", None),
    "jsiec": Origin("China", None),
    "top": Origin("Japan", "Optos ultra-wide-field (model not stated)"),
}


def origin(dataset: str | None) -> Origin:
    """The dataset's origin, or an empty one for a dataset the table does not list (a synthetic or a
    user-registered one)."""
    return ORIGINS.get(dataset or "", Origin(None, None))

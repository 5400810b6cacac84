"""Checks of command-line values at parse time, as argparse ``type=`` callables: a value out of range is a usage
error (exit 2) that says what is expected, before anything is loaded."""

from __future__ import annotations

import argparse
import re

# More resamples than this add nothing to a 95% interval (the bound is about usefulness: the resamples are made in
# chunks within a memory budget, metrics.resamples, whatever n_boot and the number of images).
MAX_N_BOOT = 100_000


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def n_boot(text: str) -> int:
    """--n-boot: 1 to MAX_N_BOOT bootstrap resamples."""
    value = _integer(text)
    if not 1 <= value <= MAX_N_BOOT:
        raise argparse.ArgumentTypeError(f"expected 1 to {MAX_N_BOOT} resamples, got {text!r} (more add nothing "
                                         "to a 95% interval)")
    return value


def seed(text: str) -> int:
    """--seed: a whole number from 0 to 2**32 - 1 (what every random generator here accepts)."""
    value = _integer(text)
    if not 0 <= value < 2 ** 32:
        raise argparse.ArgumentTypeError(f"expected a seed from 0 to {2 ** 32 - 1}, got {text!r}")
    return value


def non_negative(text: str) -> int:
    """A count that may be 0 (--num-workers 0: decode images in the main process)."""
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {text!r}")
    return value


def positive(text: str) -> int:
    """A count of at least 1."""
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {text!r}")
    return value


def fractions(text) -> str:
    """--train-fraction 0.01,0.1,0.5,1: comma-separated fractions, each in (0, 1]; kept as written."""
    items = text.split(",") if isinstance(text, str) else list(text)
    for item in items:
        try:
            value = float(item)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"expected fractions in (0, 1] separated by commas, got {item!r}") \
                from None
        if not 0 < value <= 1:  # NaN fails this too
            raise argparse.ArgumentTypeError(f"a training fraction must be in (0, 1], got {item!r}")
    return ",".join(str(i).strip() for i in items)


DEVICES = ("auto", "cpu", "cuda", "cuda:N", "mps")
# what people type for a device that torch spells otherwise
_DEVICE_SYNONYMS = {"gpu": "cuda", "nvidia": "cuda", "metal": "mps", "apple": "mps"}


def device(text: str) -> str | None:
    """--device: ``auto`` (None: a GPU when torch sees one, else the CPU), ``cpu``, ``cuda``, ``cuda:N`` or ``mps``.
    Anything else is refused with the spelling meant (``gpu`` -> ``cuda``, ``gpu:1`` -> ``cuda:1``)."""
    value = str(text).strip()
    if value == "auto":
        return None
    if value in ("cpu", "cuda", "mps") or re.fullmatch(r"cuda:\d+", value):
        return value
    raise argparse.ArgumentTypeError(f"expected one of {', '.join(DEVICES)}, got {text!r}{_device_hint(value)}")


def _device_hint(value: str) -> str:
    import difflib

    lowered = re.sub(r"\s", "", value.lower())
    numbered = re.fullmatch(r"(gpu|cuda|nvidia)[:_-]?(\d+)", lowered)
    if numbered:
        meant = f"cuda:{int(numbered[2])}"
    elif lowered.partition(":")[0] in _DEVICE_SYNONYMS:
        meant = _DEVICE_SYNONYMS[lowered.partition(":")[0]]
    else:
        close = difflib.get_close_matches(lowered.partition(":")[0], ("auto", "cpu", "cuda", "mps"), n=1, cutoff=0.5)
        meant = close[0] if close else ""
    return f"; did you mean --device {meant}?" if meant else ""

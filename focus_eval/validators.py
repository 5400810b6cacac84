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


def _within(text: str, low: int, high: int | None, expected: str) -> int:
    """A whole number from ``low`` to ``high`` (no upper bound when None); ``expected`` says what, in the error."""
    value = _integer(text)
    if value < low or (high is not None and value > high):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def n_boot(text: str) -> int:
    """--n-boot: 1 to MAX_N_BOOT bootstrap resamples."""
    value = _integer(text)
    if not 1 <= value <= MAX_N_BOOT:
        raise argparse.ArgumentTypeError(f"expected 1 to {MAX_N_BOOT} resamples, got {text!r} (more add nothing "
                                         "to a 95% interval)")
    return value


def seed(text: str) -> int:
    """--seed: a whole number from 0 to 2**32 - 1 (what every random generator here accepts)."""
    return _within(text, 0, 2 ** 32 - 1, f"a seed from 0 to {2 ** 32 - 1}")


def non_negative(text: str) -> int:
    """A count that may be 0 (--num-workers 0: decode images in the main process)."""
    return _within(text, 0, None, "0 or more")


def positive(text: str) -> int:
    """A count of at least 1."""
    return _within(text, 1, None, "1 or more")


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


def names(text: str) -> str:
    """Comma-separated names (--methods, --prompt-variants, --label-rules): at least one, none empty; kept as
    written, each name stripped."""
    items = [item.strip() for item in str(text).split(",")]
    if not any(items):
        raise argparse.ArgumentTypeError(f"expected one or more names separated by commas, got {text!r}")
    if not all(items):
        raise argparse.ArgumentTypeError(f"expected names separated by commas, got an empty name in {text!r}")
    return ",".join(items)


# The image corruptions (--corruptions KIND[:SEVERITY],...); data/corruptions.py gives each its parameters.
CORRUPTION_KINDS = ("blur", "jpeg", "illumination", "exposure", "rotation")
SEVERITIES = (1, 2, 3)


def corruption_items(text: str) -> list[tuple[str, int | None]]:
    """``blur:3,jpeg`` -> [("blur", 3), ("jpeg", None)]: each item a known kind, alone or with a severity 1-3
    after one ':' (an item left empty, or a ':' with nothing after it, is an error, not "every severity")."""
    out = []
    for item in (i.strip() for i in names(text).split(",")):
        kind, colon, severity = item.partition(":")
        if kind not in CORRUPTION_KINDS:
            raise argparse.ArgumentTypeError(f"unknown kind {kind!r} in {text!r}; expected one of "
                                             f"{', '.join(CORRUPTION_KINDS)}")
        if colon and severity not in {str(s) for s in SEVERITIES}:
            raise argparse.ArgumentTypeError(f"expected a severity of 1, 2 or 3 after '{kind}:', got {severity!r} "
                                             f"(leave out ':' for all three)")
        out.append((kind, int(severity) if colon else None))
    return out


def corruptions(text: str) -> str:
    """--corruptions: ``corruption_items``'s syntax, checked; kept as written, each item stripped."""
    corruption_items(text)
    return ",".join(i.strip() for i in str(text).split(","))


# More draws of the training patients than this add nothing to the spread a label-efficiency curve shows, and each
# is a probe fit per fraction and task.
MAX_TRAIN_SEEDS = 100


def train_seeds(text: str) -> int:
    """--train-seeds: 1 to MAX_TRAIN_SEEDS draws of the training patients."""
    return _within(text, 1, MAX_TRAIN_SEEDS, f"1 to {MAX_TRAIN_SEEDS} draws")


# More image decoding processes than this exhaust memory and open files long before they add speed.
MAX_WORKERS = 256


def workers(text: str) -> int:
    """--num-workers: 0 (decode in the main process) to MAX_WORKERS worker processes."""
    return _within(text, 0, MAX_WORKERS, f"0 to {MAX_WORKERS} worker processes")


def positive_number(text: str) -> float:
    """A finite number above 0 (--zs-scale)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < float("inf"):  # NaN fails this too
        raise argparse.ArgumentTypeError(f"expected a finite number above 0, got {text!r}")
    return value


def processes(text: str) -> int:
    """--workers of datasets prepare: 1 to MAX_WORKERS worker processes."""
    return _within(text, 1, MAX_WORKERS, f"1 to {MAX_WORKERS} worker processes")


# The largest side of a prepared image: above every decode size a preset uses (896) with room to spare, and far
# below what would exhaust memory (a square of this side is 200 MB as RGB).
MAX_IMAGE_SIDE = 8192


def image_side(text: str) -> int:
    """--size of datasets prepare: a side of 1 to MAX_IMAGE_SIDE pixels."""
    return _within(text, 1, MAX_IMAGE_SIDE, f"a side of 1 to {MAX_IMAGE_SIDE} pixels")


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

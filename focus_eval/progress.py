"""Progress of long stages, seen the same way by every command: on a terminal a bar per stage (tqdm: count,
images/s, time left); elsewhere (CI logs, Slurm logs, a pipe) one flushed line per stage when it ends, such as

    [focus-eval] 12:00:01 embed synth_desktop 300 images 45.1 img/s (6.7 s)

and, for a stage that runs longer than ``FOCUS_LOG_EVERY`` seconds (default 300), a line each such interval
with how far it is and the time left. Lowest layer: the standard library, and tqdm only on a terminal."""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable, TextIO

PREFIX = "[focus-eval]"
LOG_EVERY_ENV = "FOCUS_LOG_EVERY"


def on_terminal(stream: TextIO | None = None) -> bool:
    stream = stream or sys.stderr
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def log(message: str, stream: TextIO | None = None) -> None:
    """One timestamped line (``[focus-eval] HH:MM:SS message``), flushed at once."""
    stream = stream or sys.stderr
    print(f"{PREFIX} {time.strftime('%H:%M:%S')} {message}", file=stream, flush=True)


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes} min {secs:02d} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


class StageLine:
    """A progress bar's stand-in off a terminal: it counts, and prints one line when the stage ends (and one
    each ``every`` seconds of a long stage). Has the calls the stages make on a tqdm bar."""

    def __init__(self, total: int | None = None, desc: str = "", unit: str = "img", initial: int = 0,
                 stream: TextIO | None = None, every: float | None = None, **_: Any):
        self.total, self.desc, self.unit, self.n = total, desc, unit, initial
        self.start = self.last = time.monotonic()
        self.initial, self.stream, self.postfix, self.closed = initial, stream, "", False
        self.every = float(os.environ.get(LOG_EVERY_ENV, 300)) if every is None else every

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self.last >= self.every and (self.total is None or self.n < self.total):
            self.last = now
            rate = self.rate(now)
            left = f", {_duration((self.total - self.n) / rate)} left" if self.total and rate else ""
            log(f"{self.desc} {self.n}/{self.total or '?'} {self.noun()} {rate:.1f} {self.unit}/s{left}",
                self.stream)

    def set_postfix(self, **values: Any) -> None:
        self.postfix = " " + " ".join(f"{k} {v}" for k, v in values.items()) if values else ""

    def set_description(self, desc: str) -> None:
        self.desc = desc

    def rate(self, now: float | None = None) -> float:
        elapsed = (now or time.monotonic()) - self.start
        return (self.n - self.initial) / elapsed if elapsed > 0 else 0.0

    def noun(self) -> str:
        return "images" if self.unit == "img" else f"{self.unit}s" if self.unit in ("step", "job") else self.unit

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        elapsed = time.monotonic() - self.start
        log(f"{self.desc} {self.n} {self.noun()} {self.rate():.1f} {self.unit}/s ({_duration(elapsed)})"
            f"{self.postfix}", self.stream)

    def __enter__(self) -> "StageLine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Silent:
    """A bar that shows nothing (progress turned off), with the same calls."""

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix(self, **values: Any) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> "Silent":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


def bar(total: int | None, desc: str, unit: str = "img", initial: int = 0, stream: TextIO | None = None,
        enabled: bool = True) -> Any:
    """A bar for one stage: tqdm on a terminal, a ``StageLine`` elsewhere, ``Silent`` when not ``enabled``."""
    if not enabled:
        return Silent()
    stream = stream or sys.stderr
    if on_terminal(stream):
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, unit=unit, initial=initial, file=stream, leave=False,
                    dynamic_ncols=True)
    return StageLine(total=total, desc=desc, unit=unit, initial=initial, stream=stream)


def factory(enabled: bool = True, stream: TextIO | None = None) -> Callable[..., Any] | None:
    """What the stages call to make their bar (``progress(total=, desc=)``), or None when progress is off."""
    if not enabled:
        return None
    return lambda total=None, desc="", unit="img", initial=0, **_: bar(total, desc, unit, initial, stream)


class Stage:
    """A stage without a count (loading a model, reading a dataset's labels): one line when it ends, with its
    time; on a terminal too, where no bar stands for it."""

    def __init__(self, desc: str, enabled: bool = True, stream: TextIO | None = None):
        self.desc, self.enabled, self.stream, self.detail = desc, enabled, stream, ""

    def __enter__(self) -> "Stage":
        self.start = time.monotonic()
        return self

    def __exit__(self, kind, *exc: Any) -> None:
        if self.enabled and kind is None:
            log(f"{self.desc}{self.detail} ({_duration(time.monotonic() - self.start)})", self.stream)

"""Bounds for tests that could block or leave a process behind: a SIGALRM deadline around a block (nested inside
the per-test timeout, which uses the same timer), the stop of a process the test started, and a block that stops
every process it started however it ends."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from typing import Iterator


@contextlib.contextmanager
def deadline(seconds: float = 20, what: str = "the block") -> Iterator[None]:
    """Fail (instead of hanging the suite) when ``what`` blocks longer than ``seconds``.

    The per-test timeout (pytest-timeout, signal method) arms the same real-time timer: an outer timer that would
    expire first keeps its own handler, and whatever is left of it is armed again when the block ends."""
    outer_left = signal.getitimer(signal.ITIMER_REAL)[0]
    started = time.monotonic()
    outer_first = 0 < outer_left < seconds

    def expire(signum, frame):
        if outer_first and callable(old):
            return old(signum, frame)
        raise TimeoutError(f"{what} blocked for more than {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, outer_left if outer_first else seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if outer_left > 0:
            signal.setitimer(signal.ITIMER_REAL, max(outer_left - (time.monotonic() - started), 0.001))


def stop(proc: subprocess.Popen, timeout: float = 30) -> None:
    """Terminate ``proc`` and wait for it; kill it when it does not end within ``timeout`` seconds."""
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def reaped(timeout: float = 30) -> Iterator[list[subprocess.Popen]]:
    """A list to put started processes in; each one still running when the block ends (an assertion failed, the
    test timed out) is stopped with ``stop``."""
    procs: list[subprocess.Popen] = []
    try:
        yield procs
    finally:
        for proc in procs:
            stop(proc, timeout)

"""Bounds for tests that could block or leave a process behind: a SIGALRM deadline around a block, and the
stop of a server process the test started."""

from __future__ import annotations

import contextlib
import signal
import subprocess
from typing import Iterator


@contextlib.contextmanager
def deadline(seconds: int = 20, what: str = "the block") -> Iterator[None]:
    """Fail (instead of hanging the suite) when ``what`` blocks longer than ``seconds``."""
    def expire(signum, frame):
        raise TimeoutError(f"{what} blocked for more than {seconds} s")
    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def stop(proc: subprocess.Popen, timeout: float = 30) -> None:
    """Terminate ``proc`` and wait for it; kill it when it does not end within ``timeout`` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()

"""Where a loop's time goes: decode, preprocess, host-to-device, model, post-process, so that the slowest stage
of a run (or of the benchmark) can be named."""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator

STAGES = ("start_up", "decode", "preprocess", "host_to_device", "model", "post_process")
WORKER_STAGES = ("decode", "preprocess")


class StageClock:
    """Main-thread seconds per stage, plus the decode and preprocess seconds loader workers report.

    ``sync`` (for example ``torch.cuda.synchronize``) runs at every stage boundary, so that queued device work
    is charged to the stage that queued it; it costs some overlap, so only the benchmark passes it.
    """

    def __init__(self, sync: Callable[[], None] | None = None):
        self.sync = sync
        self.main: dict[str, float] = defaultdict(float)
        self.worker: dict[str, float] = defaultdict(float)
        self.images = 0

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        if self.sync:
            self.sync()
        start = time.perf_counter()
        try:
            yield
        finally:
            if self.sync:
                self.sync()
            self.main[name] += time.perf_counter() - start

    def loader(self, batches: Iterable) -> Iterator:
        """Iterate a loader, charging the start and stop of its worker processes to ``start_up`` (once per
        loader: a run pays it once per dataset) and the wait for each batch to ``load`` (decode and preprocess
        not hidden behind the other stages: all of them without workers, what the workers did not finish in
        time with)."""
        start = time.perf_counter()
        iterator = iter(batches)  # starts the loader's workers
        self.main["start_up"] += time.perf_counter() - start
        while True:
            start = time.perf_counter()
            try:
                batch = next(iterator)
            except StopIteration:
                self.main["start_up"] += time.perf_counter() - start  # the workers are stopped and joined
                return
            self.main["load"] += time.perf_counter() - start
            yield batch

    def add_worker(self, seconds: dict[str, float], images: int) -> None:
        """Seconds a batch's decode and preprocess took where they ran (a worker, or this thread)."""
        for name, value in seconds.items():
            self.worker[name] += value
        self.images += images

    def report(self, wall: float) -> dict[str, Any]:
        """Seconds per stage adding up to ``wall`` (the rest is ``unaccounted``), the largest named as the
        bottleneck, and the CPU seconds the loader spent per stage wherever it ran.

        The wait for the loader is split between decode and preprocess in proportion to the loader's own time
        for each: with workers that keep up the wait is near zero, and the model or the copy is the bottleneck.
        """
        spent = sum(self.worker[name] for name in WORKER_STAGES)
        load = self.main.get("load", 0.0)
        stages = {name: self.main.get(name, 0.0) for name in STAGES}
        for name in WORKER_STAGES:
            stages[name] += load * (self.worker[name] / spent if spent else 1.0 / len(WORKER_STAGES))
        unaccounted = wall - sum(stages.values())
        return {"wall_s": round(wall, 4), "stages_s": {k: round(v, 4) for k, v in stages.items()},
                "unaccounted_s": round(unaccounted, 4), "bottleneck": max(stages, key=stages.get),
                "loader_cpu_s": {name: round(self.worker[name], 4) for name in WORKER_STAGES},
                "images": self.images}

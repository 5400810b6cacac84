"""What every benchmark workload shares: the device environment, a GPU-aware clock, image counts (``Sizes``),
measurements and the per-workload result layout."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable


@dataclass
class Measurement:
    """Images through one loop and the wall time they took, with the loop's settings and, for loops timed
    stage by stage, where the time went (``StageClock.report``)."""

    images: int
    seconds: float
    settings: dict[str, Any] = field(default_factory=dict)
    stages: dict[str, Any] | None = None

    @property
    def img_s(self) -> float:
        return self.images / self.seconds if self.seconds > 0 else float("inf")

    def to_dict(self) -> dict[str, Any]:
        out = {"img_s": round(self.img_s, 3), **asdict(self)}
        if self.stages is None:
            out.pop("stages")
        return out


class Clock:
    """Wall time that waits for queued GPU work before reading the clock; each loop runs ``repeat`` times and
    the run of median time counts (a busy machine slows single runs at random)."""

    def __init__(self, device, repeat: int = 1):
        self.device = device
        self.repeat = max(1, int(repeat))

    def sync(self) -> None:
        import torch

        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def measure(self, images: int, work: Callable[[], Any], **settings: Any) -> Measurement:
        return self.measure_stages(images, lambda stages: work(), **settings)

    def measure_stages(self, images: int, work: Callable[[Any], Any], **settings: Any) -> Measurement:
        """``work(stages)`` gets a fresh ``StageClock`` each run; the measurement keeps the median run, with the
        report of where its time went (for loops that charge their time to stages)."""
        from focus_eval.runner.stages import StageClock

        runs = []
        for _ in range(self.repeat):
            stages = StageClock()
            self.sync()
            start = time.perf_counter()
            work(stages)
            self.sync()
            runs.append((time.perf_counter() - start, stages))
        seconds, stages = sorted(runs, key=lambda run: run[0])[len(runs) // 2]
        report = stages.report(seconds) if stages.main else None
        return Measurement(images, seconds, {**settings, "runs": self.repeat} if self.repeat > 1 else settings,
                           report)


@dataclass(frozen=True)
class Sizes:
    """Image counts and batch sizes of one workload in one mode (GPU-sized or tiny)."""

    reference: int  # images through the reference-style loop
    ours: int  # images through focus-eval's path
    batch: int  # focus-eval's batch (prefill rows for the multimodal models)
    reference_batch: int = 1
    files: int = 8  # distinct input files the image list cycles through
    reference_long: int = 0  # images for the reference loop with 16 new tokens
    three_tasks: int = 0  # images scored with three prompts each


@dataclass
class Env:
    """Where the workloads run: torch device, its printable name, focus-eval's dtype and loader workers."""

    device: Any
    label: str
    clock: Clock
    dtype: Any
    workers: int
    tiny: bool

    @property
    def dtype_name(self) -> str:
        return str(self.dtype).replace("torch.", "")


def environment(device_name: str | None, tiny: bool, workers: int | None, repeat: int = 1) -> Env:
    import torch

    device = torch.device(device_name or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False  # the reference ran true fp32
        label = torch.cuda.get_device_name(device)
    else:
        label = f"cpu ({torch.get_num_threads()} thread{'s' if torch.get_num_threads() > 1 else ''})"
    from focus_eval.runner.images import default_workers

    return Env(device=device, label=label, clock=Clock(device, repeat),
               dtype=torch.bfloat16 if device.type == "cuda" else torch.float32,
               workers=default_workers() if workers is None else workers, tiny=tiny)


def count_params(model) -> int:
    return int(sum(p.numel() for p in model.parameters()))


def compare(reference: Measurement, ours: Measurement) -> dict[str, Any]:
    """The head of every workload's result: both rates, their ratio and both measurements in full."""
    return {"reference_img_s": round(reference.img_s, 3), "ours_img_s": round(ours.img_s, 3),
            "ratio": round(ours.img_s / reference.img_s, 3), "reference": reference.to_dict(),
            "ours": ours.to_dict()}


def stage_line(stages: dict[str, Any], what: str) -> list[str]:
    """A row of the printed table under a workload: each stage's share of the wall time, and the bottleneck."""
    wall = stages["wall_s"] or 1.0
    shares = " ".join(f"{name} {100 * seconds / wall:.0f}%" for name, seconds in stages["stages_s"].items())
    rest = 100 * stages["unaccounted_s"] / wall
    return row(what=f"{what}: {shares}, other {rest:.0f}% (bottleneck: {stages['bottleneck']})")


def row(reference: float | str = "", ours: float | str = "", ratio: float | str = "", what: str = "",
        name: str = "") -> list[str]:
    """One row of the printed table (``focus_eval.tables``): numbers formatted, empty cells left empty."""
    ref = f"{reference:.2f}" if isinstance(reference, float) else str(reference)
    own = f"{ours:.2f}" if isinstance(ours, float) else str(ours)
    times = f"{ratio:.2f}x" if isinstance(ratio, float) else str(ratio)
    return [name, ref, own, times, what]

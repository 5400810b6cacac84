"""Per-job GPU memory and time estimates from a preset's size and the number of images, with throughput figures
taken from ``focus-eval bench --json`` (or stated defaults until such a file is given)."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from focus_eval.errors import FocusError
from focus_eval.registry import Registry


def _builtin_sizes() -> None:
    # Billions of parameters of the weights each preset loads (image and text towers together), from the
    # publishers' model cards; a preset missing here is sized by its family (FAMILY_SIZE_B).
    sizes = {
        "clip-vit-b32": 0.151, "eyeclip": 0.151, "siglip2-b16": 0.375, "medsiglip-448": 0.88, "flair": 0.135,
        "retclip": 0.19, "dinov2-l": 0.304, "dinov3-vitl16": 0.303, "vit-l16": 0.304, "visionfm-fundus": 0.086,
        "retfound-mae-cfp": 0.304, "retfound-mae-meh": 0.304, "retfound-mae-oct": 0.304,
        "retfound-mae-shanghai": 0.304, "retfound-dinov2-meh": 0.304, "retfound-dinov2-shanghai": 0.304,
        "efficientnet-lite0": 0.0047, "medgemma-4b": 4.30, "medgemma1.5-4b": 4.30, "medgemma-27b": 27.43,
        "gemma3-27b": 27.43, "qwen3-vl-8b": 8.77, "llava-next-8b": 8.36,
        "tiny-vit": 0.0001, "tiny-clip": 0.0001, "tiny-medgemma": 0.0005, "tiny-qwen-vl": 0.0005,
        "tiny-llava-next": 0.0005,
    }
    for name, billions in sizes.items():
        SIZES_B.register(name, billions)


SIZES_B = Registry("model size", builtin=_builtin_sizes)
FAMILY_SIZE_B = {"vm": 0.304, "vlm": 0.4, "mllm": 8.0}

# Images per dataset in its default cohort (labelled images, all splits) and in its test split, from the
# expected counts in docs/DATASETS.md; used when the plan is made without a --data-root to count from.
DOCUMENTED_IMAGES = {
    "brset": (2579, 516), "mbrset": (2437, 487), "papila": (488, 98), "rfmid": (3200, 640), "rfmid2": (854, 170),
    "idrid": (516, 103), "messidor2": (1744, 349), "refuge": (1200, 400), "g1020": (1020, 204),
    "jsiec": (764, 153),
}
UNKNOWN_IMAGES = (1000, 200)

# Throughput of focus-eval's own path per benchmark workload (images per second on one GPU), and the size of
# the model each workload runs. The defaults are planning figures for one 80 GB data-centre GPU, used until
# `focus-eval bench --json FILE` has measured the card the grid runs on (`grid plan --throughput FILE`).
BENCH_SIZE_B = {"vit224": 0.304, "medgemma4b": 4.30, "medgemma27b": 27.43}
DEFAULT_THROUGHPUT = {"vit224": 600.0, "medgemma4b": 40.0, "medgemma27b": 8.0}
# The same per CPU core (float32, torch's threads on every core): ViT-L/16 at 224 px measured on the 2-core
# development machine (0.2 to 0.3 images/s on both cores); the multimodal LLMs scaled from it by FLOP count
# (an image costs ViT-L/16 0.12 TFLOP, MedGemma-4B 7.7 and MedGemma-27B 24: tower and 338-token prefill). Smaller
# models are bound by decoding the images, about CPU_DECODE_PER_CORE per core.
CPU_PER_CORE = {"vit224": 0.15, "medgemma4b": 0.15 * 0.12 / 7.7, "medgemma27b": 0.15 * 0.12 / 24}
CPU_DECODE_PER_CORE = 20.0
# A run estimated to take longer than this on the CPU says so before it starts (focus_eval.api).
SLOW_MINUTES = 30.0

LOAD_S_PER_GB = 1.0       # weights read from a warm local cache, about 1 GB/s
SAFETY = 1.25             # estimates are planning figures: leave headroom
TRAIN_COST = 4.0          # forward, forward again under gradient checkpointing, backward (about two)
EXTRA_PROMPT_COST = 0.3   # each further task on the same image re-runs only the prompt text


@dataclass
class Throughput:
    """Images per second per workload, and where the figures came from."""

    figures: dict[str, float]
    source: str
    where: str = "one GPU"
    decode_cap: float | None = None  # the fastest any model goes (images decoded per second); None: vit224's rate

    @classmethod
    def default(cls) -> "Throughput":
        return cls(dict(DEFAULT_THROUGHPUT), "defaults (not measured)")

    @classmethod
    def cpu(cls, cores: int | None = None) -> "Throughput":
        """Planning figures for this machine's CPU: the per-core figures times its cores."""
        cores = max(1, cores or os.cpu_count() or 1)
        return cls({k: v * cores for k, v in CPU_PER_CORE.items()},
                   "planning figures per CPU core", where=f"the CPU ({cores} cores)",
                   decode_cap=CPU_DECODE_PER_CORE * cores)

    @classmethod
    def from_bench(cls, path: str | Path) -> "Throughput":
        """Read the figures of ``focus-eval bench --json FILE``; workloads it did not run keep the defaults."""
        path = Path(path)
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise FocusError(f"{path}: cannot read benchmark figures: {exc}") from None
        if not isinstance(report, dict) or not isinstance(report.get("workloads"), dict):
            raise FocusError(f"{path}: not a 'focus-eval bench --json' file (no 'workloads' object)")
        if report.get("tiny"):
            raise FocusError(f"{path}: figures of a --tiny benchmark are not throughput; run 'focus-eval bench "
                             "--json FILE' on the GPU the grid will use")
        figures = dict(DEFAULT_THROUGHPUT)
        for name in BENCH_SIZE_B:
            value = (report["workloads"].get(name) or {}).get("ours_img_s")
            if value is not None:
                if not isinstance(value, (int, float)) or value <= 0:
                    raise FocusError(f"{path}: workloads.{name}.ours_img_s must be a positive number")
                figures[name] = float(value)
        return cls(figures, f"{path} ({report.get('device', 'unknown device')}, {report.get('date', 'undated')})")

    def images_per_s(self, family: str, size_b: float, image_size: int) -> float:
        """One GPU's rate for a model of ``size_b`` billion parameters reading ``image_size``-px images."""
        if family == "mllm":
            small, large = self.figures["medgemma4b"], self.figures["medgemma27b"]
            # cost grows as a power of the size, fitted through the two measured sizes
            power = math.log(small / large) / math.log(BENCH_SIZE_B["medgemma27b"] / BENCH_SIZE_B["medgemma4b"])
            if self.decode_cap and size_b < BENCH_SIZE_B["medgemma4b"]:
                power = 1.0  # a CPU is busy throughout: a smaller model is faster by its parameter count
            rate = small * (BENCH_SIZE_B["medgemma4b"] / max(size_b, 1e-6 if self.decode_cap else 1e-3)) ** power
            return min(rate, self.decode_cap) if self.decode_cap else rate
        # encoders: compute grows with size and pixels; smaller ones stay bound by image decoding
        ratio = (BENCH_SIZE_B["vit224"] / max(size_b, 1e-6)) * (224.0 / max(image_size, 1)) ** 2
        return min(self.figures["vit224"] * ratio, self.decode_cap or self.figures["vit224"])


@dataclass
class Estimate:
    gpu_memory_gb: float
    minutes: float
    host_memory_gb: float


def model_size_b(preset) -> float:
    return float(SIZES_B.get(preset.name)) if preset.name in SIZES_B else FAMILY_SIZE_B[preset.family]


def _bytes_per_param(preset) -> int:
    return 4 if preset.dtype == "float32" else 2


def image_side(preset) -> int:
    """The side a preset's images are resized to (the larger of two), read as its image transform reads it: a
    side that is no whole number of pixels is the transform's one-line error, not a traceback of the estimate."""
    from focus_eval.adapters.preprocessing import pixels

    size = preset.preprocessing.get("size", 224)
    return max(pixels(side, "preprocessing", "size") for side in (size if isinstance(size, (list, tuple)) else [size]))


def estimate(preset, kind: str, images: int, tasks: int, throughput: Throughput) -> Estimate:
    """Estimate one job: ``kind`` is "eval" or "sft"; ``images`` are the images it reads (all splits for linear
    probes, the test split (and val with validation rows) for prompts, the train split for training)."""
    size = model_size_b(preset)
    weights_gb = size * _bytes_per_param(preset)
    rate = throughput.images_per_s(preset.family, size, image_side(preset))
    if kind == "sft":
        work_s = images * TRAIN_COST / rate
        memory = weights_gb * 1.15 + 10.0  # LoRA weights and optimiser state are small; activations are not
    elif preset.family == "mllm":
        work_s = images * (1 + EXTRA_PROMPT_COST * max(0, tasks - 1)) / rate
        memory = weights_gb * 1.1 + 8.0    # key/value cache of one batch of prompts
    else:
        work_s = images / rate
        memory = weights_gb * 1.1 + 4.0    # one batch of activations at the preset's resolution
    load_s = 60.0 + weights_gb * LOAD_S_PER_GB
    minutes = (load_s + work_s) * SAFETY / 60.0
    return Estimate(gpu_memory_gb=round(memory, 1), minutes=round(minutes, 1),
                    host_memory_gb=float(max(16, math.ceil(weights_gb * 1.5 + 8))))


@dataclass
class ImageCounts:
    """Images a dataset's tasks read, per split, and where the figures came from."""

    train: int
    val: int
    test: int
    source: str

    @property
    def total(self) -> int:
        return self.train + self.val + self.test


def images_read(counts: dict[str, int], methods: list[str], tasks: list[Any], options: Any) -> int:
    """Images an evaluation of ``tasks`` by ``methods`` reads, from ``counts`` (split -> images): the splits each
    method needs for a task (``Method.image_splits``: a probe's train, val and test; a prompt's test, and val
    where it writes validation rows)."""
    from focus_eval.runner.methods import get_method

    splits = {s for m in methods for t in tasks for s in get_method(m).image_splits(t, options)}
    return sum(counts.get(s, 0) for s in splits)


def image_counts(dataset: str, cohort: str | None, tasks: list[Any], data_root: Path | None) -> ImageCounts:
    """Images per split of a dataset's tasks: counted from the data when ``data_root`` holds the dataset, else
    the documented figures (validation taken as large as the test split)."""
    if data_root is not None and (Path(data_root) / dataset).is_dir():
        from focus_eval.data.registry import load_dataset

        load = load_dataset(dataset, data_root, cohort=cohort)
        per_split: dict[str, set] = {split: set() for split in ("train", "val", "test")}
        for task in tasks:
            for split, ids in per_split.items():
                ids.update(r.image_id for r in task.records(load, split))
        return ImageCounts(*(len(per_split[s]) for s in ("train", "val", "test")), source="counted")
    total, test = DOCUMENTED_IMAGES.get(dataset, UNKNOWN_IMAGES)
    return ImageCounts(total - 2 * test, test, test, "documented" if dataset in DOCUMENTED_IMAGES else "assumed")


def run_estimate(check: Any, options: Any, throughput: Throughput) -> dict[str, Any] | None:
    """A run's estimated time on the device ``throughput`` describes (per workload, scaled by the model's size),
    from a preflight ``check`` (its units, and its images per split where counted; the documented figures for
    a dataset not counted); None without units."""
    if not check.units:
        return None
    images, tasks, documented = 0, 0, []
    for dataset in dict.fromkeys(u.task.dataset for u in check.units):
        units = [u for u in check.units if u.task.dataset == dataset]
        read = [images_read(limited(check.counts[u.task.name], u.method, options.limit), [u.method], [u.task],
                            options) for u in units if u.task.name in check.counts]
        if read:
            images += max(read)
        elif dataset in DOCUMENTED_IMAGES:  # not read (no data root): the documented figures
            c = image_counts(dataset, None, [], None)
            images += max(images_read({"train": c.train, "val": c.val, "test": c.test}, [u.method], [u.task],
                                      options) for u in units)
            documented.append(dataset)
        tasks = max(tasks, len({u.task.name for u in units}))
    found = estimate(check.preset, "eval", images, tasks, throughput)
    sized = ("" if check.preset.name in SIZES_B else
             f"no figures for {check.preset.name}: estimated as a typical {check.preset.family} model; ")
    text = (f"estimated time on {throughput.where}: about {duration(found.minutes)} for {images} images ({sized}"
            f"figures: {throughput.source}, scaled to the model's size, docs/PERFORMANCE.md; 'focus-eval bench' "
            f"measures your device)")
    if documented:
        text += f"; image counts documented, not read, for {', '.join(documented)}"
    return {"minutes": found.minutes, "images": images, "memory_gb": found.host_memory_gb, "text": text}


def limited(counts: dict[str, int], method: str, limit: int | float | None) -> dict[str, int]:
    """Images per split that a run with ``--limit`` reads: the test split cut, and every split the method
    scores without fitting on it (a prompt's validation rows), as the runner cuts them."""
    if not limit:
        return counts
    from focus_eval.runner.methods import get_method

    fitted = get_method(method).splits

    def cut(n: int) -> int:
        return min(n, int(limit) if float(limit) >= 1 else math.ceil(float(limit) * n))

    return {s: cut(n) if s == "test" or s not in fitted else n for s, n in counts.items()}


def duration(minutes: float) -> str:
    """Minutes as a person reads them: ``12 min``, ``3.5 h``."""
    return f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.1f} h"

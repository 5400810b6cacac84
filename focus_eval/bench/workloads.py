"""The benchmark's workloads, one record each: what it measures, how its model and inputs are set up, the
reference-style loop, focus-eval's path, any further measurements, and its image counts for a GPU and for
``--tiny``. Adding a workload is adding a record to ``WORKLOADS``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from focus_eval.bench import encoder, mllm
from focus_eval.bench.measure import Env, Measurement, Sizes


@dataclass(frozen=True)
class Extra:
    """A further measurement of a workload: keys added to its result, and rows printed under its row.
    ``measure`` gets the prepared state, the sizes, the environment and the reference loop's measurement."""

    measure: Callable[[Any, Sizes, Env, Measurement], dict[str, Any]]
    lines: Callable[[dict[str, Any]], list]  # rows (measure.row) or notes (text)


@dataclass(frozen=True)
class Workload:
    """One benchmark workload. ``setup`` returns the family's prepared state (model, inputs and an ``info``
    dict reported with the figures); ``reference`` and ``ours`` time one loop each on that state."""

    name: str
    description: str
    setup: Callable[[Mapping[str, Any], Sizes, Env, Any], Any]
    reference: Callable[[Any, Sizes, Env], Measurement]
    ours: Callable[[Any, Sizes, Env], Measurement]
    full: Sizes
    tiny: Sizes
    options: Mapping[str, Any] = field(default_factory=dict)  # family settings (image size, architecture)
    extras: tuple[Extra, ...] = ()

    def sizes(self, tiny: bool) -> Sizes:
        return self.tiny if tiny else self.full


WITHOUT_DRAFT = Extra(encoder.without_draft, encoder.without_draft_lines)
ENCODER_STAGES = Extra(lambda prepared, sizes, env, reference_run: {}, encoder.stage_lines)
MAIN_THREAD = Extra(mllm.main_thread, mllm.main_thread_lines)
LONGER_ANSWERS = Extra(mllm.longer_answers, mllm.longer_answers_lines)
THREE_TASKS = Extra(mllm.three_tasks, mllm.three_tasks_lines)

_VIT = dict(setup=encoder.setup, reference=encoder.reference, ours=encoder.ours)
_MEDGEMMA = dict(setup=mllm.setup, reference=mllm.reference, ours=mllm.ours)

WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("vit224", "ViT-L/16 image embedding from 224-px prepared JPEGs", **_VIT,
             options={"source": (1024, 768), "prepared": 224}, extras=(ENCODER_STAGES,),
             full=Sizes(reference=512, ours=8192, batch=256, reference_batch=16, files=64),
             tiny=Sizes(reference=32, ours=512, batch=32, reference_batch=16)),
    Workload("vit2048", "ViT-L/16 image embedding from 2048x1536 JPEGs", **_VIT,
             options={"source": (2048, 1536)}, extras=(ENCODER_STAGES, WITHOUT_DRAFT),
             full=Sizes(reference=64, ours=512, batch=256, reference_batch=16, files=16),
             tiny=Sizes(reference=4, ours=16, batch=32, reference_batch=16, files=2)),
    Workload("medgemma4b", "MedGemma-4B architecture, yes/no scoring", **_MEDGEMMA,
             options=mllm.MEDGEMMA_4B, extras=(MAIN_THREAD, LONGER_ANSWERS, THREE_TASKS),
             full=Sizes(reference=24, ours=512, batch=64, reference_long=8, three_tasks=128, files=16),
             tiny=Sizes(reference=4, ours=128, batch=8, reference_long=2, three_tasks=8, files=4)),
    Workload("medgemma27b", "MedGemma-27B architecture, yes/no scoring", **_MEDGEMMA,
             options=mllm.MEDGEMMA_27B, extras=(LONGER_ANSWERS,),
             full=Sizes(reference=12, ours=128, batch=16, reference_long=4, files=16),
             tiny=Sizes(reference=4, ours=16, batch=8, reference_long=2, files=4)),
    Workload("medgemma_mid", "mid-size Gemma 3 (256 image tokens, 338-token rows), yes/no scoring", **_MEDGEMMA,
             options=mllm.MEDGEMMA_MID, extras=(MAIN_THREAD, THREE_TASKS),
             full=Sizes(reference=8, ours=64, batch=24, three_tasks=48, files=8),
             tiny=Sizes(reference=2, ours=12, batch=6, three_tasks=6, files=2)),
)}

"""LoRA supervised fine-tuning of a multimodal LLM on one dataset and target (``focus-eval sft``).

The model learns to answer the evaluation prompt of the task ``<target>_<dataset>`` with "yes" or "no" on the
task's train split. Inputs come from the evaluation encoder itself (same chat template, prompt, image
processing), the loss covers the answer tokens only, and the adapter is peft LoRA on every linear layer (no
bias; no modules_to_save unless the preset's ``finetune`` settings opt in). A small loop over accelerate:
data-parallel over processes (``accelerate launch`` or ``torchrun``), gradient accumulation, linear learning
rate decay, gradient clipping, checkpoints with resume, train loss per step and validation loss on the val
split. Batch size and accumulation come from the preset's ``settings.finetune`` unless given.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from focus_eval.adapters import lora
from focus_eval.digests import json_digest
from focus_eval.errors import FocusError
from focus_eval.finetune.data import AnswerEncoder, ExampleImages, collate_examples, data_hash, task_examples
from focus_eval.finetune.shared import sft_field
from focus_eval.runner.images import decode_size, default_workers

DEFAULT_BATCH = (4, 4)  # per-device batch x gradient accumulation, when the preset says nothing
LARGE_MODEL_BATCH = (1, 8)  # presets flagged large_model (27B class)


@dataclass
class SFTConfig:
    """Everything ``focus-eval sft`` was asked to do (None = from the preset or a documented default). The
    options it shares with runs (``--data-root``, ``--device``, ``--seed``, ...) carry their declaration from
    ``focus_eval.options``."""

    model: str
    dataset: str
    target: str
    output: Path | None = None
    data_root: Path | None = sft_field("data_root")
    cohort: str | None = None
    model_args: dict[str, Any] = sft_field("model_args")
    include_path: list[str] = sft_field("include_path")
    split_file: str | None = None
    rank: int = 16
    alpha: float = 16.0
    dropout: float = 0.05
    epochs: int = 1
    lr: float = 2e-5
    batch_size: int | None = None
    grad_accum: int | None = None
    seed: int = sft_field("seed")
    max_steps: int | None = None
    warmup_steps: int = 0
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    save_steps: int = 20
    eval_steps: int | None = None
    log_steps: int = 1
    max_val_images: int | None = None
    gradient_checkpointing: bool = True
    resume: bool = True
    keep_checkpoints: bool = False
    device: str | None = sft_field("device")
    num_workers: int | None = sft_field("num_workers")
    use_prepared: bool = sft_field("use_prepared")
    trust_remote_code: bool = sft_field("trust_remote_code")
    progress: bool = sft_field("progress")
    argv: list[str] = field(default_factory=list)


@dataclass
class SFTResult:
    output: Path
    steps: int
    train_loss: float | None
    val_loss: float | None
    already_trained: bool = False


def default_output(model: str, dataset: str, target: str) -> Path:
    """adapters/<model>/sft-<target>_<dataset>: evaluations of it land in <output>/<model>@sft-<task>/."""
    return Path("adapters") / model / f"sft-{target}_{dataset}"


def batch_plan(preset, batch_size: int | None, grad_accum: int | None) -> tuple[int, int]:
    """(per-device batch, accumulation steps): flags, else the preset's ``settings.finetune``, else 4 x 4
    (1 x 8 for presets flagged ``large_model``)."""
    settings = preset.settings or {}
    finetune = settings.get("finetune") or {}
    default = LARGE_MODEL_BATCH if settings.get("large_model") else DEFAULT_BATCH
    size = batch_size or finetune.get("per_device_batch_size") or default[0]
    accum = grad_accum or finetune.get("gradient_accumulation_steps") or default[1]
    if int(size) < 1 or int(accum) < 1:
        raise FocusError(f"batch size and gradient accumulation must be at least 1, got {size} x {accum}")
    return int(size), int(accum)


def lora_settings(preset, config: SFTConfig) -> dict[str, Any]:
    finetune = (preset.settings or {}).get("finetune") or {}
    return {"r": config.rank, "lora_alpha": config.alpha, "lora_dropout": config.dropout,
            "target_modules": finetune.get("target_modules", "all-linear"), "bias": "none",
            "modules_to_save": finetune.get("modules_to_save") or None, "task_type": "CAUSAL_LM"}


def make_accelerator(device: str | None):
    """One Accelerator per process; on a CPU it must be told so, or every process would do all the work."""
    import torch
    from accelerate import Accelerator
    from accelerate.utils import DistributedDataParallelKwargs

    cpu = device == "cpu" or (device is None and not torch.cuda.is_available())
    # Some LoRA layers sit in modules a model computes but does not use (a vision tower's pooling head, its
    # last layer when features come from the one before); their gradients never arrive.
    return Accelerator(cpu=cpu, kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)])


def _hash(value: Any) -> str:
    return json_digest(value)[:16]


class Trainer:
    """One fine-tuning job: data, model, loop, checkpoints and the files beside the adapter."""

    def __init__(self, config: SFTConfig):
        from focus_eval.presets import load_preset
        from focus_eval.task import TaskIndex

        self.config = config
        self.accelerator = make_accelerator(config.device)
        self.preset = load_preset(config.model, dict(config.model_args))
        if self.preset.family != "mllm" or "prompt" not in self.preset.methods:
            raise FocusError(f"model {self.preset.name!r} is a {self.preset.family} model; LoRA fine-tuning needs "
                             f"a multimodal LLM with the prompt method")
        index = TaskIndex(include_paths=[Path(p) for p in config.include_path])
        name = f"{config.target}_{config.dataset}"
        self.task = index.get(name)
        if (self.task.dataset, self.task.target) != (config.dataset, config.target):
            raise FocusError(f"task {name} reads dataset {self.task.dataset!r} and target {self.task.target!r}")
        self.output = Path(config.output or default_output(config.model, config.dataset, config.target))
        self.batch_size, self.grad_accum = batch_plan(self.preset, config.batch_size, config.grad_accum)
        self.started = time.perf_counter()

    # ----- data

    def load_data(self) -> None:
        from focus_eval.data.registry import load_dataset

        c = self.config
        if c.data_root is None:
            raise FocusError("no --data-root given (or FOCUS_DATA set); it holds one folder per dataset")
        cohort = c.cohort or self.task.cohort
        self.load = load_dataset(c.dataset, c.data_root, cohort=cohort, split_file=c.split_file)
        # images are decoded at the size evaluation decodes them at, from the prepared copies where they exist
        self.draft = decode_size(self.preset.preprocessing)
        prepared = Path(c.data_root) if c.use_prepared else None
        self.train_examples = task_examples(self.task, self.load, "train", prepared, self.draft, self.accelerator)
        if not self.train_examples:
            raise FocusError(f"task {self.task.name}: the train split of {c.dataset} has no image labelled for "
                             f"{c.target}")
        val = task_examples(self.task, self.load, "val", prepared, self.draft, self.accelerator)
        if c.max_val_images and len(val) > c.max_val_images:
            picks = np.linspace(0, len(val) - 1, c.max_val_images).round().astype(int)
            val = [val[i] for i in sorted(set(picks.tolist()))]
        self.val_examples = val
        if not val and self.accelerator.is_main_process:
            print(f"focus-eval sft: {c.dataset} has no val split for {c.target}; no validation loss",
                  flush=True)

    # ----- model

    def load_model(self) -> None:
        import torch
        from accelerate.utils import set_seed
        from peft import LoraConfig, get_peft_model

        from focus_eval.adapters import load_adapter

        set_seed(self.config.seed)
        # The main process first: a download or a tiny-model build happens once, the others read the cache.
        with self.accelerator.main_process_first():
            self.scorer = load_adapter(self.preset, device=str(self.accelerator.device),
                                       trust_remote_code=self.config.trust_remote_code)
        base = self.scorer.model
        base.config.use_cache = False
        if self.config.gradient_checkpointing:
            checkpointing = {"use_reentrant": False}
            if hasattr(base, "activation_checkpointing_enable"):  # the name since transformers 5.2x
                base.activation_checkpointing_enable(activation_checkpointing_kwargs=checkpointing)
            else:
                base.gradient_checkpointing_enable(gradient_checkpointing_kwargs=checkpointing)
        self.lora = lora_settings(self.preset, self.config)
        self.peft_model = get_peft_model(base, LoraConfig(**self.lora))
        self.peft_model.train()
        self.trainable = [p for p in self.peft_model.parameters() if p.requires_grad]
        self.model = self.accelerator.prepare_model(self.peft_model)
        self.encoder = AnswerEncoder(self.scorer)
        self.optimizer = torch.optim.AdamW(self.trainable, lr=self.config.lr, weight_decay=self.config.weight_decay)

    def make_scheduler(self, total_steps: int) -> None:
        import torch

        warmup = max(0, int(self.config.warmup_steps))

        def factor(step: int) -> float:
            if step < warmup:
                return (step + 1) / (warmup + 1)
            return max(0.0, (total_steps - step) / max(1, total_steps - warmup))

        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, factor)

    # ----- plan

    @property
    def world(self) -> int:
        return self.accelerator.num_processes

    def plan(self) -> dict[str, int]:
        n = len(self.train_examples)
        micro = math.ceil(n / (self.batch_size * self.world))
        steps_per_epoch = math.ceil(micro / self.grad_accum)
        total = self.config.max_steps or self.config.epochs * steps_per_epoch
        if total < 1:
            raise FocusError("nothing to train: --epochs and --max-steps give no optimiser step")
        return {"micro_batches_per_epoch": micro, "steps_per_epoch": steps_per_epoch, "total_steps": int(total)}

    def epoch_indices(self, epoch: int) -> list[int]:
        """This process's example indices for one epoch, micro-batch after micro-batch.

        Every process draws the same seeded permutation; each micro-batch of the whole job takes batch x
        processes examples from it, and this process takes its slice. The last micro-batch is filled up by
        wrapping around to the start of the permutation, so every process runs the same number of steps.
        """
        n, size = len(self.train_examples), self.batch_size
        per_micro = size * self.world
        order = np.random.default_rng([self.config.seed, epoch]).permutation(n)
        order = np.resize(order, self.plan()["micro_batches_per_epoch"] * per_micro)
        rank = self.accelerator.process_index
        return [int(i) for m in range(0, order.size, per_micro) for i in order[m + rank * size: m + (rank + 1) * size]]

    def identity(self) -> dict[str, Any]:
        """What a checkpoint must share with this job to be resumed (hashed)."""
        c = self.config
        return {"preset_hash": self.preset.hash, "task_hash": self.task.hash,
                "data_hash": data_hash(self.train_examples),
                "cohort": self.load.metadata.get("cohort"), "lora": self.lora, "seed": c.seed, "lr": c.lr,
                "epochs": c.epochs, "max_steps": c.max_steps, "batch": [self.batch_size, self.grad_accum, self.world],
                "warmup_steps": c.warmup_steps, "weight_decay": c.weight_decay, "max_grad_norm": c.max_grad_norm}

    # ----- steps

    def answer_forward(self, model, images, rows) -> tuple[Any, int]:
        """(mean answer-token loss, answer-token count) of one micro-batch."""
        from focus_eval.finetune.data import IGNORE_INDEX, answer_loss

        batch = self.encoder(images, [e.prompt for e in rows], [e.answer for e in rows])
        labels = batch.pop("labels")
        # Logits only from the first position that predicts an answer token: vocabularies are large.
        first = int((labels != IGNORE_INDEX).float().argmax(dim=1).min()) - 1
        out = model(**batch, use_cache=False, logits_to_keep=labels.shape[1] - first)
        return answer_loss(out.logits, labels[:, first:])

    def loader(self, examples, indices=None):
        import torch
        from torch.utils.data import DataLoader

        # Workers decode and run the processor's image half; the batches arrive pinned on a GPU. An own
        # generator: a loader draws its worker seed from it, and drawing from the global generator would shift
        # the dropout masks of a resumed run.
        split = getattr(self.scorer, "image_processing", None)
        workers = self.workers()
        return DataLoader(ExampleImages(examples, self.draft, split() if split else None), batch_size=self.batch_size,
                          sampler=indices, shuffle=False, num_workers=workers, collate_fn=collate_examples,
                          pin_memory=self.accelerator.device.type == "cuda", prefetch_factor=2 if workers else None,
                          generator=torch.Generator().manual_seed(self.config.seed))

    def validation_loss(self) -> float | None:
        """Mean answer-token loss over the val split (shared out over processes)."""
        import torch

        if not self.val_examples:
            return None
        share = self.val_examples[self.accelerator.process_index::self.world]
        total = torch.zeros(2, device=self.accelerator.device, dtype=torch.float64)
        self.peft_model.eval()
        with torch.no_grad():
            for ids, images in (self.loader(share) if share else []):
                loss, count = self.answer_forward(self.peft_model, images, [share[i] for i in ids])
                total += torch.tensor([float(loss) * count, count], device=total.device, dtype=total.dtype)
        self.peft_model.train()
        total = self.accelerator.reduce(total, reduction="sum")
        return float(total[0] / total[1]) if float(total[1]) > 0 else None

    # ----- files

    def log(self, row: dict[str, Any]) -> None:
        if self.accelerator.is_main_process:
            from focus_eval.results.schema import dumps

            with (self.output / lora.LOG_FILE).open("a", encoding="utf-8") as fh:
                fh.write(dumps(row) + "\n")

    def trim_log(self, step: int) -> None:
        """Drop log lines written after the checkpoint a resumed run starts from."""
        path = self.output / lora.LOG_FILE
        if not self.accelerator.is_main_process or not path.is_file():
            return
        kept = [line for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip() and json.loads(line).get("step", 0) <= step]
        path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")

    def finished_info(self) -> dict[str, Any] | None:
        info = lora.read_adapter_info(self.output)
        return info if info and info.get("status") == "finished" else None

    def prepare_output(self, identity_hash: str) -> bool:
        """True when a finished adapter of this very job is already there (nothing to do)."""
        info = self.finished_info()
        if self.config.resume and info is not None:
            if info.get("config_hash") == identity_hash:
                return True
            raise FocusError(f"{self.output} holds an adapter trained with other settings or data "
                             f"(config hash {info.get('config_hash')} vs {identity_hash}); choose another "
                             f"--output, or pass --no-resume to replace it")
        if self.accelerator.is_main_process:
            if not self.config.resume:
                for name in (lora.INFO_FILE, lora.LOG_FILE, "adapter_config.json", *lora.WEIGHT_FILES):
                    (self.output / name).unlink(missing_ok=True)
                shutil.rmtree(self.output / lora.CHECKPOINTS_DIR, ignore_errors=True)
            else:
                (self.output / lora.INFO_FILE).unlink(missing_ok=True)
            self.output.mkdir(parents=True, exist_ok=True)
        self.accelerator.wait_for_everyone()
        return False

    # ----- main

    def run(self) -> SFTResult:
        from focus_eval.finetune.checkpoint import latest_checkpoint, load_checkpoint, read_state

        self.load_data()
        self.lora = lora_settings(self.preset, self.config)
        identity_hash = _hash(self.identity())
        if self.prepare_output(identity_hash):
            info = self.finished_info() or {}
            return SFTResult(self.output, int(info.get("steps", 0)), info.get("final_train_loss"),
                             info.get("val_loss_last"), already_trained=True)
        plan = self.plan()
        self.load_model()
        self.make_scheduler(plan["total_steps"])
        step, history = 0, {"val_first": None, "train_last": None, "val_last": None, "examples": 0}
        checkpoint = latest_checkpoint(self.output) if self.config.resume else None
        if checkpoint is not None:
            if read_state(checkpoint).get("identity_hash") != identity_hash:
                raise FocusError(f"checkpoint {checkpoint} belongs to a job with other settings or data; pass "
                                 f"--no-resume to start again")
            state = load_checkpoint(self.accelerator, checkpoint, self.peft_model, self.optimizer, self.scheduler)
            step, history = int(state["step"]), state["history"]
            self.trim_log(step)
            if self.accelerator.is_main_process:
                print(f"focus-eval sft: resuming from {checkpoint} (step {step})", flush=True)
        elif self.val_examples:
            history["val_first"] = self.validation_loss()
            self.log({"step": 0, "epoch": 0.0, "val_loss": history["val_first"], "val_images": len(self.val_examples)})
        self.loop(step, plan, history, identity_hash)
        return self.finish(plan, history, identity_hash)

    def loop(self, step: int, plan: dict[str, int], history: dict[str, Any], identity_hash: str) -> None:
        import torch

        from focus_eval.finetune.checkpoint import save_checkpoint

        c, acc = self.config, self.accelerator
        total, per_epoch, micro = plan["total_steps"], plan["steps_per_epoch"], plan["micro_batches_per_epoch"]
        eval_every = c.eval_steps or c.save_steps
        bar = None
        if c.progress and acc.is_local_main_process:
            from focus_eval.progress import bar as progress_bar

            bar = progress_bar(total, f"sft {self.task.name}", unit="step", initial=step)
        pending: list[float] = []
        while step < total:
            epoch, group = divmod(step, per_epoch)
            indices = self.epoch_indices(epoch)[group * self.grad_accum * self.batch_size:]
            batches = iter(self.loader(self.train_examples, indices))
            for group in range(group, per_epoch):
                n_micro = min(self.grad_accum, micro - group * self.grad_accum)
                losses = []
                for j in range(n_micro):
                    ids, images = next(batches)
                    rows = [self.train_examples[i] for i in ids]
                    sync = contextlib.nullcontext() if j == n_micro - 1 else acc.no_sync(self.model)
                    with sync:
                        loss, _ = self.answer_forward(self.model, images, rows)
                        acc.backward(loss / n_micro)
                    losses.append(float(loss.detach()))
                grad_norm = acc.clip_grad_norm_(self.trainable, c.max_grad_norm)
                lr = self.scheduler.get_last_lr()[0]
                self.optimizer.step()
                self.scheduler.step()
                self.optimizer.zero_grad(set_to_none=True)
                step += 1
                history["examples"] += n_micro * self.batch_size * self.world
                mean = acc.reduce(torch.tensor(sum(losses) / len(losses), device=acc.device), reduction="mean")
                pending.append(float(mean))
                history["train_last"] = float(mean)
                if bar:
                    bar.update(1)
                    bar.set_postfix(loss=f"{float(mean):.4f}")
                if step % c.log_steps == 0 or step == total:
                    self.log({"step": step, "epoch": round(step / per_epoch, 4),
                              "train_loss": sum(pending) / len(pending), "lr": lr,
                              "grad_norm": float(grad_norm) if grad_norm is not None else None,
                              "examples_seen": history["examples"],
                              "elapsed_s": round(time.perf_counter() - self.started, 2)})
                    pending = []
                if self.val_examples and (step % eval_every == 0 or step == total):
                    history["val_last"] = self.validation_loss()
                    self.log({"step": step, "epoch": round(step / per_epoch, 4), "val_loss": history["val_last"],
                              "val_images": len(self.val_examples)})
                if step % c.save_steps == 0 and step < total:
                    save_checkpoint(acc, self.output, step, self.peft_model, self.optimizer, self.scheduler,
                                    {"identity_hash": identity_hash, "history": history})
                if step >= total:
                    break
        if bar:
            bar.close()

    def workers(self) -> int:
        if self.config.num_workers is not None:
            return self.config.num_workers
        return default_workers(self.world, most=8)

    def finish(self, plan: dict[str, int], history: dict[str, Any], identity_hash: str) -> SFTResult:
        acc = self.accelerator
        acc.wait_for_everyone()
        if acc.is_main_process:
            acc.unwrap_model(self.model).save_pretrained(str(self.output))
            (self.output / lora.INFO_FILE).write_text(
                json.dumps(self.info(plan, history, identity_hash), indent=1, default=str) + "\n", encoding="utf-8")
            if not self.config.keep_checkpoints:
                shutil.rmtree(self.output / lora.CHECKPOINTS_DIR, ignore_errors=True)
        acc.wait_for_everyone()
        return SFTResult(self.output, plan["total_steps"], history["train_last"], history["val_last"])

    def info(self, plan: dict[str, int], history: dict[str, Any], identity_hash: str) -> dict[str, Any]:
        import accelerate
        import peft
        import torch
        import transformers

        from focus_eval.version import __version__

        c = self.config
        train, val = self.train_examples, self.val_examples
        return {
            "format": lora.INFO_FORMAT, "kind": "lora_sft", "status": "finished",
            "adapter_id": self.output.name, "base_model": self.preset.name, "preset_hash": self.preset.hash,
            "source": self.scorer.info.get("source"), "revision": self.scorer.info.get("revision"),
            "train_dataset": c.dataset, "train_target": c.target, "train_task": self.task.name,
            "task_hash": self.task.hash, "task_version": self.task.version, "prompt_template": self.task.prompt,
            "answers": {"1": "yes", "0": "no"}, "loss": "cross-entropy on the answer tokens only",
            "cohort": self.load.metadata.get("cohort"), "split_source": self.load.metadata.get("split_source"),
            "lora": self.lora,
            "training": {"epochs": c.epochs, "max_steps": c.max_steps, "lr": c.lr, "scheduler": "linear",
                         "warmup_steps": c.warmup_steps, "optimizer": "AdamW", "weight_decay": c.weight_decay,
                         "max_grad_norm": c.max_grad_norm, "per_device_batch_size": self.batch_size,
                         "gradient_accumulation_steps": self.grad_accum, "processes": self.world,
                         "global_batch_size": self.batch_size * self.grad_accum * self.world,
                         "gradient_checkpointing": c.gradient_checkpointing,
                         "dtype": self.scorer.info.get("dtype"), "device": self.accelerator.device.type,
                         **plan},
            "seed": c.seed, "steps": plan["total_steps"], "examples_seen": history["examples"],
            "data": {"n_train": len(train), "n_train_pos": sum(e.label for e in train), "n_val": len(val),
                     "n_val_pos": sum(e.label for e in val), "data_hash": data_hash(train),
                     "val_data_hash": data_hash(val) if val else None,
                     "hash_rule": "sha256 of the sorted lines '<image_id>\\t<label>\\n'"},
            "final_train_loss": history["train_last"], "val_loss_first": history["val_first"],
            "val_loss_last": history["val_last"], "config_hash": identity_hash,
            "versions": {"focus_eval": __version__, "torch": torch.__version__,
                         "transformers": transformers.__version__, "peft": peft.__version__,
                         "accelerate": accelerate.__version__},
            "argv": c.argv, "elapsed_s": round(time.perf_counter() - self.started, 2),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(c).items()},
        }


def train(config: SFTConfig) -> SFTResult:
    return Trainer(config).run()

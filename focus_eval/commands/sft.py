"""``focus-eval sft --model M --dataset D --target T``: train a LoRA adapter on one dataset's train split."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    from focus_eval.finetune.shared import SHARED
    from focus_eval.options import add_options

    shared = {**SHARED, "model_args": {"default": ""}}  # sft parses --model-args text itself

    p.add_argument("--model", required=True, help="multimodal LLM preset ('focus-eval models' lists them)")
    p.add_argument("--dataset", required=True, help="dataset whose train split is used, e.g. brset")
    p.add_argument("--target", required=True, help="dr, referable_dr or glaucoma (the task <target>_<dataset>)")
    p.add_argument("--output", type=Path, default=None,
                   help="adapter folder (default: adapters/<model>/sft-<target>_<dataset>)")
    p.add_argument("--cohort", default=None, help="cohort of the dataset (default: the task's)")
    # the options shared with runs, as focus_eval.options declares them (without lm-eval's spellings)
    add_options(p, ("data_root", "model_args", "include_path"), aliases=False, overrides=shared)
    p.add_argument("--split-file", default=None, help="external split file (image_id, split) for the dataset")
    lora = p.add_argument_group("LoRA")
    lora.add_argument("--rank", type=int, default=16)
    lora.add_argument("--alpha", type=float, default=16.0)
    lora.add_argument("--dropout", type=float, default=0.05)
    opt = p.add_argument_group("optimisation")
    opt.add_argument("--epochs", type=int, default=1)
    opt.add_argument("--max-steps", type=int, default=None, help="optimiser steps (overrides --epochs)")
    opt.add_argument("--lr", type=float, default=2e-5, help="peak learning rate (linear decay to 0)")
    opt.add_argument("--warmup-steps", type=int, default=0)
    opt.add_argument("--weight-decay", type=float, default=0.0)
    opt.add_argument("--max-grad-norm", type=float, default=1.0)
    opt.add_argument("--batch-size", type=int, default=None,
                     help="images per device and micro-batch (default: the preset's, else 4; 1 for large models)")
    opt.add_argument("--grad-accum", type=int, default=None,
                     help="micro-batches per optimiser step (default: the preset's, else 4; 8 for large models)")
    add_options(opt, ("seed",), overrides=shared)
    opt.add_argument("--no-gradient-checkpointing", dest="gradient_checkpointing", action="store_false",
                     help="keep activations instead of recomputing them (faster, more memory)")
    run = p.add_argument_group("run")
    run.add_argument("--save-steps", type=int, default=20, help="checkpoint every N optimiser steps")
    run.add_argument("--eval-steps", type=int, default=None,
                     help="validation loss every N steps (default: --save-steps)")
    run.add_argument("--log-steps", type=int, default=1, help="log the train loss every N steps")
    run.add_argument("--max-val-images", type=int, default=None, help="cap on validation images (evenly spaced)")
    run.add_argument("--resume", dest="resume", action="store_true", default=True,
                     help="continue from the last checkpoint; a finished adapter is kept (default)")
    run.add_argument("--no-resume", dest="resume", action="store_false", help="train again from the start")
    run.add_argument("--keep-checkpoints", action="store_true", help="keep the last checkpoint after training")
    add_options(run, ("device", "num_workers", "use_prepared", "trust_remote_code", "progress"), aliases=False,
                overrides=shared)


def run(args: argparse.Namespace) -> int:
    from focus_eval.data.registry import optional_data_root
    from focus_eval.finetune.shared import SHARED
    from focus_eval.finetune.sft import SFTConfig, Trainer
    from focus_eval.options import from_namespace
    from focus_eval.presets import parse_model_args

    shared = from_namespace(args, SHARED)  # data root, model args, device, seed, ... as runs read them
    shared.update(data_root=optional_data_root(shared["data_root"]), model_args=parse_model_args(shared["model_args"]))
    config = SFTConfig(
        model=args.model, dataset=args.dataset, target=args.target, output=args.output, cohort=args.cohort,
        split_file=args.split_file, rank=args.rank, alpha=args.alpha, dropout=args.dropout, epochs=args.epochs,
        lr=args.lr, batch_size=args.batch_size, grad_accum=args.grad_accum, max_steps=args.max_steps,
        warmup_steps=args.warmup_steps, weight_decay=args.weight_decay, max_grad_norm=args.max_grad_norm,
        save_steps=max(1, args.save_steps), eval_steps=args.eval_steps, log_steps=max(1, args.log_steps),
        max_val_images=args.max_val_images, gradient_checkpointing=args.gradient_checkpointing,
        resume=args.resume, keep_checkpoints=args.keep_checkpoints, **shared, argv=["focus-eval", *sys.argv[1:]])
    trainer = Trainer(config)
    result = trainer.run()
    if not trainer.accelerator.is_main_process:
        return 0

    def fmt(value):
        return "-" if value is None else f"{value:.4f}"

    state = "already trained (use --no-resume to train again)" if result.already_trained else "trained"
    print(f"adapter: {result.output}  {state}; {result.steps} steps, train loss {fmt(result.train_loss)}, "
          f"val loss {fmt(result.val_loss)}")
    print(f"evaluate: focus-eval --model {config.model} --tasks {config.target} --adapter {result.output}")
    return 0

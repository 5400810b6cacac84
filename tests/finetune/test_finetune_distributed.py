"""focus-eval sft with two CPU processes under torchrun: the work is split, gradients are averaged, and one
adapter is written that equals the single-process adapter with the same global batch."""

import json
import os
import subprocess
import sys

import pytest
import torch

from helpers.finetune_fixtures import write_easy_synth
from focus_eval.cli import main

pytestmark = pytest.mark.slow  # two training processes under torchrun

# dropout 0: every process would otherwise draw its own masks, and the two runs could not be compared
ARGS = ["--model", "tiny-medgemma", "--dataset", "synth_desktop", "--target", "dr", "--device", "cpu",
        "--num-workers", "0", "--no-progress", "--max-steps", "3", "--grad-accum", "2", "--save-steps", "2",
        "--lr", "1e-2", "--dropout", "0"]


def test_two_processes_split_the_work_and_write_one_adapter(tmp_path):
    from safetensors.torch import load_file

    from focus_eval.tiny import ensure_tiny

    ensure_tiny("tiny-medgemma")  # built once here, not by two processes at the same time
    write_easy_synth(tmp_path / "data", n=40)
    two = tmp_path / "two"
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                           "-m", "focus_eval", "sft", *ARGS, "--data-root", str(tmp_path / "data"), "--output",
                           str(two), "--batch-size", "2", "--keep-checkpoints"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("adapter:") == 1  # only the main process reports
    info = json.loads((two / "focus_eval_adapter.json").read_text())
    assert info["training"]["processes"] == 2 and info["training"]["global_batch_size"] == 8
    assert sorted(p.name for p in (two / "checkpoints" / "step-000002").glob("rng-*.pt")) == ["rng-0.pt", "rng-1.pt"]
    log = [json.loads(line) for line in (two / "training_log.jsonl").read_text().splitlines()]
    assert [row["step"] for row in log if "train_loss" in row] == [1, 2, 3]

    one = tmp_path / "one"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert main(["sft", *ARGS, "--data-root", str(tmp_path / "data"), "--output", str(one),
                     "--batch-size", "4"]) == 0
    finally:
        torch.set_num_threads(threads)
    # each micro-batch of the single process holds exactly the examples the two processes share out
    expected, got = load_file(str(one / "adapter_model.safetensors")), load_file(str(two / "adapter_model.safetensors"))
    assert expected.keys() == got.keys()
    for key in expected:
        torch.testing.assert_close(got[key], expected[key], atol=1e-5, rtol=1e-4)
    single = [json.loads(line) for line in (one / "training_log.jsonl").read_text().splitlines()]
    for a, b in zip(single, log):
        for key in ("train_loss", "val_loss"):
            if key in a:
                assert abs(a[key] - b[key]) < 1e-4

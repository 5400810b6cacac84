"""``--device`` takes auto, cpu, cuda, cuda:N or mps and refuses anything else at parse time (exit 2, the value
named, the spelling meant suggested, nothing imported or written); a run that would take long on the CPU says
so, with its estimate, before the model is loaded."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.records import synthetic_root
from hypothesis import given
from hypothesis import strategies as st

from focus_eval import validators
from focus_eval.cli import main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    return synthetic_root(tmp_path_factory, "synth", n=60, seed=0)


def test_device_gpu_exits_2_naming_the_value_before_anything_is_imported_or_written(tmp_path):
    out = tmp_path / "out"
    code = ("import sys; from focus_eval.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\n"
            "print(code, sorted(m for m in ('torch', 'numpy', 'pandas', 'accelerate') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code, "--model", "tiny-vit", "--tasks", "dr_synth_desktop",
                           "--data-root", str(tmp_path), "-o", str(out), "--device", "gpu"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.stdout.split() == ["2", "[]"], done.stderr
    assert "argument --device: expected one of auto, cpu, cuda, cuda:N, mps, got 'gpu'" in done.stderr
    assert "did you mean --device cuda?" in done.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value,meant", [("gpu", "cuda"), ("GPU", "cuda"), ("gpu:1", "cuda:1"), ("gpu0", "cuda:0"),
                                         ("CUDA:2", "cuda:2"), ("cude", "cuda"), ("Cpu", "cpu"), ("mps:0", "mps"),
                                         ("nvidia", "cuda")])
def test_a_misspelled_device_gets_the_spelling_meant(value, meant):
    with pytest.raises(argparse.ArgumentTypeError, match=re.escape(f"did you mean --device {meant}?")):
        validators.device(value)


ACCEPTED = re.compile(r"(auto|cpu|cuda|mps|cuda:\d+)")


@given(st.one_of(st.text(max_size=12), st.sampled_from(["auto", "cpu", "cuda", "mps", "cuda:0", "cuda:17",
                                                         "cuda:", "gpu", "cuda:1x", "cpu:0", "mps:1"])))
def test_device_accepts_exactly_its_spellings_and_names_anything_else(text):
    if ACCEPTED.fullmatch(text.strip()):
        assert validators.device(text) == (None if text.strip() == "auto" else text.strip())
    else:
        with pytest.raises(argparse.ArgumentTypeError) as refused:
            validators.device(text)
        assert repr(text) in str(refused.value)


def test_every_door_to_a_run_refuses_a_bad_device(tmp_path, capsys):
    import focus_eval
    from focus_eval.errors import FocusError

    config = tmp_path / "run.yaml"
    config.write_text("model: tiny-vit\ntasks: dr_synth_desktop\ndevice: gpu\n")
    assert main(["--config", str(config), "-o", str(tmp_path / "out")]) == 2
    assert f"{config}: device: expected one of auto, cpu, cuda, cuda:N, mps, got 'gpu'" in capsys.readouterr().err
    with pytest.raises(FocusError, match="option device: expected one of .* got 'gpu'; did you mean --device cuda"):
        focus_eval.evaluate("tiny-vit", "dr_synth_desktop", device="gpu", output_path=tmp_path / "out")
    with pytest.raises(SystemExit) as exit_:
        main(["sft", "--model", "tiny-medgemma", "--dataset", "synth_desktop", "--target", "dr", "--device", "gpu"])
    assert exit_.value.code == 2 and "got 'gpu'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_options_made_in_code_are_checked_by_the_preflight(synth, tmp_path):
    from focus_eval.options import RunOptions
    from focus_eval.runner.preflight import preflight

    options = RunOptions(model="tiny-vit", tasks="dr_synth_desktop", data_root=synth, output_path=tmp_path / "o",
                         device="gpu")
    assert [p for p in preflight(options).problems if "--device" in p] == [
        "--device: expected one of auto, cpu, cuda, cuda:N, mps, got 'gpu'; did you mean --device cuda?"]


def test_mps_where_torch_sees_no_apple_gpu_is_a_problem(synth, tmp_path, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert main(["--model", "tiny-vit", "--tasks", "dr_synth_desktop", "--data-root", str(synth),
                 "-o", str(tmp_path / "out"), "--device", "mps"]) == 2
    assert "--device mps: torch sees no Apple GPU (MPS) here" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.fixture
def large_mllm(tmp_path):
    """The tiny Gemma 3 under a name with no size figures: it is sized as a typical multimodal LLM (8 billion
    parameters), so its estimate is a large model's while it runs in seconds."""
    text = (REPO / "models" / "tiny-medgemma.yaml").read_text(encoding="utf-8")
    path = tmp_path / "clinic-mllm.yaml"
    path.write_text(text.replace("name: tiny-medgemma", "name: clinic-mllm"), encoding="utf-8")
    return path


class Loaded(Exception):
    """Raised where the runner would start loading the model."""


def stop_at_load(monkeypatch, capsys, seen: list[str]):
    """The runner replaced by one that records what was printed before it was made, and stops there."""
    import focus_eval.runner.run as run_module

    class Runner:
        def __init__(self, options):
            seen.append(capsys.readouterr().err)
            raise Loaded

    monkeypatch.setattr(run_module, "Runner", Runner)


def test_a_large_model_on_the_cpu_says_so_with_its_estimate_before_loading(synth, large_mllm, tmp_path, capsys,
                                                                           monkeypatch):
    import focus_eval.grid.estimate as estimate

    monkeypatch.setattr(estimate.os, "cpu_count", lambda: 2)
    seen: list[str] = []
    stop_at_load(monkeypatch, capsys, seen)
    base = ["--tasks", "dr_synth_desktop", "--data-root", str(synth), "-o", str(tmp_path / "out"), "--device", "cpu"]
    with pytest.raises(Loaded):
        main(["--model", str(large_mllm), *base])
    warning = re.search(r"focus-eval: warning: clinic-mllm \(8 billion parameters, sized as a typical mllm model\) "
                        r"on the CPU \(2 cores\): about ([\d.]+) (min|h) for (\d+) images and (\d+) GB of memory; one "
                        r"GPU takes about \d+ min \(--device cuda\)", seen[0])
    assert warning, seen[0]
    # a prompt reads the test images and, for its validation rows, the validation images: 12 + 12 here
    assert int(warning[3]) == 24 and int(warning[4]) >= 16
    hours = float(warning[1]) / (60 if warning[2] == "min" else 1)
    # --limit 3 cuts the test and validation rows: the estimate says 6 images, in proportion
    with pytest.raises(Loaded):
        main(["--model", str(large_mllm), *base, "--limit", "3"])
    limited = re.search(r"about ([\d.]+) (min|h) for (\d+) images", seen[1])
    assert int(limited[3]) == 6
    assert float(limited[1]) / (60 if limited[2] == "min" else 1) < hours / 2
    # a small model on the CPU, or the large one on a GPU, starts without a word
    with pytest.raises(Loaded):
        main(["--model", "tiny-vit", *base])
    assert "warning" not in seen[2]
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(Loaded):
        main(["--model", str(large_mllm), *base[:-1], "cuda"])
    assert "warning" not in seen[3]
    assert not (tmp_path / "out").exists()


def test_check_on_the_cpu_prints_its_estimate(synth, large_mllm, tmp_path, capsys, monkeypatch):
    import focus_eval.grid.estimate as estimate

    monkeypatch.setattr(estimate.os, "cpu_count", lambda: 4)
    assert main(["--model", str(large_mllm), "--tasks", "dr_synth_desktop", "--data-root", str(synth),
                 "-o", str(tmp_path / "out"), "--device", "cpu", "--check", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["estimate"]
    assert found["images"] == 24 and found["text"].startswith("estimated time on the CPU (4 cores): about")
    assert not (tmp_path / "out").exists()


def test_the_cpu_figures_make_a_multi_billion_model_slow_and_a_small_encoder_quick():
    from focus_eval.grid.estimate import SLOW_MINUTES, Throughput, estimate
    from focus_eval.presets import load_preset

    cpu = Throughput.cpu(16)
    # PAPILA's test and validation images (98 each) on a 16-core CPU
    assert estimate(load_preset("medgemma-27b"), "eval", 196, 1, cpu).minutes > 4 * SLOW_MINUTES
    assert estimate(load_preset("medgemma-27b"), "eval", 196, 1, Throughput.default()).minutes < SLOW_MINUTES
    assert estimate(load_preset("efficientnet-lite0"), "eval", 196, 1, cpu).minutes < 5
    # a tiny multimodal LLM asked six paraphrases of six tasks on two cores is quick: the figures scale down with
    # the parameter count rather than along the curve through the 4B and 27B figures
    assert estimate(load_preset("tiny-llava-next"), "eval", 240, 36, Throughput.cpu(2)).minutes < SLOW_MINUTES / 4
    # per core: twice the cores, twice the images per second (up to the decoding bound)
    preset = load_preset("dinov2-l")
    rate = Throughput.cpu(8).images_per_s(preset.family, 0.304, 224)
    assert Throughput.cpu(16).images_per_s(preset.family, 0.304, 224) == pytest.approx(2 * rate)

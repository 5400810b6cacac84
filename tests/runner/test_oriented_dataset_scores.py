"""A dataset whose images are stored turned and mirrored, each with the EXIF orientation tag that says so, gives
the scores of its upright copy: on an encoder (linear_probe), an MLLM (prompt) and through the prepared copies.

Both copies hold the same decoded pixels losslessly (PNG; the turned copy with an eXIf chunk), so the sample lines
must agree to 1e-6 (the same pixels in the same batches; in practice they are equal)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from focus_eval.cli import main

DATASET, TASK = "synth_desktop", "dr_synth_desktop"
# orientation -> the stored pixels of an upright picture (the EXIF definition of the tag)
STORED = {
    2: lambda a: a[:, ::-1],
    3: lambda a: a[::-1, ::-1],
    4: lambda a: a[::-1, :],
    5: lambda a: a.transpose(1, 0, 2),
    6: lambda a: np.rot90(a, 1),
    7: lambda a: np.rot90(a, 2).transpose(1, 0, 2),
    8: lambda a: np.rot90(a, -1),
}


@pytest.fixture(scope="module")
def roots(tmp_path_factory) -> tuple[Path, Path]:
    """(upright, turned): one synthetic dataset twice; every image of the turned copy stored under one of the
    orientations 2-8 (in turn) with its tag."""
    from focus_eval.synth.datasets import write_synthetic

    base = tmp_path_factory.mktemp("orientation")
    write_synthetic(base / "upright", n=40, seed=11)
    shutil.rmtree(base / "upright" / "synth_mobile")
    shutil.copytree(base / "upright", base / "turned")
    for i, path in enumerate(sorted((base / "upright" / DATASET / "images").glob("*.jpg"))):
        with Image.open(path) as image:
            pixels = np.asarray(image.convert("RGB"))
        Image.fromarray(pixels).save(path, format="PNG")
        orientation = sorted(STORED)[i % len(STORED)]
        exif = Image.Exif()
        exif[0x0112] = orientation
        buffer = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(STORED[orientation](pixels))).save(buffer, format="PNG", exif=exif)
        (base / "turned" / DATASET / "images" / path.name).write_bytes(buffer.getvalue())
    return base / "upright", base / "turned"


def scores(root: Path, out: Path, model: str, method: str, *extra: str) -> dict[str, float]:
    argv = ["--model", model, "--tasks", TASK, "--methods", method, "--data-root", str(root), "--output-path",
            str(out), "--cache-dir", str(out / "cache"), "--no-progress", "--num-workers", "0", "--n-boot", "10",
            *extra]
    assert main(argv) == 0
    (samples,) = (out / model).rglob(f"{TASK}.{method}.jsonl")
    rows = [json.loads(line) for line in samples.read_text().splitlines()]
    assert rows and not any(r.get("error") for r in rows)
    return {r["image_id"]: r["score"] for r in rows}


def assert_same(got: dict[str, float], want: dict[str, float]) -> None:
    assert got.keys() == want.keys()
    np.testing.assert_allclose([got[k] for k in want], list(want.values()), rtol=0, atol=1e-6)


def test_the_turned_copy_stores_other_pixels(roots):
    upright, turned = roots
    names = sorted(p.name for p in (upright / DATASET / "images").glob("*.jpg"))
    for name in names:
        with Image.open(upright / DATASET / "images" / name) as a, Image.open(turned / DATASET / "images" / name) as b:
            assert a.size != b.size or a.tobytes() != b.tobytes(), name


def test_an_encoder_probe_scores_the_turned_copy_as_the_upright_one(roots, tmp_path, monkeypatch):
    upright, turned = roots
    want = scores(upright, tmp_path / "upright", "tiny-vit", "linear_probe")
    assert np.ptp(list(want.values())) > 1e-4
    assert_same(scores(turned, tmp_path / "turned", "tiny-vit", "linear_probe"), want)
    # the check can fail: read as stored (the tag ignored), the turned copy scores otherwise
    monkeypatch.setattr("PIL.ImageOps.exif_transpose", lambda image, in_place=False: None)
    ignored = scores(turned, tmp_path / "ignored", "tiny-vit", "linear_probe")
    assert not np.allclose([ignored[k] for k in want], list(want.values()), rtol=0, atol=1e-6)


def test_an_mllm_prompt_scores_the_turned_copy_as_the_upright_one(roots, tmp_path):
    upright, turned = roots
    want = scores(upright, tmp_path / "upright", "tiny-medgemma", "prompt", "--limit", "8")
    assert_same(scores(turned, tmp_path / "turned", "tiny-medgemma", "prompt", "--limit", "8"), want)


def test_prepared_copies_of_the_turned_copy_are_upright(roots, tmp_path):
    upright, turned = roots
    prepared = {}
    for name, root in (("upright", upright), ("turned", turned)):
        copy = tmp_path / name
        shutil.copytree(root, copy)
        assert main(["datasets", "prepare", DATASET, "--data-root", str(copy), "--size", "224", "--workers",
                     "1"]) == 0
        prepared[name] = {p.relative_to(copy / ".prepared").as_posix(): p.read_bytes()
                          for p in (copy / ".prepared").rglob("*.jpg")}
    assert prepared["upright"] and prepared["turned"] == prepared["upright"]  # the same copies, byte for byte
    want = scores(tmp_path / "upright", tmp_path / "r-upright", "tiny-clip", "zero_shot")
    assert_same(scores(tmp_path / "turned", tmp_path / "r-turned", "tiny-clip", "zero_shot"), want)

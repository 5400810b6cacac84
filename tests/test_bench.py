"""The throughput benchmark (both loops, every workload) and the shared encoder loop it measures."""

import json
import os
import subprocess
import sys

import pytest
import torch
from PIL import Image

from focus_eval.adapters.preprocessing import ImageTransform
from focus_eval.bench import WORKLOADS
from focus_eval.runner.images import DecodeAndTransform, ImageItem, load_image

SQUASH32 = ImageTransform(size=32, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), resize="squash")


def _items(paths, draft=32):
    return [ImageItem(i, str(i), str(p), draft) for i, p in enumerate(paths)]
from focus_eval.errors import FocusError
from focus_eval.runner.embed_loop import iter_embeddings


def test_tiny_bench_runs_both_loops_for_every_workload(tmp_path):
    out = tmp_path / "bench.json"
    env = dict(os.environ, OMP_NUM_THREADS="2", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-m", "focus_eval.bench", "--tiny", "--json", str(out)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["tiny"] is True and report["device"] and report["date"]
    assert set(report["workloads"]) == set(WORKLOADS)
    for name, result in report["workloads"].items():
        assert result["reference_img_s"] > 0 and result["ours_img_s"] > 0, name
        assert result["ratio"] == pytest.approx(result["ours_img_s"] / result["reference_img_s"], rel=0.01)
        assert result["reference"]["images"] > 0 and result["ours"]["images"] > 0
        assert name in proc.stdout
    assert report["workloads"]["vit224"]["reference"]["settings"]["batch_size"] == 16
    assert report["workloads"]["medgemma4b"]["reference"]["settings"]["max_new_tokens"] == 3
    assert report["workloads"]["medgemma4b"]["reference_16_tokens"]["settings"]["max_new_tokens"] == 16
    assert "three_tasks" in report["workloads"]["medgemma4b"]
    assert "ours_without_draft" in report["workloads"]["vit2048"]


def test_bench_command_is_wired_into_the_cli():
    from focus_eval.cli import build_parser

    args = build_parser("bench").parse_args(["--tiny", "--workloads", "vit224", "--json", "x.json"])
    assert args.tiny and args.workloads == ["vit224"] and args.json == "x.json"


def _jpegs(folder, n):
    paths = []
    for i in range(n):
        path = folder / f"{i}.jpg"
        Image.new("RGB", (300, 200), (i * 20 % 255, 40, 90)).save(path)
        paths.append(str(path))
    return paths


def _mean_model(pixels):
    return SQUASH32.normalize(pixels).mean(dim=(2, 3))


@pytest.mark.parametrize("workers", [0, 2])
def test_iter_embeddings_keeps_order_and_covers_every_item(tmp_path, workers):
    paths = _jpegs(tmp_path, 7)
    seen, rows = [], []
    for indices, embeddings in iter_embeddings(_mean_model, DecodeAndTransform(SQUASH32), _items(paths),
                                               batch_size=3, num_workers=workers):
        assert embeddings.dtype == torch.float32 and embeddings.shape == (len(indices), 3)
        seen += indices
        rows.append(embeddings)
    assert seen == list(range(7))
    direct = torch.stack([SQUASH32(load_image(p, 32)).mean(dim=(1, 2)) for p in paths])  # one image at a time
    assert torch.allclose(torch.cat(rows), direct, atol=1e-6)


def test_iter_embeddings_reports_unreadable_items(tmp_path):
    paths = _jpegs(tmp_path, 3)
    bad = tmp_path / "broken.jpg"
    bad.write_bytes(b"not a jpeg")
    items = _items([paths[0], str(bad), paths[1]])
    errors = {}
    got = [i for idx, _ in iter_embeddings(_mean_model, DecodeAndTransform(SQUASH32), items, batch_size=2,
                                           on_error=errors.__setitem__) for i in idx]
    assert got == [0, 2] and list(errors) == [1] and "broken.jpg" in errors[1]
    with pytest.raises(FocusError, match="broken.jpg"):
        list(iter_embeddings(_mean_model, DecodeAndTransform(SQUASH32), items, batch_size=2))


def test_worker_pixels_decode_large_jpegs_to_the_target_size(tmp_path):
    path = tmp_path / "big.jpg"
    Image.new("RGB", (2048, 1536), (200, 80, 40)).save(path, quality=90)
    transform = ImageTransform(size=224, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), resize="squash")
    worker = DecodeAndTransform(transform)
    fast = worker(ImageItem(0, "a", str(path), 224))
    full = worker(ImageItem(0, "a", str(path), None))
    assert fast.shape == full.shape == (3, 224, 224) and fast.dtype == torch.uint8
    assert (fast.int() - full.int()).abs().max() <= 6  # a flat colour survives draft decoding
    on_device = transform.normalize(fast)
    assert on_device.min() >= -1 and on_device.max() <= 1



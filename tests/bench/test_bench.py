"""The throughput benchmark (both loops, every workload) and the shared encoder loop it measures."""

import io
import json
import os
import subprocess
import sys

import pytest
import torch
from PIL import Image

from focus_eval.adapters.preprocessing import ImageTransform
from focus_eval.bench import WORKLOADS
from focus_eval.errors import FocusError
from focus_eval.runner.embed_loop import iter_embeddings
from focus_eval.runner.images import DecodeAndTransform, ImageItem, load_image
from focus_eval.runner.stages import STAGES

SQUASH32 = ImageTransform(size=32, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), resize="squash")


def _items(paths, draft=32):
    return [ImageItem(i, str(i), str(p), draft) for i, p in enumerate(paths)]


@pytest.mark.slow
def test_tiny_bench_runs_both_loops_for_every_workload(tmp_path):
    out = tmp_path / "bench.json"
    env = dict(os.environ, OMP_NUM_THREADS="2", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-m", "focus_eval.bench", "--tiny", "--json", str(out)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["tiny"] is True and report["device"] and report["date"]
    assert set(report["workloads"]) == set(WORKLOADS)
    for name, result in report["workloads"].items():
        assert result["reference_img_s"] > 0 and result["ours_img_s"] > 0, name
        assert result["ratio"] == pytest.approx(result["ours_img_s"] / result["reference_img_s"], rel=0.01)
        assert result["reference"]["images"] > 0 and result["ours"]["images"] > 0
        assert name in proc.stdout
        for loop in ("reference", "ours"):
            # every loop is timed stage by stage, and the stages account for its wall time
            stages = result[loop]["stages"]
            assert set(stages["stages_s"]) == set(STAGES)
            assert abs(stages["unaccounted_s"]) <= 0.1 * stages["wall_s"], (name, loop, stages)
            assert stages["wall_s"] == pytest.approx(result[loop]["seconds"], abs=1e-3)
            assert stages["bottleneck"] in stages["stages_s"]
    workloads = report["workloads"]
    assert workloads["vit224"]["reference"]["settings"]["batch_size"] == 16
    assert workloads["vit224"]["image_size"] == [224, 224] and workloads["vit224"]["ours"]["settings"]["prepared"]
    assert workloads["vit2048"]["image_size"] == [2048, 1536]
    assert workloads["medgemma4b"]["reference"]["settings"]["max_new_tokens"] == 3
    assert workloads["medgemma4b"]["reference_16_tokens"]["settings"]["max_new_tokens"] == 16
    assert workloads["medgemma4b"]["ours_main_thread"]["settings"]["workers"] == 0
    assert workloads["medgemma4b"]["ours_prepared"]["settings"]["inputs"] == "prepared copies"
    assert workloads["medgemma_mid"]["image_tokens"] == 256 and workloads["medgemma_mid"]["prompt_tokens"] >= 330
    for name in ("medgemma4b", "medgemma_mid"):
        three = workloads[name]["three_tasks"]
        assert three["sharing_gain"] == pytest.approx(
            three["shared_tower_and_prefix"]["img_s"] / three["nothing_shared"]["img_s"], rel=0.01)
    assert "ours_without_draft" in workloads["vit2048"]


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




def test_a_new_workload_is_one_record(tmp_path, monkeypatch):
    """A record added to the table runs through setup, both loops and its extras, into the JSON and the table."""
    from types import SimpleNamespace

    from focus_eval.bench import Extra, Sizes, Workload, run_bench
    from focus_eval.bench.measure import Measurement

    def setup(options, sizes, env, folder):
        return SimpleNamespace(info={"params": 7, "colour": options["colour"]}, images=sizes.ours)

    def loop(seconds):
        return lambda prepared, sizes, env: Measurement(prepared.images, seconds, {"batch_size": sizes.batch})

    extra = Extra(lambda prepared, sizes, env, reference_run: {"half": reference_run.img_s / 2},
                  lambda result: [f"half of the reference: {result['half']:.1f}"])
    toy = Workload("toy", "a toy workload", setup, reference=loop(2.0), ours=loop(0.5), options={"colour": "red"},
                   full=Sizes(reference=1000, ours=1000, batch=64), tiny=Sizes(reference=8, ours=8, batch=4),
                   extras=(extra,))
    monkeypatch.setitem(WORKLOADS, "toy", toy)
    out = io.StringIO()
    report = run_bench(["toy"], tiny=True, device="cpu", json_path=str(tmp_path / "b.json"), out=out)
    result = report["workloads"]["toy"]
    assert json.loads((tmp_path / "b.json").read_text())["workloads"]["toy"] == result
    assert (result["reference_img_s"], result["ours_img_s"], result["ratio"]) == (4.0, 16.0, 4.0)
    assert result["ours"]["settings"] == {"batch_size": 4} and result["half"] == 2.0
    assert (result["params"], result["colour"], result["description"]) == (7, "red", "a toy workload")
    lines = out.getvalue().splitlines()
    assert lines[2].split() == ["toy", "4.00", "16.00", "4.00x", "a", "toy", "workload"]
    assert lines[3].split() == ["half", "of", "the", "reference:", "2.0"]  # a note in the row's "what" column
    with pytest.raises(FocusError, match="unknown workloads"):
        run_bench(["toys"], tiny=True, device="cpu", out=out)

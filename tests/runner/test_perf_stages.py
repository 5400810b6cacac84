"""Where the time goes: the stage clock's accounting, the runner's loops charging every stage, the benchmark's
realistic fundus inputs, and the cheaper fundus crop on small images."""

import time

import numpy as np
import pytest
from PIL import Image

from focus_eval.adapters.preprocessing import ImageTransform
from focus_eval.data.images import fundus_box, histogram_percentile
from focus_eval.runner.embed_loop import iter_embeddings
from focus_eval.runner.images import DecodeAndTransform, ImageItem
from focus_eval.runner.stages import STAGES, StageClock

SQUASH32 = ImageTransform(size=32, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), resize="squash")


def test_the_wait_for_the_loader_is_split_by_what_the_loader_spent():
    clock = StageClock()
    clock.main.update({"load": 3.0, "model": 4.0, "post_process": 1.0})
    clock.add_worker({"decode": 6.0, "preprocess": 2.0}, images=10)
    report = clock.report(wall=8.5)
    assert report["stages_s"] == {"start_up": 0.0, "decode": 2.25, "preprocess": 0.75, "host_to_device": 0.0,
                                  "model": 4.0, "post_process": 1.0}
    assert report["unaccounted_s"] == pytest.approx(0.5) and report["bottleneck"] == "model"
    assert report["loader_cpu_s"] == {"decode": 6.0, "preprocess": 2.0} and report["images"] == 10


def test_stages_time_what_runs_inside_them(monkeypatch):
    # a clock that moves only when the test says time passed: exact figures, whatever the machine's load
    from focus_eval.runner import stages

    now = [100.0]

    def spend(seconds):
        now[0] += seconds

    monkeypatch.setattr(stages.time, "perf_counter", lambda: now[0])
    clock = StageClock()
    batches = iter([1, 2])

    def slow_batches():
        for b in batches:
            spend(0.02)
            yield b

    start = now[0]
    for _ in clock.loader(slow_batches()):
        with clock.stage("model"):
            spend(0.03)
    spend(0.005)  # outside every stage
    report = clock.report(now[0] - start)
    assert report["stages_s"]["model"] == pytest.approx(0.06)
    assert report["stages_s"]["decode"] + report["stages_s"]["preprocess"] == pytest.approx(0.04)
    assert report["unaccounted_s"] == pytest.approx(0.005)


@pytest.mark.parametrize("workers", [0, 1])
def test_the_encoder_loop_accounts_for_its_wall_time(tmp_path, workers):
    paths = []
    for i in range(12):
        path = tmp_path / f"{i}.jpg"
        Image.new("RGB", (300, 200), (i * 20 % 255, 40, 90)).save(path)
        paths.append(str(path))
    items = [ImageItem(i, str(i), p, 32) for i, p in enumerate(paths)]
    clock = StageClock()
    start = time.perf_counter()
    for _ in iter_embeddings(lambda x: SQUASH32.normalize(x).mean(dim=(2, 3)), DecodeAndTransform(SQUASH32), items,
                             batch_size=4, num_workers=workers, stages=clock):
        pass
    report = clock.report(time.perf_counter() - start)
    assert set(report["stages_s"]) == set(STAGES) and report["images"] == 12
    assert abs(report["unaccounted_s"]) <= 0.1 * report["wall_s"]
    assert report["loader_cpu_s"]["decode"] > 0 and report["loader_cpu_s"]["preprocess"] > 0


def test_the_crop_percentile_reads_the_histogram_exactly():
    rng = np.random.default_rng(0)
    for n in (1, 2, 5, 99, 100, 101, 4096):
        for _ in range(20):
            values = rng.integers(0, 256, n).astype(np.uint8)
            if rng.random() < 0.3:
                values[:] = rng.integers(0, 256)
            histogram = np.bincount(values, minlength=256)
            for q in (0, 37.5, 99, 100):
                assert histogram_percentile(histogram, q) == pytest.approx(np.percentile(values, q), abs=1e-9)


def test_bench_inputs_are_distinct_fundus_photos(tmp_path):
    pytest.importorskip("skimage")
    from focus_eval.bench.inputs import fundus_jpegs

    paths = fundus_jpegs(tmp_path, (512, 384), 3)
    pixels = []
    for path in paths:
        with Image.open(path) as image:
            assert image.size == (512, 384) and image.format == "JPEG"
            rgb = image.convert("RGB")
        left, top, right, bottom = fundus_box(rgb)
        assert right - left == bottom - top and 340 <= right - left <= 420  # the eye fills the frame's height
        array = np.asarray(rgb, dtype=np.int16)
        assert array[:, :40].mean() < 15 and array[150:230, 220:290, 0].mean() > 100  # black border, red fundus
        pixels.append(array)
    assert np.abs(pixels[0] - pixels[1]).mean() > 3 and np.abs(pixels[1] - pixels[2]).mean() > 3

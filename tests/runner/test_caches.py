"""The prepared image cache and the embedding cache follow the files they were made from: a changed source
image is read again, and a truncated or mismatched entry of either cache is rebuilt on the next run, which then
gives the numbers of a fresh run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from helpers.records import synthetic_root

from focus_eval.cli import main
from focus_eval.data.content import bytes_digest
from focus_eval.data.prepare import SOURCES_FILE, prepare_records, prepared_dir, prepared_path
from focus_eval.data.registry import load_dataset, read_dataset
from focus_eval.runner.embed_cache import EmbeddingCache

MODEL, DATASET, TASK, SIZE = "tiny-clip", "synth_desktop", "dr_synth_desktop", 224


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    root = synthetic_root(tmp_path_factory, "cache-data", n=40, seed=5)
    shutil.rmtree(root / "synth_mobile")
    return root


@pytest.fixture
def data(pristine, tmp_path) -> Path:
    """A private copy of the synthetic data (tests overwrite its images)."""
    shutil.copytree(pristine, tmp_path / "data")
    return tmp_path / "data"


def prepare(root: Path) -> None:
    assert main(["datasets", "prepare", DATASET, "--data-root", str(root), "--size", str(SIZE), "--workers", "1"]) == 0


def evaluate(root: Path, out: Path, cache: Path, *extra: str) -> dict[str, str]:
    """Run the zero-shot unit; return its sample lines (the file contents) by file name."""
    argv = ["--model", MODEL, "--tasks", TASK, "--methods", "zero_shot", "--data-root", str(root), "--output-path",
            str(out), "--cache-dir", str(cache), "--no-progress", "--num-workers", "0", "--n-boot", "20", *extra]
    assert main(argv) == 0
    return {p.name: p.read_text() for p in sorted((out / MODEL / "samples").glob("*.jsonl"))}


def scores(samples: dict[str, str]) -> list[float]:
    """The scores of the test rows (the file also holds the validation rows, whose images stay as they were)."""
    (text,) = samples.values()
    return [row["score"] for row in map(json.loads, text.splitlines()) if row["split"] == "test"]


def assert_same(got: dict[str, str], expected: dict[str, str]) -> None:
    """Equal sample files, scores to 1e-6: an image embedded again alone lands in a batch of another size."""
    assert got.keys() == expected.keys()
    for name in expected:
        rows = [json.loads(line) for line in got[name].splitlines()]
        want = [json.loads(line) for line in expected[name].splitlines()]
        assert [{**r, "score": None} for r in rows] == [{**r, "score": None} for r in want]
        np.testing.assert_allclose([r["score"] for r in rows], [r["score"] for r in want], rtol=0, atol=1e-6)


def test_images_overwritten_after_prepare_change_the_results(data, tmp_path):
    prepare(data)
    before = evaluate(data, tmp_path / "r1", tmp_path / "cache")
    assert np.ptp(scores(before)) > 1e-3
    test_images = [r.path for r in load_dataset(DATASET, data).split("test")]
    flat = Image.new("RGB", (96, 96), (150, 60, 30))
    for path in test_images:
        flat.save(path)
    after = evaluate(data, tmp_path / "r2", tmp_path / "cache")
    assert after != before
    assert np.ptp(scores(after)) < 1e-6  # every test image is now the same picture
    # and the run equals one on a freshly prepared copy with an empty embedding cache
    fresh = tmp_path / "fresh"
    shutil.copytree(data, fresh, ignore=shutil.ignore_patterns(".prepared"))
    prepare(fresh)
    assert_same(evaluate(fresh, tmp_path / "r3", tmp_path / "cache-fresh"), after)


def test_a_truncated_prepared_copy_is_rebuilt_on_the_next_run(data, tmp_path, capsys):
    prepare(data)
    before = evaluate(data, tmp_path / "r1", tmp_path / "cache")
    record = load_dataset(DATASET, data).split("test")[0]
    copy = prepared_path(data, DATASET, SIZE, record)
    whole = copy.read_bytes()
    copy.write_bytes(whole[: len(whole) // 3])
    capsys.readouterr()
    assert_same(evaluate(data, tmp_path / "r2", tmp_path / "cache"), before)
    assert "rebuilt 1 prepared image(s)" in capsys.readouterr().err
    assert copy.read_bytes() == whole


def test_prepare_rebuilds_copies_whose_source_changed(data, capsys):
    records = read_dataset(DATASET, data).records
    first = prepare_records(records, data, DATASET, 32, workers=1, progress=False)
    assert (first.written, first.already_prepared, first.stale) == (len(records), 0, 0)
    stamps = json.loads((prepared_dir(data, DATASET, 32) / SOURCES_FILE).read_text())
    assert set(stamps) == {r.relpath for r in records}
    assert set(stamps[records[0].relpath]) == {"digest", "decode", "copy_size"}

    Image.new("RGB", (80, 80), (10, 200, 10)).save(records[0].path)
    assert main(["datasets", "prepare", DATASET, "--data-root", str(data), "--size", "32", "--workers", "1"]) == 0
    assert (f"{len(records)} images, 1 written (1 stale: source changed, copy damaged or older decoding rule), "
            f"{len(records) - 1} already prepared" in capsys.readouterr().out)
    with Image.open(prepared_path(data, DATASET, 32, records[0])) as image:
        assert image.getpixel((16, 16))[1] > 150  # the new, green picture


def test_a_touched_source_with_the_same_bytes_keeps_its_copy(data):
    import os

    records = read_dataset(DATASET, data).records
    prepare_records(records, data, DATASET, 32, workers=1, progress=False)
    st = os.stat(records[0].path)
    os.utime(records[0].path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    again = prepare_records(records, data, DATASET, 32, workers=1, progress=False)
    assert (again.written, again.already_prepared) == (0, len(records))
    stamps = json.loads((prepared_dir(data, DATASET, 32) / SOURCES_FILE).read_text())
    assert stamps[records[0].relpath]["digest"] == bytes_digest(records[0].path.read_bytes())  # the bytes decide


def shards(cache: Path) -> list[Path]:
    return sorted(cache.rglob("shard-*.npz"))


def test_a_truncated_embedding_shard_is_embedded_again(data, tmp_path, capsys):
    cache = tmp_path / "cache"
    before = evaluate(data, tmp_path / "r1", cache)
    (shard,) = shards(cache)
    shard.write_bytes(shard.read_bytes()[:300])
    capsys.readouterr()
    assert_same(evaluate(data, tmp_path / "r2", cache), before)
    err = capsys.readouterr().err
    assert f"embedding cache {shard}: unreadable" in err and "embedded again" in err
    (healed,) = shards(cache)
    assert healed != shard and not shard.exists()
    assert_same(evaluate(data, tmp_path / "r3", cache), before)
    assert "embedding cache" not in capsys.readouterr().err


def test_a_shard_of_another_width_or_shape_is_embedded_again(data, tmp_path, capsys):
    cache = tmp_path / "cache"
    before = evaluate(data, tmp_path / "r1", cache)
    (shard,) = shards(cache)
    with np.load(shard) as arrays:
        keys, vectors = arrays["keys"], arrays["vectors"]
    shard.unlink()
    store = EmbeddingCache(cache, shard.parent.parent.name, DATASET)
    store.write(list(keys), np.zeros((len(keys), vectors.shape[1] + 3), dtype=np.float32))
    capsys.readouterr()
    assert_same(evaluate(data, tmp_path / "r2", cache), before)
    assert f"vectors of width {vectors.shape[1] + 3}, the encoder gives {vectors.shape[1]}" in capsys.readouterr().err
    np.savez(shard.parent / "shard-r0-short.npz", keys=keys, vectors=vectors[:-1])
    assert_same(evaluate(data, tmp_path / "r3", cache), before)
    assert f"{len(keys)} keys but {len(keys) - 1} vectors" in capsys.readouterr().err


def test_cache_files_get_the_mode_the_umask_allows(data, tmp_path):
    """Atomic writes start from a private temporary file; the result must still be readable by others (a
    shared cache), exactly as a plainly written file would be."""
    import os

    previous = os.umask(0o022)
    try:
        records = read_dataset(DATASET, data).records[:2]
        prepare_records(records, data, DATASET, 32, workers=1, progress=False)
        shard = EmbeddingCache(tmp_path / "cache", "key", DATASET).write(["a|1"], np.zeros((1, 4), np.float32))
        written = [prepared_path(data, DATASET, 32, records[0]), prepared_dir(data, DATASET, 32) / SOURCES_FILE,
                   shard]
        assert {oct(path.stat().st_mode & 0o777) for path in written} == {"0o644"}
    finally:
        os.umask(previous)

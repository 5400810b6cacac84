"""The caches and the unit fingerprint know an image by the digest of its bytes and by the decoding rule: a file
replaced by a different one of the same byte size with its modification time put back (what ``cp -p``,
``rsync -a`` or ``tar x`` leave) is embedded and prepared again, and so is every image when the rule changes."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from focus_eval.cli import main
from focus_eval.data import content
from focus_eval.data.registry import load_dataset, read_dataset

MODEL, DATASET, TASK = "tiny-clip", "synth_desktop", "dr_synth_desktop"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    from focus_eval.synth.datasets import write_synthetic

    root = tmp_path_factory.mktemp("content-data")
    write_synthetic(root, n=40, seed=9)
    shutil.rmtree(root / "synth_mobile")
    return root


@pytest.fixture
def data(pristine, tmp_path) -> Path:
    shutil.copytree(pristine, tmp_path / "data")
    return tmp_path / "data"


def uncompressed(pixels: np.ndarray) -> bytes:
    """A PNG whose byte size depends on the picture's dimensions only."""
    import io

    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG", compress_level=0)
    return buffer.getvalue()


def first_test_image(root: Path) -> tuple[str, Path]:
    record = sorted(load_dataset(DATASET, root).split("test"), key=lambda r: r.image_id)[0]
    return record.image_id, Path(record.path)


def replace_keeping_size_and_times(path: Path) -> None:
    """Overwrite ``path`` (an uncompressed PNG) with its negative: other pixels, the same byte size, and the
    access and modification times it had."""
    st = path.stat()
    with Image.open(path) as image:
        negative = 255 - np.asarray(image.convert("RGB"))
    path.write_bytes(uncompressed(negative))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def evaluate(root: Path, out: Path, cache: Path, *extra: str) -> dict[str, float]:
    argv = ["--model", MODEL, "--tasks", TASK, "--methods", "zero_shot", "--data-root", str(root), "--output-path",
            str(out), "--cache-dir", str(cache), "--no-progress", "--num-workers", "0", "--n-boot", "10", *extra]
    assert main(argv) == 0
    rows = [json.loads(line) for line in (out / MODEL / "samples" / f"{TASK}.zero_shot.jsonl").read_text().splitlines()]
    return {r["image_id"]: r["score"] for r in rows}


def test_a_same_size_replacement_with_its_times_kept_is_embedded_again(data, tmp_path, capsys):
    image_id, path = first_test_image(data)
    with Image.open(path) as image:
        path.write_bytes(uncompressed(np.asarray(image.convert("RGB"))))
    cache = tmp_path / "cache"
    before = evaluate(data, tmp_path / "r1", cache, "--no-prepared")
    replace_keeping_size_and_times(path)
    after = evaluate(data, tmp_path / "r2", cache, "--no-prepared")
    assert abs(after[image_id] - before[image_id]) > 1e-4  # the new picture's vector, not the cached one
    others = [k for k in before if k != image_id]
    np.testing.assert_allclose([after[k] for k in others], [before[k] for k in others], rtol=0, atol=1e-6)
    capsys.readouterr()
    argv = ["--model", MODEL, "--tasks", TASK, "--methods", "zero_shot", "--data-root", str(data), "--output-path",
            str(tmp_path / "r1"), "--cache-dir", str(cache), "--no-progress", "--num-workers", "0", "--n-boot", "10",
            "--no-prepared"]
    assert main(argv) == 2  # the finished unit was computed from the old picture: resume stops and says so
    assert "data_fingerprint" in capsys.readouterr().err


def test_a_same_size_replacement_with_its_times_kept_is_prepared_again(data, tmp_path, capsys):
    from focus_eval.data.prepare import prepared_path

    image_id, path = first_test_image(data)
    with Image.open(path) as image:
        path.write_bytes(uncompressed(np.asarray(image.convert("RGB"))))
    prepare = ["datasets", "prepare", DATASET, "--data-root", str(data), "--size", "224", "--workers", "1"]
    assert main(prepare) == 0
    record = next(r for r in load_dataset(DATASET, data).records if r.image_id == image_id)
    copy = prepared_path(data, DATASET, 224, record)
    old_copy = copy.read_bytes()
    before = evaluate(data, tmp_path / "r1", tmp_path / "cache")
    replace_keeping_size_and_times(path)
    capsys.readouterr()
    after = evaluate(data, tmp_path / "r2", tmp_path / "cache")  # the run rebuilds the stale copy first
    assert "rebuilt 1 prepared image(s)" in capsys.readouterr().err
    assert copy.read_bytes() != old_copy
    assert abs(after[image_id] - before[image_id]) > 1e-4
    assert main(prepare) == 0
    assert "0 written" in capsys.readouterr().out  # and the rebuilt copy counts as current


def test_a_remembered_digest_needs_the_same_inode_size_and_times(tmp_path, monkeypatch):
    monkeypatch.setenv("FOCUS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(content, "RACY_NS", 0)  # remember files changed just now (the test cannot wait)
    path = tmp_path / "images" / "a.png"
    path.parent.mkdir()
    path.write_bytes(uncompressed(np.full((8, 8, 3), 40, dtype=np.uint8)))
    time.sleep(0.05)  # past the file's timestamp tick
    first = content.file_digest(path)
    assert first == content.bytes_digest(path.read_bytes())
    content.save_digests()
    monkeypatch.setattr(content, "_MEMOS", {})  # as a later process: the memo is read from its file

    def refuse(p):
        raise AssertionError(f"{p} read again although unchanged")

    read = content.read_with_digest
    monkeypatch.setattr(content, "read_with_digest", refuse)
    assert content.file_digest(path) == first  # a stat suffices
    monkeypatch.setattr(content, "read_with_digest", read)
    replace_keeping_size_and_times(path)  # same size, same mtime: only the ctime tells
    monkeypatch.setattr(content, "_MEMOS", {})
    assert content.file_digest(path) == content.bytes_digest(path.read_bytes()) != first


def test_a_file_changed_just_now_is_not_remembered(tmp_path, monkeypatch):
    monkeypatch.setenv("FOCUS_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "a.bin"
    path.write_bytes(b"fresh")
    content.file_digest(path)
    content.save_digests()
    assert not list((tmp_path / "cache").rglob("*.json"))  # its ctime is within RACY_NS of the read


def test_the_decoding_rule_is_part_of_the_keys_and_the_fingerprint(data, tmp_path, monkeypatch, capsys):
    from focus_eval.runner.embed_cache import cache_key_for
    from focus_eval.runner.provenance import decode_version

    _, path = first_test_image(data)
    key = cache_key_for("a", path)
    monkeypatch.setattr("focus_eval.data.images.DECODE_VERSION", 99)
    assert cache_key_for("a", path) != key and decode_version() == 99
    monkeypatch.undo()

    cache = tmp_path / "cache"
    evaluate(data, tmp_path / "r1", cache, "--no-prepared")
    shards = set(cache.rglob("shard-*.npz"))
    monkeypatch.setattr("focus_eval.data.images.DECODE_VERSION", 99)
    capsys.readouterr()
    argv = ["--model", MODEL, "--tasks", TASK, "--methods", "zero_shot", "--data-root", str(data), "--output-path",
            str(tmp_path / "r1"), "--cache-dir", str(cache), "--no-progress", "--num-workers", "0", "--n-boot", "10",
            "--no-prepared"]
    assert main(argv) == 2
    assert "decode_version" in capsys.readouterr().err
    evaluate(data, tmp_path / "r2", cache, "--no-prepared")
    assert set(cache.rglob("shard-*.npz")) - shards  # every image embedded again under the new rule


def test_prepared_copies_of_an_older_decoding_rule_are_rebuilt(data, monkeypatch, capsys):
    prepare = ["datasets", "prepare", DATASET, "--data-root", str(data), "--size", "32", "--workers", "1"]
    assert main(prepare) == 0
    n = len(read_dataset(DATASET, data).records)
    capsys.readouterr()
    monkeypatch.setattr("focus_eval.data.images.DECODE_VERSION", 99)
    assert main(prepare) == 0
    assert f"{n} written ({n} stale" in capsys.readouterr().out

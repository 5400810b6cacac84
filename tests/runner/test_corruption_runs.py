"""--corruptions: corrupted images are decoded the same way in every run, are their own units with the
corruption in the fingerprint and the results line, never share cached vectors with clean images, and lower
the score; ``report corruptions`` gives the drop."""

import json

import numpy as np
import pytest
from helpers.records import synthetic_root
from PIL import Image

from focus_eval.cli import main
from focus_eval.data import corruptions
from focus_eval.errors import FocusError
from focus_eval.options import RunOptions
from focus_eval.results.schema import read_jsonl


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return synthetic_root(tmp_path_factory, "data", n=160, seed=7)


def picture():
    gen = np.random.default_rng(0)
    return Image.fromarray(gen.integers(40, 200, (64, 64, 3), dtype=np.uint8))


@pytest.mark.parametrize("kind", corruptions.KINDS)
def test_each_kind_is_seeded_by_the_image_and_grows_with_severity(kind):
    image = picture()
    base = np.asarray(image, dtype=np.float32)
    again = [np.asarray(corruptions.apply(image, "img-1", f"{kind}:{s}"), dtype=np.float32) for s in (1, 2, 3)]
    assert np.array_equal(again[2], np.asarray(corruptions.apply(image, "img-1", f"{kind}:3"), dtype=np.float32))
    change = [np.abs(a - base).mean() for a in again]
    assert 0 < change[0] < change[2]


def test_the_spec_is_checked():
    assert [c.label for c in corruptions.parse("blur:3,jpeg")] == ["blur:3", "jpeg:1", "jpeg:2", "jpeg:3"]
    with pytest.raises(FocusError, match="unknown kind"):
        corruptions.parse("fog:1")
    with pytest.raises(FocusError, match="severity"):
        corruptions.parse("blur:4")


def test_blur_lowers_auroc_and_is_its_own_unit(tmp_path, data_root):
    out = tmp_path / "out"
    assert main(["--no-progress", "--num-workers", "0", "--n-boot", "50", "--model", "efficientnet-lite0",
                 "--tasks", "dr_synth_desktop", "--methods", "linear_probe", "--data-root", str(data_root),
                 "--output-path", str(out), "--cache-dir", str(tmp_path / "cache"), "--corruptions", "blur:3"]) == 0
    rows = {r["task"]: r for r in read_jsonl(out / "efficientnet-lite0" / "results.jsonl")}
    assert set(rows) == {"dr_synth_desktop", "dr_synth_desktop@blur3"}
    blurred = rows["dr_synth_desktop@blur3"]
    assert blurred["extra"]["corruption"] == "blur:3" and "corruption" not in rows["dr_synth_desktop"]["extra"]
    assert blurred["metrics"]["auroc"] < rows["dr_synth_desktop"]["metrics"]["auroc"]
    assert main(["report", "corruptions", str(out), "--json", str(tmp_path / "c.json")]) == 0
    (row,) = json.loads((tmp_path / "c.json").read_text())["rows"]
    assert row["drop"] == pytest.approx(rows["dr_synth_desktop"]["metrics"]["auroc"] - blurred["metrics"]["auroc"])
    assert (row["corruption"], row["severity"]) == ("blur", 3)


def test_clean_and_corrupted_vectors_never_share_a_cache_key(tmp_path, data_root):
    from focus_eval.runner.embed_cache import EmbeddingCache
    from focus_eval.runner.run import Runner

    runner = Runner(RunOptions(model="tiny-vit", tasks="dr_synth_desktop", data_root=data_root,
                               output_path=tmp_path / "out", cache_dir=tmp_path / "cache", corruptions="jpeg:2",
                               methods=["linear_probe"], progress=False, num_workers=0))
    runner.run()
    adapter = runner.load_adapter()
    keys = set(EmbeddingCache(tmp_path / "cache", adapter.cache_key, "synth_desktop").load())
    clean = {k for k in keys if "corrupted" not in k}
    corrupted = {k for k in keys if k.endswith("|corrupted:jpeg:2")}
    # every image clean (the probe fits on clean training images), the test images also corrupted
    tests = [r for r in runner.dataset_load.records if r.split == "test" and r.label("dr") is not None]
    assert len(corrupted) == len(tests) and len(clean) > len(tests)
    prints = {u.task.name: runner.fingerprint(u) for u in runner.units}
    assert prints["dr_synth_desktop@jpeg2"]["corruption"] == "jpeg:2"
    assert "corruption" not in prints["dr_synth_desktop"]

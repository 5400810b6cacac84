"""The one strict-loading rule every adapter family uses, and the digests that preset hashes, cache keys and
training records are built from (their values must never drift: cached results are keyed by them)."""

import hashlib
import os
import time
from pathlib import Path

import pytest

from focus_eval import digests
from focus_eval.adapters.checkpoints import KeyMap, check_hf_loading, check_loaded_keys, load_state_strict
from focus_eval.errors import FocusError
from focus_eval.presets import load_preset

# ----- strict loading


def test_keys_outside_the_allow_lists_are_named():
    with pytest.raises(FocusError) as err:
        check_loaded_keys("model 'm'", missing=["pooler.dense.weight", "head.weight"],
                          unexpected=["extra.bias"], allow_missing=["pooler.*"])
    assert str(err.value) == ("model 'm': weights did not load: missing keys (1): head.weight; "
                              "unexpected keys (1): extra.bias")


def test_allow_lists_as_globs_or_regular_expressions():
    check_loaded_keys("m", missing=["pooler.dense.weight"], allow_missing=["pooler.*"])
    check_loaded_keys("m", missing=["model.layers.1.mlp.down_proj.weight"], allow_missing=[r"layers\.1\.mlp"],
                      regex=True)
    with pytest.raises(FocusError, match=r"missing keys \(1\): model\.layers\.1\.mlp"):
        # the same pattern read as a glob matches nothing
        check_loaded_keys("m", missing=["model.layers.1.mlp.down_proj.weight"], allow_missing=[r"layers\.1\.mlp"])


def test_a_transformers_report_goes_through_the_same_rule():
    report = {"missing_keys": [], "unexpected_keys": ["pooler.dense.bias"],
              "mismatched_keys": [("lm_head.weight", (4, 2), (5, 2))], "error_msgs": ["size mismatch"]}
    with pytest.raises(FocusError) as err:
        check_hf_loading(report, [], ["pooler.*"], "model 'm' from /x")
    assert str(err.value).startswith("model 'm' from /x: weights did not load: mismatched shapes (1): ")
    assert "lm_head.weight" in str(err.value) and str(err.value).endswith("; size mismatch")
    report["error_msgs"] = []
    check_hf_loading(report, [], ["pooler.*"], "m", allow_mismatched=["lm_head"], regex=True)


def test_a_publisher_checkpoint_goes_through_the_same_rule():
    import torch

    module = torch.nn.Linear(2, 3)
    state = {"weight": torch.ones(3, 2), "stray": torch.zeros(1)}
    with pytest.raises(FocusError, match=r"^w: the checkpoint does not match the model: missing keys \(1\): bias; "
                                         r"unexpected keys \(1\): stray$"):
        load_state_strict(module, dict(state), KeyMap(), "w")
    del state["stray"]
    load_state_strict(module, state, KeyMap(allow_missing=["bias"]), "w")
    assert torch.equal(module.weight, torch.ones(3, 2))


# ----- digests


def test_json_digest_is_sha256_of_sorted_key_json():
    import json

    value = {"b": [1, 2.5, None], "a": {"z": "é", "y": True}, "p": Path("/x")}
    expected = hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()
    assert digests.json_digest(value) == expected
    assert expected == "0fffe2b16d7294d0748d08642771de1c6d063f0923aed64ba8d03c3aedff9c95"


def test_preset_hash_is_the_json_digest_of_its_fields():
    preset = load_preset("tiny-vit")
    fields = {k: v for k, v in preset.to_dict().items() if k != "path"}
    assert preset.hash == digests.json_digest(fields)[:16]
    assert load_preset("tiny-vit", {"max_length": 3}).hash != preset.hash


def test_file_digests_and_the_remembered_one(tmp_path, monkeypatch):
    monkeypatch.setenv("FOCUS_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "w.bin"
    path.write_bytes(b"weights" * 1000)
    assert digests.cached_file_sha256(path) == hashlib.sha256(b"weights" * 1000).hexdigest()
    assert not list((tmp_path / "cache" / "sha256").iterdir())  # written just now: not remembered yet
    monkeypatch.setattr(digests, "RACY_NS", 0)  # remember files changed just now (the test cannot wait)
    time.sleep(0.05)  # past the file's timestamp tick
    expected = hashlib.sha256(b"weights" * 1000).hexdigest()
    assert digests.file_sha256(path) == digests.cached_file_sha256(path) == expected
    (memo,) = (tmp_path / "cache" / "sha256").iterdir()
    memo.write_text("remembered")  # a second call reads the memo instead of hashing again
    assert digests.cached_file_sha256(path) == "remembered"
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1000))  # a changed file is hashed again
    assert digests.cached_file_sha256(path) == expected
    time.sleep(0.05)
    stat = path.stat()
    path.write_bytes(b"WEIGHTS" * 1000)  # the same size, its times put back: the ctime still tells
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert digests.cached_file_sha256(path) == hashlib.sha256(b"WEIGHTS" * 1000).hexdigest()


def test_folder_digest_covers_the_names_and_contents_of_model_files(tmp_path, monkeypatch):
    monkeypatch.setenv("FOCUS_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "model"
    (folder / "sub").mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "sub" / "model.safetensors").write_bytes(b"abc")
    lines = [f"config.json:{hashlib.sha256(b'{}').hexdigest()}",
             f"sub/model.safetensors:{hashlib.sha256(b'abc').hexdigest()}"]
    first = digests.folder_digest(folder)
    assert first == hashlib.sha256("\n".join(lines).encode()).hexdigest()
    (folder / "README.md").write_text("not a model file")
    assert digests.folder_digest(folder) == first
    (folder / "config.json").rename(folder / "other.json")
    assert digests.folder_digest(folder) != first


def test_text_digest_of_training_examples():
    from focus_eval.finetune.data import Example, data_hash

    rows = [Example("b", "p1", "x", 1, "q"), Example("a", "p2", "y", 0, "q")]
    assert data_hash(rows) == digests.text_sha256("a\t0\nb\t1\n") == hashlib.sha256(b"a\t0\nb\t1\n").hexdigest()

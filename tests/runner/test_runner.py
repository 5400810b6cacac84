"""The runner end to end on synthetic data: outputs with every SPEC key, one encoder pass per image, resume
after a kill, and two processes agreeing with one."""

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from focus_eval.cli import main
from focus_eval.results.schema import OPTIONAL_RESULT_KEYS, RESULT_KEYS, SAMPLE_KEYS, read_jsonl, validate_result_dict
from helpers.prepared import zero_raw_images
from helpers.records import synthetic_root

TASKS = "dr_synth_desktop,glaucoma_synth_desktop,dr_synth_mobile"


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return synthetic_root(tmp_path_factory, "data", n=80, seed=3)


def run_cli(*args) -> int:
    return main(["--no-progress", "--num-workers", "0", "--n-boot", "200", *args])


def results_without_time(model_dir: Path) -> list[dict]:
    rows = read_jsonl(model_dir / "results.jsonl")
    for r in rows:
        r.pop("created", None)
    return rows


def samples_of(model_dir: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((model_dir / "samples").glob("*.jsonl"))}


@pytest.mark.slow
def test_efficientnet_lite0_on_synthetic_tasks(tmp_path, data_root):
    out = tmp_path / "results"
    rc = run_cli("--model", "efficientnet-lite0", "--tasks", "*_synth_desktop", "--data-root", str(data_root),
                 "--output-path", str(out), "--cache-dir", str(tmp_path / "cache"))
    assert rc == 0
    model_dir = out / "efficientnet-lite0"
    rows = read_jsonl(model_dir / "results.jsonl")
    assert {r["task"] for r in rows} == {"dr_synth_desktop", "referable_dr_synth_desktop", "glaucoma_synth_desktop"}
    for r in rows:
        validate_result_dict(r)
        assert set(RESULT_KEYS) - set(OPTIONAL_RESULT_KEYS) <= set(r)  # binary lines omit output_type
        assert r["method"] == "linear_probe" and r["untrained"] is False
        assert r["n_errors"] == 0 and r["n"] == r["n_valid"]
    assert max(r["metrics"]["auroc"] for r in rows) > 0.7
    lines = [json.loads(x) for x in (model_dir / "samples" / "dr_synth_desktop.linear_probe.jsonl").read_text().splitlines()]
    assert lines and all(set(SAMPLE_KEYS) == set(x) for x in lines)
    assert len({x["image_id"] for x in lines}) == len(lines)
    splits = [x["split"] for x in lines]  # the test rows, then the validation rows
    assert splits == sorted(splits, key=["test", "val"].index) and set(splits) == {"test", "val"}
    assert next(r for r in rows if r["task"] == "dr_synth_desktop")["n"] == splits.count("test")
    manifest = json.loads(next(model_dir.glob("run-*.json")).read_text())
    assert manifest["preset"]["name"] == "efficientnet-lite0" and "dr_synth_desktop" in manifest["tasks"]


def test_each_image_is_embedded_once(tmp_path, data_root, monkeypatch):
    import focus_eval.adapters as adapters

    seen: list[int] = []
    original_load = adapters.load_adapter

    def counting_load(*args, **kwargs):
        adapter = original_load(*args, **kwargs)
        forward = adapter.model.forward

        def counted(*a, **kw):
            seen.append(1)
            return forward(*a, **kw)

        adapter.model.forward = counted
        original_embed = adapter.embed_images

        def embed(pixels):
            seen.append(len(pixels))
            return original_embed(pixels)

        adapter.embed_images = embed
        return adapter

    monkeypatch.setattr(adapters, "load_adapter", counting_load)
    common = ["--model", "tiny-clip", "--data-root", str(data_root), "--output-path", str(tmp_path / "r"),
              "--cache-dir", str(tmp_path / "cache")]
    assert run_cli(*common, "--tasks", "dr_synth_desktop", "--methods", "linear_probe") == 0
    first = sum(seen)
    assert first > 0
    seen.clear()
    # a second task of the same dataset, and zero-shot after the probe: no encoder pass at all
    assert run_cli(*common, "--tasks", "glaucoma_synth_desktop,dr_synth_desktop") == 0
    assert sum(seen) == 0
    rows = read_jsonl(tmp_path / "r" / "tiny-clip" / "results.jsonl")
    assert {(r["task"], r["method"]) for r in rows} == {
        ("dr_synth_desktop", "linear_probe"), ("dr_synth_desktop", "zero_shot"),
        ("glaucoma_synth_desktop", "linear_probe"), ("glaucoma_synth_desktop", "zero_shot")}


@pytest.mark.slow
def test_resume_after_a_kill_gives_the_same_outputs(tmp_path, data_root, monkeypatch):
    common = ["--model", "tiny-vit", "--tasks", TASKS, "--data-root", str(data_root), "--batch-size", "8"]
    assert run_cli(*common, "--output-path", str(tmp_path / "clean"), "--cache-dir", str(tmp_path / "c1")) == 0

    from focus_eval.runner import embed_cache

    monkeypatch.setenv("FOCUS_EMBED_SHARD_IMAGES", "16")
    written = []
    original = embed_cache.EmbeddingCache.write

    def write_then_signal(self, keys, vectors, rank=0):
        path = original(self, keys, vectors, rank)
        written.append(path)
        if len(written) == 6:  # 80 images of the first dataset make 5 shards: this is inside the second
            os.kill(os.getpid(), signal.SIGINT)
        return path

    monkeypatch.setattr(embed_cache.EmbeddingCache, "write", write_then_signal)
    args = [*common, "--output-path", str(tmp_path / "resumed"), "--cache-dir", str(tmp_path / "c2")]
    assert run_cli(*args) == 130  # the command line's answer to SIGINT
    partial = tmp_path / "resumed" / "tiny-vit"
    assert len(read_jsonl(partial / "results.jsonl")) == 2  # the first dataset's units had finished
    monkeypatch.setattr(embed_cache.EmbeddingCache, "write", original)
    assert run_cli(*args) == 0
    clean = tmp_path / "clean" / "tiny-vit"
    assert results_without_time(partial) == results_without_time(clean)
    assert samples_of(partial) == samples_of(clean)


@pytest.mark.skipif(shutil.which("torchrun") is None and not Path(sys.executable).with_name("torchrun").exists(),
                    reason="torchrun not installed")
@pytest.mark.slow
def test_two_processes_match_one(tmp_path, data_root):
    args = ["--model", "tiny-vit", "--tasks", TASKS, "--data-root", str(data_root), "--device", "cpu",
            "--batch-size", "8", "--num-workers", "0", "--n-boot", "200", "--no-progress"]
    assert main([*args, "--output-path", str(tmp_path / "one"), "--cache-dir", str(tmp_path / "c1")]) == 0
    torchrun = shutil.which("torchrun") or str(Path(sys.executable).with_name("torchrun"))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([torchrun, "--nproc_per_node", "2", "--master_port", "29533", "-m", "focus_eval", *args,
                           "--output-path", str(tmp_path / "two"), "--cache-dir", str(tmp_path / "c2")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    shards = list((tmp_path / "c2").rglob("shard-r1-*.npz"))
    assert shards, "the second process embedded nothing"
    assert results_without_time(tmp_path / "two" / "tiny-vit") == results_without_time(tmp_path / "one" / "tiny-vit")
    assert samples_of(tmp_path / "two" / "tiny-vit") == samples_of(tmp_path / "one" / "tiny-vit")


def test_external_split_file_is_recorded_and_part_of_resume(tmp_path, data_root, capsys):
    from focus_eval.data.registry import load_dataset

    load = load_dataset("synth_desktop", data_root)
    rows = sorted(load.records, key=lambda r: r.image_id)
    # a reference-style image-level file: the two eyes of the first patient straddle train and test
    lines = ["image_id,split"] + [f"{r.image_id},{'test' if i % 3 == 0 else 'train'}" for i, r in enumerate(rows)]
    split_file = tmp_path / "split.csv"
    split_file.write_text("\n".join(lines) + "\n")
    common = ["--model", "tiny-vit", "--tasks", "dr_synth_desktop", "--data-root", str(data_root),
              "--output-path", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "cache"),
              "--split-file", f"synth_desktop={split_file}"]
    assert run_cli(*common) == 0
    assert "occur in more than one" in capsys.readouterr().err
    result = read_jsonl(tmp_path / "r" / "tiny-vit" / "results.jsonl")[0]
    split = result["extra"]["split_policy"]
    assert split["split_source"].startswith("file:") and split["patient_overlap"]["count"] > 0
    assert run_cli(*common) == 0 and "already done 1" in capsys.readouterr().out
    split_file.write_text("\n".join(lines[:1] + [line.replace(",train", ",val") for line in lines[1:]]) + "\n")
    assert run_cli(*common) == 2  # the split changed: the finished unit is not reused, and nothing is replaced
    assert "split_file_sha256" in capsys.readouterr().err
    run_cli(*common, "--overwrite")  # the probe has no train split now: evaluated again, and fails clearly
    out = capsys.readouterr()
    assert "already done 0" in out.out and "train" in out.err


@pytest.mark.slow
def test_mllm_prompt_run_resumes_from_its_last_written_sample(tmp_path, data_root, monkeypatch):
    from focus_eval.adapters.mllm import MLLMScorer

    common = ["--model", "tiny-medgemma", "--tasks", "dr_synth_*", "--data-root", str(data_root),
              "--batch-size", "4"]
    assert run_cli(*common, "--output-path", str(tmp_path / "clean")) == 0
    clean = tmp_path / "clean" / "tiny-medgemma"
    rows = read_jsonl(clean / "results.jsonl")
    assert {r["task"] for r in rows} == {"dr_synth_desktop", "dr_synth_mobile"}
    for r in rows:
        validate_result_dict(r)
        assert r["method"] == "prompt" and r["untrained"] is True
        samples = read_jsonl(clean / "samples" / f"{r['task']}.prompt.jsonl")
        assert {s["split"] for s in samples} == {"test", "val"}  # the results line counts the test rows
        assert r["n_unparsed"] == sum(1 for s in samples if s["parsed"] is False and s["split"] == "test")
        assert all(s["score"] == s["p_yes"] and s["text"] is not None for s in samples)

    calls = []
    original = MLLMScorer.score_and_generate_multi

    def answer_then_signal(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGINT)
        return out

    monkeypatch.setattr(MLLMScorer, "score_and_generate_multi", answer_then_signal)
    args = [*common, "--output-path", str(tmp_path / "resumed")]
    assert run_cli(*args) == 130
    parts = list((tmp_path / "resumed" / "tiny-medgemma" / "samples" / ".parts").glob("*.jsonl"))
    assert parts and not (tmp_path / "resumed" / "tiny-medgemma" / "results.jsonl").exists()
    monkeypatch.setattr(MLLMScorer, "score_and_generate_multi", original)
    assert run_cli(*args) == 0
    resumed = tmp_path / "resumed" / "tiny-medgemma"
    assert samples_of(resumed) == samples_of(clean)
    assert results_without_time(resumed) == results_without_time(clean)


@pytest.mark.slow
def test_max_new_tokens_governs_the_answer_and_is_recorded(tmp_path, data_root, capsys):
    texts, recorded = {}, {}
    for n in (1, 6):
        out = tmp_path / f"n{n}"
        assert run_cli("--model", "tiny-medgemma", "--tasks", "dr_synth_desktop", "--data-root", str(data_root),
                       "--limit", "6", "--model-args", f"max_new_tokens={n}", "--output-path", str(out)) == 0
        model_dir = out / "tiny-medgemma" / "limit-6"  # a --limit run lands beside the full results
        (line,) = read_jsonl(model_dir / "results.jsonl")
        recorded[n] = line["extra"]["max_new_tokens"]
        texts[n] = [s["text"] for s in read_jsonl(model_dir / "samples" / "dr_synth_desktop.prompt.jsonl")]
    assert recorded == {1: 1, 6: 6}
    # the longer answer starts with the one-token answer (greedy decoding from the same prefill)
    assert all(long.startswith(short) for short, long in zip(texts[1], texts[6]))
    assert sum(map(len, texts[6])) > sum(map(len, texts[1]))
    capsys.readouterr()
    assert run_cli("--model", "tiny-medgemma", "--tasks", "dr_synth_desktop", "--data-root", str(data_root),
                   "--model-args", "max_new_tokenz=3", "--output-path", str(tmp_path / "typo")) == 2
    err = capsys.readouterr().err
    assert "max_new_tokenz" in err and "max_new_tokens" in err


@pytest.mark.slow
def test_an_unreadable_image_becomes_a_sample_error_and_the_run_goes_on(tmp_path, data_root):
    from focus_eval.data.registry import load_dataset

    root = tmp_path / "data"
    shutil.copytree(data_root / "synth_desktop", root / "synth_desktop")
    victim = sorted(load_dataset("synth_desktop", root).split("test"), key=lambda r: r.image_id)[0]
    victim.path.write_bytes(victim.path.read_bytes()[:200])  # a truncated JPEG
    for model in ("tiny-vit", "tiny-medgemma"):
        assert run_cli("--model", model, "--tasks", "dr_synth_desktop", "--data-root", str(root),
                       "--output-path", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "cache")) == 0
        [result] = read_jsonl(tmp_path / "r" / model / "results.jsonl")
        assert result["n_errors"] == 1 and result["n_valid"] == result["n"] - 1
        method = "linear_probe" if model == "tiny-vit" else "prompt"
        samples = {s["image_id"]: s for s in read_jsonl(tmp_path / "r" / model / "samples" / f"dr_synth_desktop.{method}.jsonl")}
        bad = samples[victim.image_id]
        assert bad["score"] is None and victim.relpath.split("/")[-1] in bad["error"]
        assert sum(1 for s in samples.values() if s["error"]) == 1


@pytest.mark.slow
def test_batch_size_auto_splits_a_batch_that_runs_out_of_memory(tmp_path, data_root, monkeypatch):
    import torch

    import focus_eval.adapters as adapters

    original_load = adapters.load_adapter
    sizes = []

    def small_memory_load(*args, **kwargs):
        adapter = original_load(*args, **kwargs)
        embed = adapter.embed_images

        def limited(pixels):
            sizes.append(len(pixels))
            if len(pixels) > 4:
                raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
            return embed(pixels)

        adapter.embed_images = limited
        return adapter

    monkeypatch.setattr(adapters, "load_adapter", small_memory_load)
    common = ["--model", "tiny-vit", "--tasks", "dr_synth_desktop", "--data-root", str(data_root)]
    with pytest.raises(torch.cuda.OutOfMemoryError):  # a fixed batch size is the user's to change
        run_cli(*common, "--batch-size", "16", "--output-path", str(tmp_path / "a"), "--cache-dir", str(tmp_path / "ca"))
    sizes.clear()
    assert run_cli(*common, "--batch-size", "auto", "--output-path", str(tmp_path / "b"),
                   "--cache-dir", str(tmp_path / "cb")) == 0
    assert sizes[:4] == [32, 16, 8, 4] and max(sizes[4:]) == 4  # halved until it fits, then kept
    [result] = read_jsonl(tmp_path / "b" / "tiny-vit" / "results.jsonl")
    assert result["n_errors"] == 0
    with pytest.raises(SystemExit) as exit_info:
        main(["--model", "tiny-vit", "--tasks", "dr_synth_desktop", "--batch-size", "big"])
    assert exit_info.value.code == 2


def test_the_runner_reads_the_prepared_cache_where_it_exists(tmp_path, data_root):
    root = tmp_path / "data"
    shutil.copytree(data_root / "synth_mobile", root / "synth_mobile")
    assert main(["datasets", "prepare", "synth_mobile", "--data-root", str(root), "--size", "224",
                 "--workers", "1"]) == 0
    zero_raw_images(root, "synth_mobile")  # raw files now unreadable, only the prepared copies work
    common = ["--model", "tiny-vit", "--tasks", "dr_synth_mobile", "--data-root", str(root),
              "--cache-dir", str(tmp_path / "cache")]
    assert run_cli(*common, "--output-path", str(tmp_path / "prepared")) == 0
    [result] = read_jsonl(tmp_path / "prepared" / "tiny-vit" / "results.jsonl")
    assert result["n_errors"] == 0
    assert run_cli(*common, "--output-path", str(tmp_path / "raw"), "--no-prepared") == 1  # nothing readable
    [result] = read_jsonl(tmp_path / "raw" / "tiny-vit" / "results.jsonl")
    assert result["n_errors"] == result["n"] and result["metrics"]["auroc"] is None

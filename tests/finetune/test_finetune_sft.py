"""focus-eval sft on a tiny random multimodal LLM: answer-only labels identical to the evaluation inputs, a
synthetic task the adapter learns, the files beside the adapter, resume, and runs with the adapter."""

import hashlib
import json
import shutil

import numpy as np
import pytest
import torch

from helpers.finetune_fixtures import easy_image, write_easy_synth
from focus_eval.adapters import load_adapter
from focus_eval.cli import main
from focus_eval.data.registry import load_dataset
from focus_eval.finetune.data import IGNORE_INDEX, AnswerEncoder, answer_loss
from focus_eval.metrics.core import auroc
from focus_eval.presets import load_preset
from focus_eval.runner.images import load_image
from focus_eval.task import TaskIndex

TASK = "dr_synth_desktop"
LEARN = ["--lr", "1e-2", "--max-steps", "40", "--batch-size", "8", "--grad-accum", "1", "--save-steps", "100"]


def sft_args(root, out, *extra):
    return ["sft", "--model", "tiny-medgemma", "--dataset", "synth_desktop", "--target", "dr", "--data-root",
            str(root), "--output", str(out), "--device", "cpu", "--num-workers", "0", "--no-progress", *extra]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Training loops of tiny models are fastest, and least disturbed by other processes, on one thread."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("finetune-data")
    write_easy_synth(root, n=80)
    return root


@pytest.fixture(scope="module")
def trained(data_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("adapters") / "sft-dr_synth_desktop"
    assert main(sft_args(data_root, out, *LEARN)) == 0
    return out


def test_scores(preset, records, images, adapter_dir=None):
    scorer = load_adapter(preset, device="cpu", **({"adapter_dir": str(adapter_dir)} if adapter_dir else {}))
    prompts = [TaskIndex().get(TASK).render_prompt(r) for r in records]
    return [row["p_yes"] for row in scorer.score_yes_no(images, prompts)]


test_scores.__test__ = False  # a helper, not a test


@pytest.mark.slow
def test_training_lowers_the_loss_and_raises_test_auroc(trained, data_root):
    log = [json.loads(line) for line in (trained / "training_log.jsonl").read_text().splitlines()]
    train = [row["train_loss"] for row in log if "train_loss" in row]
    val = [row["val_loss"] for row in log if "val_loss" in row]
    assert [row["step"] for row in log if "train_loss" in row] == list(range(1, 41))
    assert len(val) == 2 and val[-1] < 0.6 * val[0]
    assert np.mean(train[-5:]) < 0.5 * np.mean(train[:5])

    load = load_dataset("synth_desktop", data_root)
    records = sorted(load.split("test"), key=lambda r: r.image_id)
    labels = [r.dr for r in records]
    images = [load_image(str(r.path), 128) for r in records]
    preset = load_preset("tiny-medgemma")
    before = auroc(labels, test_scores(preset, records, images))
    after = auroc(labels, test_scores(preset, records, images, trained))
    assert after >= 0.9 and after - before >= 0.25, (before, after)


@pytest.mark.slow
def test_adapter_files_record_the_training(trained, data_root):
    info = json.loads((trained / "focus_eval_adapter.json").read_text())
    assert info["status"] == "finished" and info["base_model"] == "tiny-medgemma"
    assert (info["train_dataset"], info["train_target"], info["train_task"]) == ("synth_desktop", "dr", TASK)
    assert info["seed"] == 42 and info["steps"] == 40 and info["examples_seen"] == 320
    assert info["training"]["global_batch_size"] == 8 and info["training"]["processes"] == 1
    assert info["lora"]["target_modules"] == "all-linear" and info["lora"]["bias"] == "none"
    assert info["lora"]["modules_to_save"] is None and info["lora"]["r"] == 16
    train = sorted(load_dataset("synth_desktop", data_root).split("train"), key=lambda r: r.image_id)
    expected = hashlib.sha256("".join(sorted(f"{r.image_id}\t{r.dr}\n" for r in train)).encode()).hexdigest()
    assert info["data"]["data_hash"] == expected and info["data"]["n_train"] == len(train)
    config = json.loads((trained / "adapter_config.json").read_text())
    assert config["r"] == 16 and config["lora_alpha"] == 16 and config["modules_to_save"] is None
    assert not (trained / "checkpoints").exists()


@pytest.mark.slow
def test_a_finished_adapter_is_kept_and_other_settings_are_refused(trained, data_root, capsys):
    weights = trained / "adapter_model.safetensors"
    stamp = weights.stat().st_mtime_ns
    assert main(sft_args(data_root, trained, *LEARN)) == 0
    assert "already trained" in capsys.readouterr().out and weights.stat().st_mtime_ns == stamp
    changed = [v if v != "1e-2" else "5e-3" for v in LEARN]
    assert main(sft_args(data_root, trained, *changed)) == 2
    assert "other settings" in capsys.readouterr().err


@pytest.mark.slow
def test_evaluation_with_the_adapter_names_its_training(trained, data_root, tmp_path, capsys):
    args = ["--model", "tiny-medgemma", "--tasks", TASK, "--adapter", str(trained), "--data-root", str(data_root),
            "--output-path", str(tmp_path), "--device", "cpu", "--limit", "4", "--num-workers", "0",
            "--no-progress", "--n-boot", "10"]
    assert main(args) == 0
    line = json.loads((tmp_path / f"tiny-medgemma@{trained.name}" / "limit-4" / "results.jsonl").read_text().splitlines()[0])
    assert line["adapter"] == trained.name
    assert line["extra"]["adapter_train_dataset"] == "synth_desktop"
    assert line["extra"]["adapter_train_target"] == "dr"
    assert main(args) == 0 and "finished 0, already done 1" in capsys.readouterr().out
    # the same folder trained again: its evaluation is stale; the run stops naming it, --overwrite runs it again
    info_path = trained / "focus_eval_adapter.json"
    original = info_path.read_text()
    try:
        info_path.write_text(json.dumps(dict(json.loads(original), created="2030-01-01T00:00:00+00:00")))
        assert main(args) == 2 and "adapter_trained_at" in capsys.readouterr().err
        assert main([*args, "--overwrite"]) == 0 and "finished 1, already done 0" in capsys.readouterr().out
    finally:
        info_path.write_text(original)


def test_a_broken_adapter_stops_the_run(data_root, tmp_path, capsys):
    from peft import LoraConfig

    broken = tmp_path / "broken-adapter"
    LoraConfig(r=4, target_modules="all-linear").save_pretrained(str(broken))
    (broken / "adapter_model.safetensors").write_bytes(b"not a safetensors file")
    args = ["--model", "tiny-medgemma", "--tasks", TASK, "--data-root", str(data_root), "--output-path",
            str(tmp_path / "out"), "--device", "cpu", "--limit", "2", "--num-workers", "0", "--no-progress"]
    assert main([*args, "--adapter", str(broken)]) == 2
    err = capsys.readouterr().err
    assert str(broken.resolve()) in err and "cannot be loaded" in err
    assert not (tmp_path / "out" / "tiny-medgemma@broken-adapter" / "limit-2" / "results.jsonl").exists()
    assert main([*args, "--adapter", str(tmp_path / "missing")]) == 2
    assert "not a folder" in capsys.readouterr().err


@pytest.mark.parametrize("model", ["tiny-medgemma", "tiny-qwen-vl", "tiny-llava-next"])
def test_labels_cover_the_answer_tokens_only_and_prompts_match_evaluation(model):
    scorer = load_adapter(load_preset(model), device="cpu")
    prompt = TaskIndex().get(TASK).render_prompt(None)
    rng = np.random.default_rng(0)
    images = [easy_image(bool(i % 2), rng, size=64 + 16 * i) for i in range(3)]
    answers = ["yes", "no", "yes"]
    encoder = AnswerEncoder(scorer)
    batch = encoder(images, [prompt] * 3, answers)
    evaluation = scorer.encode(images, [prompt] * 3)
    yes_id, no_id = scorer.answer_variants["yes"]["yes"], scorer.answer_variants["no"]["no"]
    for i, answer in enumerate(answers):
        real = batch["attention_mask"][i].bool()
        prompt_ids = evaluation["input_ids"][i][evaluation["attention_mask"][i].bool()]
        answer_ids = torch.tensor(encoder.answer_ids(prompt, answer))
        assert answer_ids[0] == (yes_id if answer == "yes" else no_id)
        assert torch.equal(batch["input_ids"][i][real], torch.cat([prompt_ids, answer_ids]))
        assert real[: int(real.sum())].all()  # right padding: real tokens first
        labels = batch["labels"][i]
        expected = torch.full_like(labels, IGNORE_INDEX)
        expected[len(prompt_ids): len(prompt_ids) + len(answer_ids)] = answer_ids
        assert torch.equal(labels, expected)
    # The training forward sees exactly what scoring sees: same next-token logits after the prompt.
    with torch.no_grad():
        logits = scorer.model(**{k: v for k, v in batch.items() if k != "labels"}, use_cache=False).logits
    reference = scorer.first_token_logits(evaluation)
    for i in range(3):
        n_prompt = int(evaluation["attention_mask"][i].sum())
        torch.testing.assert_close(logits[i, n_prompt - 1].float(), reference[i], atol=2e-4, rtol=1e-4)


def test_prompt_token_logits_do_not_change_the_loss():
    scorer = load_adapter(load_preset("tiny-medgemma"), device="cpu")
    prompt = TaskIndex().get(TASK).render_prompt(None)
    rng = np.random.default_rng(1)
    batch = AnswerEncoder(scorer)([easy_image(True, rng), easy_image(False, rng)], [prompt] * 2, ["yes", "no"])
    labels = batch["labels"]
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(*labels.shape, 50, generator=generator)
    labels = torch.where(labels == IGNORE_INDEX, labels, labels % 50)  # a 50-word vocabulary for the check
    loss, count = answer_loss(logits, labels)
    targets = labels[:, 1:]
    answer_positions = targets != IGNORE_INDEX
    assert count == int((batch["labels"] != IGNORE_INDEX).sum())
    # by hand: mean over answer tokens of -log softmax(logits at t)[label at t + 1]
    log_probs = torch.log_softmax(logits[:, :-1], dim=-1)
    by_hand = -log_probs.gather(2, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)[answer_positions].mean()
    torch.testing.assert_close(loss, by_hand)
    noisy = logits.clone()
    prompt_positions = torch.cat([~answer_positions, torch.ones(labels.shape[0], 1, dtype=torch.bool)], dim=1)
    noisy[prompt_positions] += 100 * torch.randn(int(prompt_positions.sum()), 50, generator=generator)
    torch.testing.assert_close(answer_loss(noisy, labels)[0], loss)
    row, position = map(int, answer_positions.nonzero()[0])
    noisy[row, position] += 100 * torch.randn(50, generator=generator)
    assert not torch.isclose(answer_loss(noisy, labels)[0], loss)


@pytest.mark.slow
def test_resume_from_a_checkpoint_gives_the_same_adapter(data_root, tmp_path, capsys):
    from safetensors.torch import load_file

    args = ["--lr", "1e-2", "--max-steps", "4", "--batch-size", "4", "--grad-accum", "2", "--save-steps", "2"]
    whole = tmp_path / "whole"
    assert main(sft_args(data_root, whole, *args)) == 0
    resumed = tmp_path / "resumed"
    assert main(sft_args(data_root, resumed, *args, "--keep-checkpoints")) == 0
    assert (resumed / "checkpoints" / "step-000002" / "state.json").is_file()
    # an interruption after step 3: the adapter and its record are not written yet
    for name in ("focus_eval_adapter.json", "adapter_model.safetensors", "adapter_config.json"):
        (resumed / name).unlink()
    capsys.readouterr()
    other = [v if v != "1e-2" else "5e-3" for v in args]
    assert main(sft_args(data_root, resumed, *other)) == 2
    assert "other settings or data" in capsys.readouterr().err
    assert main(sft_args(data_root, resumed, *args)) == 0
    assert "resuming from" in capsys.readouterr().out
    expected = load_file(str(whole / "adapter_model.safetensors"))
    got = load_file(str(resumed / "adapter_model.safetensors"))
    assert expected.keys() == got.keys()
    for key in expected:
        torch.testing.assert_close(got[key], expected[key], atol=1e-6, rtol=1e-5)
    steps = [json.loads(line)["step"] for line in (resumed / "training_log.jsonl").read_text().splitlines()
             if "train_loss" in line]
    assert steps == [1, 2, 3, 4]
    shutil.rmtree(resumed)

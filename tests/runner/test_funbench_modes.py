"""FunBench's modular modes: ve_probe (an MLLM's own vision tower, pooled, under the linear probe) and
knowledge_prompt (the label's description before the question, no image), the task skips, the knowledge
table's coverage of every FunBench class, and the DINOv2 vision baseline on the FunBench tasks."""

import json

import numpy as np
import pytest
import torch
import yaml
from PIL import Image

from focus_eval.errors import FocusError

MLLMS = ("tiny-medgemma", "tiny-qwen-vl", "tiny-llava-next")
# FunBench's Table 3: the task codes each modular mode leaves out
MODE_SKIPS = {"ve_probe": ("l1a", "l1b", "l2a", "l3b", "l3c", "l3d"),
              "knowledge_prompt": ("l1a", "l1b", "l2a", "l3b", "l3c", "l3d", "l4a")}


def _adapter(name, **settings):
    from focus_eval.adapters import load_adapter
    from focus_eval.presets import load_preset

    return load_adapter(load_preset(name, settings), "cpu")


@pytest.fixture(scope="module")
def adapters():
    return {name: _adapter(name) for name in MLLMS}


def _image(seed=0, size=64):
    return Image.fromarray(np.random.default_rng(seed).integers(0, 255, (size, size, 3), dtype=np.uint8))


def _processed(adapter, image):
    """The processor's own tensors for one image in a chat turn, as the model would receive them."""
    messages = [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "?"}]}]
    return adapter.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                 return_dict=True, return_tensors="pt")


def _by_hand(adapter, image):
    """The vision tower's output before the projector, pooled as each tiny preset says, computed directly."""
    inputs, core = _processed(adapter, image), adapter.model.model
    kind = adapter.model.config.model_type
    with torch.no_grad():
        if kind == "gemma3":  # SigLIP: mean over the patch tokens
            return core.vision_tower(pixel_values=inputs["pixel_values"]).last_hidden_state[0].mean(dim=0)
        if kind == "qwen3_vl":  # the blocks' output before the patch merger, mean over the patches
            out = core.visual(inputs["pixel_values"], grid_thw=inputs["image_grid_thw"])
            return out.last_hidden_state.mean(dim=0)
        # LLaVA-NeXT: the class token of the whole-image view at the layer the projector reads
        out = core.vision_tower(inputs["pixel_values"][0], output_hidden_states=True)
        return out.hidden_states[adapter.model.config.vision_feature_layer][0, 0]


@pytest.mark.parametrize("name", MLLMS)
def test_vision_features_equal_the_vision_tower_computed_by_hand(adapters, name):
    adapter = adapters[name]
    encoder = adapter.image_encoder()
    image = _image(seed=3)
    pixels = encoder.transform.pixels(image).unsqueeze(0)
    assert pixels.dtype == torch.uint8 and tuple(pixels.shape) == (1, 3, 64, 64)
    got = encoder.embed_images(encoder.transform.normalize(pixels))
    expected = _by_hand(adapter, image)
    assert got.shape == (1, encoder.embed_dim) and got.dtype == torch.float32
    assert torch.allclose(got[0], expected.float(), atol=1e-4)
    # a batch gives each image the numbers it gets alone
    two = torch.stack([encoder.transform.pixels(_image(seed=s)) for s in (3, 4)])
    assert torch.allclose(encoder.embed_images(two)[0], got[0], atol=1e-4)


def test_llava_next_mean_pooling_is_the_mean_of_the_tokens_the_projector_reads():
    adapter = _adapter("tiny-llava-next", vision_pooling="mean")
    encoder, image = adapter.image_encoder(), _image(seed=5)
    inputs = _processed(adapter, image)
    views = inputs["pixel_values"][0]
    with torch.no_grad():
        hidden = adapter.model.model.vision_tower(views, output_hidden_states=True).hidden_states[-2]
    expected = hidden[:, 1:].reshape(-1, hidden.shape[-1]).mean(dim=0)  # every view's patch tokens, no class token
    got = encoder.embed_images(encoder.transform.pixels(image).unsqueeze(0))[0]
    assert torch.allclose(got, expected, atol=1e-4)


def test_cache_keys_differ_by_pooling_and_never_meet_another_encoder(adapters):
    keys = {name: adapters[name].image_encoder().cache_key for name in MLLMS}
    mean = _adapter("tiny-llava-next", vision_pooling="mean").image_encoder()
    assert mean.pooling == "mean" and adapters["tiny-llava-next"].image_encoder().pooling == "cls"
    assert mean.cache_key != keys["tiny-llava-next"]
    assert len(set(keys.values())) == len(keys)
    # the same model and pooling give the same key (the cache is reused)
    assert _adapter("tiny-medgemma").image_encoder().cache_key == keys["tiny-medgemma"]


def test_a_pooling_the_architecture_lacks_or_an_unknown_one_is_refused():
    from focus_eval.presets import load_preset

    with pytest.raises(FocusError, match="vision_pooling 'cls' is not available for gemma3"):
        _adapter("tiny-medgemma", vision_pooling="cls").image_encoder()
    with pytest.raises(FocusError, match="vision_pooling must be one of mean, cls"):
        from focus_eval.adapters.mllm import HFMLLMAdapter

        HFMLLMAdapter.validate(load_preset("tiny-medgemma", {"vision_pooling": "max"}))


def test_every_mllm_preset_states_its_vision_pooling():
    from focus_eval.presets import load_preset, preset_files

    for name, path in preset_files(()).items():
        preset = load_preset(name)
        if preset.family == "mllm" and preset.adapter == "hf_mllm":  # local weights: a vision tower to read
            # stated in the file itself (no --model-args here), so nobody relies on the architecture's default
            assert (preset.settings or {}).get("vision_pooling") in ("mean", "cls"), path


def test_text_questions_reach_the_model_without_pixels_or_image_tokens(adapters, monkeypatch):
    adapter = adapters["tiny-qwen-vl"]
    seen, tower_calls = [], []
    forward = adapter.model.forward

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return forward(*args, **kwargs)

    monkeypatch.setattr(adapter.model, "forward", spy)
    hook = adapter.model.model.visual.register_forward_hook(lambda *a: tower_calls.append(1))
    try:
        prompts = ["Description: pale patches.\nWhich?\nA. one\nB. two", "Which grade?\nA. x\nB. y\nC. z"]
        rows = adapter.score_options_and_generate_text(prompts, [["A", "B"], ["A", "B", "C"]], max_new_tokens=2)
    finally:
        hook.remove()
    assert seen and not tower_calls
    assert all(not any(k.startswith("pixel_values") for k in kwargs) for kwargs in seen)
    image_token = adapter.processor.image_token_id
    assert all(image_token not in kwargs["input_ids"].tolist()[0] for kwargs in seen if "input_ids" in kwargs)
    # the letter distribution of each row equals a direct forward pass of that text alone
    text = adapter.chat_text(prompts[1], image=False)
    assert "<|image_pad|>" not in text and prompts[1] in text
    ids = adapter.tokenizer(text, return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        logits = forward(**ids).logits[0, -1].float()
    best = [max(float(logits[i]) for i in adapter._letter_ids(letter).tolist()) for letter in "ABC"]
    expected = np.exp(best) / np.exp(best).sum()
    assert [rows[1]["letters"][k] for k in "ABC"] == pytest.approx(expected.tolist(), abs=1e-4)


# ----- the knowledge table


def _funbench_tasks():
    from focus_eval.task import TaskIndex

    index = TaskIndex()
    return [index.get(name) for name in index.expand("funbench_*", include_proxy=True)]


def _code(task):
    return task.name.split("_")[1]


def test_every_funbench_class_has_a_description_unless_the_task_skips_knowledge_prompt():
    from focus_eval.runner.methods.knowledge_prompt import missing

    gaps = {t.name: missing(t) for t in _funbench_tasks() if "knowledge_prompt" not in t.skip_methods}
    assert not {name: keys for name, keys in gaps.items() if keys}


def test_the_knowledge_table_cites_a_source_for_every_description():
    from focus_eval.resources import resource_dir

    raw = yaml.safe_load((resource_dir("tasks") / "funbench" / "_knowledge.yaml").read_text(encoding="utf-8"))
    entries = [e for field in raw["fields"].values() for e in field.values()]
    assert len(entries) > 100
    assert all(e["source"] in raw["sources"] and len(e["text"]) < 240 for e in entries)
    # the laterality descriptions say where the fovea lies, as FunBench's example does
    assert "right of the optic disc" in raw["fields"]["laterality"]["left eye"]["text"]


def test_funbench_tasks_skip_the_modes_funbench_leaves_them_out_of():
    for task in _funbench_tasks():
        for method, codes in MODE_SKIPS.items():
            if _code(task) in codes:
                assert task.skip_methods.get(method), f"{task.name} should skip {method}"
            else:
                assert method not in task.skip_methods, task.name


def _own_task(tmp_path):
    """A laterality task in a folder of its own whose knowledge table describes the left eye only."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "eye_side.yaml").write_text(yaml.safe_dump({
        "task": "eye_side_synth_desktop", "include": "funbench/_base_l2b_laterality.yaml",
        "dataset": "synth_desktop",
        "metadata": {"version": 1, "label_rule": "laterality as recorded", "description": "A test task."}}),
        encoding="utf-8")
    (folder / "_knowledge.yaml").write_text(yaml.safe_dump({
        "sources": {"anatomy": "A textbook of fundus anatomy."},
        "fields": {"laterality": {"left eye": {"text": "Fovea right of the disc.", "source": "anatomy"}}}}),
        encoding="utf-8")
    return folder


def test_a_class_without_a_description_names_the_table_and_the_key(tmp_path):
    from focus_eval.runner.methods.knowledge_prompt import describe, missing
    from focus_eval.task import TaskIndex

    task = TaskIndex(include_paths=[_own_task(tmp_path)]).get("eye_side_synth_desktop")
    assert missing(task) == ["laterality: 'right eye' (class right)"]
    assert describe(task, 0) == "Fovea right of the disc."
    with pytest.raises(FocusError, match=r"_knowledge.yaml: no description for laterality: 'right eye'"):
        describe(task, 1)


# ----- end to end on the synthetic FunBench tasks


def _run(root, model, methods, *extra, out="out"):
    from focus_eval.cli import main

    args = ["--model", model, "--methods", methods, "--tasks", "funbench_*synth*", "--data-root",
            str(root / "data"), "--output-path", str(root / out), "--cache-dir", str(root / "cache"),
            "--n-boot", "20", "--no-progress", "--num-workers", "0", "--batch-size", "4", *extra]
    return main(args)


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    from focus_eval.synth.datasets import write_synthetic

    root = tmp_path_factory.mktemp("modes")
    write_synthetic(root / "data", n=40, seed=2)
    return root


def _expected_description(task, label):
    from focus_eval.resources import resource_dir

    table = yaml.safe_load((resource_dir("tasks") / "funbench" / "_knowledge.yaml").read_text(encoding="utf-8"))
    entries = table["fields"][task.label_space.field]
    labels = label if isinstance(label, list) else [label]
    return " ".join(" ".join(entries[task.label_space.classes[k].option.lower()]["text"].split()) for k in labels)


@pytest.mark.slow
def test_the_three_modes_run_on_the_synthetic_funbench_tasks_with_skips_recorded(synth, capsys):
    from focus_eval.results.schema import read_jsonl
    from focus_eval.task import TaskIndex

    assert _run(synth, "tiny-medgemma", "ve_probe,knowledge_prompt,multiple_choice") == 0
    model = synth / "out" / "tiny-medgemma"
    rows = [r for r in read_jsonl(model / "results.jsonl") if r.get("kind") != "group"]
    methods = sorted(r["method"] for r in rows)
    assert methods.count("ve_probe") == 5 and methods.count("multiple_choice") == 5
    assert methods.count("knowledge_prompt") == 4  # L4a skips it
    skipped = "funbench_l4a_normal_abnormal_synth_desktop.knowledge_prompt"
    assert skipped not in {f"{r['task']}.{r['method']}" for r in rows}
    err = capsys.readouterr().err
    assert err.count(f"{skipped}: not scored: ") == 1
    index = TaskIndex()
    reason = index.get("funbench_l4a_normal_abnormal_synth_desktop").skip_methods["knowledge_prompt"]
    manifest = json.loads(sorted(model.glob("run-*.json"))[-1].read_text(encoding="utf-8"))
    assert manifest["units"]["skipped_by_task"] == {skipped: reason}
    probe = next(r for r in rows if r["method"] == "ve_probe" and "l4c" in r["task"])
    assert probe["extra"]["probe"] == "standardised multinomial" and probe["n"] > 0
    assert (probe["extra"]["vision_tower"], probe["extra"]["vision_pooling"]) == ("gemma3", "mean")
    for task_name in ("funbench_l2b_laterality_synth_desktop", "funbench_l4b_conditions_synth_desktop"):
        task = index.get(task_name)
        lines = read_jsonl(model / "samples" / f"{task_name}.knowledge_prompt.jsonl")
        assert lines and all(line["error"] is None for line in lines)
        for line in lines:
            lead, _, question = line["question"].partition("\n")
            assert lead == "Description of the fundus image: " + _expected_description(task, line["label"])
            assert question.startswith("Please choose")


@pytest.mark.slow
def test_knowledge_prompt_reads_no_image(synth, monkeypatch):
    from focus_eval.adapters.mllm import MLLMScorer
    from focus_eval.results.schema import read_jsonl

    def refuse(*args, **kwargs):
        raise AssertionError("knowledge_prompt touched an image")

    monkeypatch.setattr("focus_eval.runner.images.load_image", refuse)
    monkeypatch.setattr(MLLMScorer, "process_images", refuse)
    assert _run(synth, "tiny-qwen-vl", "knowledge_prompt", out="text-only") == 0
    samples = sorted((synth / "text-only" / "tiny-qwen-vl" / "samples").glob("*.knowledge_prompt.jsonl"))
    assert len(samples) == 4
    assert all(line["error"] is None and line["text"] is not None for p in samples for line in read_jsonl(p))


@pytest.mark.slow
def test_a_unit_whose_class_has_no_description_fails_naming_the_table(synth, tmp_path, capsys):
    from focus_eval.cli import main

    folder = _own_task(tmp_path)
    args = ["--model", "tiny-medgemma", "--methods", "knowledge_prompt", "--tasks", "eye_side_synth_desktop",
            "--include-path", str(folder), "--data-root", str(synth / "data"), "--output-path",
            str(tmp_path / "out"), "--no-progress", "--num-workers", "0"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert f"knowledge table {folder / '_knowledge.yaml'} has no description for laterality: 'right eye'" in err
    assert not (tmp_path / "out" / "tiny-medgemma" / "results.jsonl").exists()


@pytest.mark.slow
def test_dinov2_baseline_probes_the_funbench_tasks(synth):
    from transformers import BitImageProcessor, Dinov2Config, Dinov2Model

    from focus_eval.results.schema import read_jsonl

    folder = synth / "dinov2-tiny"
    config = Dinov2Config(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                          image_size=224, patch_size=14)
    Dinov2Model(config).save_pretrained(folder)
    # the preset's preprocessing: shorter side 256 (bicubic), centre crop 224, ImageNet statistics
    BitImageProcessor(size={"shortest_edge": 256}, crop_size={"height": 224, "width": 224}, resample=3,
                      image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225]).save_pretrained(folder)
    assert _run(synth, "dinov2-l", "linear_probe", "--model-args", f"source={folder}") == 0
    rows = [r for r in read_jsonl(synth / "out" / "dinov2-l" / "results.jsonl") if r.get("kind") != "group"]
    assert len(rows) == 5 and all(r["method"] == "linear_probe" and r["output_type"] for r in rows)


def test_ve_probe_serves_multimodal_llms_only():
    from focus_eval.runner.run import RunOptions, Runner

    with pytest.raises(FocusError, match="ve_probe"):
        Runner(RunOptions(model="tiny-vit", tasks="funbench_l2b_laterality_synth_desktop", methods=["ve_probe"]))

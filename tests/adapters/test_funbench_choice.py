"""The multiple-choice method: reading answers (letters first, sentence-embedding fallback, unparsed), the
letter-scoring primitive (batch of one vs eight, a direct forward pass), and an offline run of the tiny MLLM
on every synthetic FunBench task with complete sample and results lines."""

from functools import partial

import numpy as np
import pytest
import torch
from helpers.images import noise_images

from focus_eval.adapters.mllm_choice import MIN_SIMILARITY, match_options, parse_letters, read_answer

OPTIONS = ["left eye", "right eye"]
GRADES = ["no diabetic retinopathy", "mild non-proliferative diabetic retinopathy",
          "moderate non-proliferative diabetic retinopathy", "severe non-proliferative diabetic retinopathy",
          "proliferative diabetic retinopathy"]


@pytest.mark.parametrize("text, multi, expected", [
    ("B", False, ("B",)), ("b.", False, ("B",)), ("(C)", False, ("C",)), ("**D**", False, ("D",)),
    ("The answer is B", False, ("B",)), ("Answer: E.", False, ("E",)), ("C) moderate", False, ("C",)),
    ("A, C", True, ("A", "C")), ("C and A", True, ("A", "C")), ("The answers are B, D", True, ("B", "D")),
    ("A, C", False, None),  # two letters for a single-answer question
    ("F", False, None),  # not an offered letter
    ("A fundus photograph", False, None), ("Yes", False, None), ("", False, None), (None, False, None),
])
def test_letters_are_read_from_fixed_answers(text, multi, expected):
    assert parse_letters(text, "ABCDE", multi) == expected


def test_prose_naming_an_option_is_matched_by_embedding_and_nonsense_stays_unparsed():
    assert read_answer("B", OPTIONS, False).decided_by == "letter"
    reading = read_answer("The photograph shows the right eye.", OPTIONS, False)
    assert reading.letters == ("B",) and reading.decided_by == "embedding"
    assert read_answer("proliferative diabetic retinopathy with new vessels", GRADES, False).letters == ("E",)
    for nonsense in ("xyzzy qwerty", "12345 !!", "I cannot tell."):
        assert read_answer(nonsense, OPTIONS, False).letters is None
        assert read_answer(nonsense, GRADES, False).letters is None
    conditions = ["normal fundus", "diabetic retinopathy", "macular edema", "glaucoma"]
    multi = read_answer("diabetic retinopathy and glaucoma", conditions, True)
    assert multi.letters == ("B", "D") and multi.decided_by == "embedding"


# The option texts of FunBench tasks where prose answers that name no option used to be read as an option.
CONDITIONS_BRSET = ["normal fundus", "diabetic retinopathy", "macular edema", "age-related macular degeneration",
                    "retinal vascular occlusion", "hypertensive retinopathy", "retinal detachment", "myopic fundus",
                    "increased cup-to-disc ratio"]
CONDITIONS_ODIR = ["normal fundus", "diabetic retinopathy", "glaucoma", "cataract",
                   "age-related macular degeneration", "hypertensive retinopathy", "pathological myopia",
                   "other abnormality"]
LESION_SIZE = ["none present", "small (under 0.1% of the image)", "medium (0.1% to 1% of the image)",
               "large (over 1% of the image)"]


@pytest.mark.parametrize("options", [CONDITIONS_BRSET, CONDITIONS_ODIR, LESION_SIZE, OPTIONS, GRADES],
                         ids=["conditions_brset", "conditions_odir", "lesion_size", "laterality", "dr_grading"])
@pytest.mark.parametrize("noise", ["tous", "The image is blurry", "I don't know", "maybe", "image"])
def test_answers_that_name_no_option_stay_unparsed_with_the_real_model(options, noise):
    reading = read_answer(noise, options, False)
    assert reading.letters is None and reading.decided_by is None
    assert reading.similarity is not None and reading.similarity < MIN_SIMILARITY
    assert reading.margin is not None and reading.margin >= 0


@pytest.mark.parametrize("answer, options, expected", [
    ("a healthy normal fundus", CONDITIONS_ODIR, ("A",)), ("the patient has a cataract", CONDITIONS_ODIR, ("D",)),
    ("macular degeneration related to age", CONDITIONS_BRSET, ("D",)), ("the right eye", OPTIONS, ("B",)),
    ("This fundus image shows the left eye.", OPTIONS, ("A",)), ("There is no diabetic retinopathy.", GRADES, ("A",)),
    ("They are large, covering over 1% of the image.", LESION_SIZE, ("D",)),
])
def test_paraphrases_of_an_option_still_match_with_the_real_model(answer, options, expected):
    reading = read_answer(answer, options, False)
    assert reading.letters == expected and reading.decided_by == "embedding"
    assert reading.similarity >= MIN_SIMILARITY and reading.margin >= 0.02


def test_embedding_match_needs_a_clear_lead():
    # two options the answer is equally close to: no match rather than a coin toss
    def embed(texts):
        rows = {"left eye": [1.0, 0.0], "right eye": [0.0, 1.0], "an eye": [0.7071, 0.7071], "left": [0.9, 0.436]}
        return np.array([rows[t] for t in texts])
    assert match_options("an eye", OPTIONS, False, embed) is None
    assert match_options("left", OPTIONS, False, embed) == (0,)
    reading = read_answer("left", OPTIONS, False, embed)
    assert reading.similarity == pytest.approx(0.9) and reading.margin == pytest.approx(0.9 - 0.436)
    assert MIN_SIMILARITY > 0


@pytest.fixture(scope="module")
def adapter(tmp_path_factory):
    from focus_eval.adapters import load_adapter
    from focus_eval.presets import load_preset
    from focus_eval.tiny import build_tiny

    folder = build_tiny("tiny-qwen-vl", tmp_path_factory.mktemp("tiny") / "qwen")
    return load_adapter(load_preset("tiny-qwen-vl", {"source": str(folder)}), "cpu")


_images = partial(noise_images, sizes=((64, 48), (64, 56), (64, 64)))


def test_option_probabilities_of_a_batch_of_eight_match_one_at_a_time(adapter):
    images = _images(8)
    prompts = [[f"Which grade?\nA. none\nB. mild\nC. severe{'' if i % 2 else chr(10) + 'D. worst'}"] for i in range(8)]
    letters = [[["A", "B", "C"] if i % 2 else ["A", "B", "C", "D"]] for i in range(8)]
    batched = adapter.score_options_and_generate_multi(images, prompts, letters, max_new_tokens=3)
    single = [adapter.score_options_and_generate_multi([img], [p], [ls], max_new_tokens=3)[0]
              for img, p, ls in zip(images, prompts, letters)]
    for (one,), (many,) in zip(single, batched):
        assert one["letters"].keys() == many["letters"].keys()
        assert all(abs(one["letters"][k] - many["letters"][k]) < 1e-4 for k in one["letters"])
        assert sum(many["letters"].values()) == pytest.approx(1.0) and 0 < many["letter_mass"] <= 1
        assert one["text"] == many["text"]
    assert len({round(r[0]["letters"]["A"], 6) for r in single}) > 1  # the rows really differ
    # several questions on one image share its encoding and give the numbers of asking them one by one
    shared = adapter.score_options_and_generate_multi(images[:1], [prompts[0] + prompts[1]],
                                                      [letters[0] + letters[1]], max_new_tokens=3)[0]
    assert shared[1]["letters"] == pytest.approx(
        adapter.score_options_and_generate_multi(images[:1], [prompts[1]], [letters[1]], max_new_tokens=3)[0][0]
        ["letters"], abs=1e-4)


def test_letter_probabilities_equal_a_direct_forward_pass(adapter):
    image, prompt = _images(1, seed=4)[0], "Which eye?\nA. left eye\nB. right eye"
    row = adapter.score_options_and_generate_multi([image], [[prompt]], [[["A", "B"]]], max_new_tokens=1)[0][0]
    messages = [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": prompt}]}]
    inputs = adapter.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                   return_dict=True, return_tensors="pt")
    with torch.no_grad():
        logits = adapter.model(**inputs).logits[0, -1].float()
    best = [max(float(logits[i]) for i in adapter._letter_ids(letter).tolist()) for letter in "AB"]
    expected = np.exp(best) / np.exp(best).sum()
    assert [row["letters"]["A"], row["letters"]["B"]] == pytest.approx(expected.tolist(), abs=1e-4)


@pytest.mark.slow
def test_tiny_mllm_answers_every_synthetic_funbench_task_offline(tmp_path):
    from focus_eval.cli import main
    from focus_eval.results.schema import read_jsonl, validate_result_dict, validate_sample_dict
    from focus_eval.synth.datasets import write_synthetic

    write_synthetic(tmp_path / "data", n=40, seed=2)
    args = ["--model", "tiny-qwen-vl", "--tasks", "funbench_*synth*", "--data-root", str(tmp_path / "data"),
            "--output-path", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), "--n-boot", "20",
            "--no-progress", "--num-workers", "0", "--batch-size", "4"]
    assert main(args) == 0
    model = tmp_path / "out" / "tiny-qwen-vl"
    rows = [r for r in read_jsonl(model / "results.jsonl") if r.get("kind") != "group"]
    assert len(rows) == 5 and {r["method"] for r in rows} == {"multiple_choice"}
    for r in rows:
        validate_result_dict(r)
        samples = read_jsonl(model / "samples" / f"{r['task']}.multiple_choice.jsonl")
        assert len(samples) == r["n"] > 0 and r["n_unparsed"] == sum(not s["parsed"] for s in samples)
        for s in samples:
            validate_sample_dict(s)
            assert s["question"].startswith("Please choose") and s["answer"] and s["option_seed"] is not None
            assert (s["pred"] is None) == (s["decided_by"] is None)
            letters = s["answer"].split(",")
            truth = s["label"] if isinstance(s["label"], list) else [s["label"]]
            assert sorted(s["options"][ord(x) - ord("A")] for x in letters) == sorted(truth)
        assert r["extra"]["random_guess"]["funbench_f1"] is not None
    grading = next(r for r in rows if r["task"].startswith("funbench_l4c"))
    assert grading["output_type"] == "multiclass" and grading["n_valid"] == grading["n"]  # letter probabilities
    first = read_jsonl(model / "samples" / "funbench_l2b_laterality_synth_desktop.multiple_choice.jsonl")
    one_task = [a if a != "funbench_*synth*" else "funbench_l2b_laterality_synth_desktop" for a in args]
    assert main(one_task + ["--no-resume"]) == 0  # the same seed asks the same questions again
    again = read_jsonl(model / "samples" / "funbench_l2b_laterality_synth_desktop.multiple_choice.jsonl")
    assert [(s["options"], s["option_seed"]) for s in first] == [(s["options"], s["option_seed"]) for s in again]

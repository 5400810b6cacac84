"""Task files, the loader (includes, validation), prompts (frozen text, no label leakage) and --tasks expansion."""

from pathlib import Path

import pytest

from focus_eval.data.records import ImageRecord
from focus_eval.errors import FocusError
from focus_eval.task import PROMPT_CONTEXT, TaskIndex

DR_PROMPT = (
    "Based on the fundus image, does this eye show diabetic retinopathy?\n"
    "\n"
    "Respond with **yes** if any level of diabetic retinopathy is present, or **no** otherwise.\n"
    'Respond only with "yes" or "no" (without additional commentary).'
)
REFERABLE_PROMPT = (
    "Based on the fundus image, does this eye show referable diabetic retinopathy?\n"
    "\n"
    "Respond with **yes** if the image should be referred for diabetic retinopathy evaluation or treatment, "
    "or **no** otherwise.\n"
    'Respond only with "yes" or "no" (without additional commentary).'
)
GLAUCOMA_PROMPT = (
    "Based on the fundus image, does this eye show glaucoma or glaucomatous optic disc changes?\n"
    "\n"
    "Respond with **yes** if glaucoma or suspicious glaucomatous changes are present, or **no** otherwise.\n"
    'Respond only with "yes" or "no" (without additional commentary).'
)
# every shipped task -> its frozen prompt
PROMPTS = {
    "dr_brset": DR_PROMPT, "dr_mbrset": DR_PROMPT, "dr_rfmid": DR_PROMPT, "dr_rfmid2": DR_PROMPT,
    "dr_idrid": DR_PROMPT, "dr_messidor2": DR_PROMPT, "dr_jsiec": DR_PROMPT,
    "dr_synth_desktop": DR_PROMPT, "dr_synth_mobile": DR_PROMPT,
    "referable_dr_brset": REFERABLE_PROMPT, "referable_dr_mbrset": REFERABLE_PROMPT,
    "referable_dr_idrid": REFERABLE_PROMPT, "referable_dr_messidor2": REFERABLE_PROMPT,
    "referable_dr_jsiec": REFERABLE_PROMPT, "referable_dr_rfmid": REFERABLE_PROMPT,
    "referable_dr_rfmid2": REFERABLE_PROMPT, "referable_dr_synth_desktop": REFERABLE_PROMPT,
    "referable_dr_synth_mobile": REFERABLE_PROMPT,
    "glaucoma_brset": GLAUCOMA_PROMPT, "glaucoma_papila": GLAUCOMA_PROMPT, "glaucoma_refuge": GLAUCOMA_PROMPT,
    "glaucoma_g1020": GLAUCOMA_PROMPT, "glaucoma_synth_desktop": GLAUCOMA_PROMPT,
    "glaucoma_synth_mobile": GLAUCOMA_PROMPT,
}
ZERO_SHOT = {
    "dr": {"negative": ["A fundus photograph of a healthy retina without diabetic retinopathy."],
           "positive": ["A fundus photograph of a retina with diabetic retinopathy."]},
    "referable_dr": {"negative": ["A fundus photograph showing no referable diabetic retinopathy."],
                     "positive": ["A fundus photograph showing referable diabetic retinopathy."]},
    "glaucoma": {"negative": ["A fundus photograph of a healthy eye without glaucoma."],
                 "positive": ["A fundus photograph showing signs of glaucoma."]},
}
SENTINEL = "LEAK-SENTINEL"


def binary_tasks(index):
    """The yes/no suite (the FunBench multiple-choice tasks have their own tests, test_funbench_tasks.py)."""
    return [t for t in index.tasks() if t.binary]


def sentinel_record(dataset="brset"):
    return ImageRecord(dataset=dataset, image_id=f"{SENTINEL}-id", patient_id=f"{SENTINEL}-patient",
                       path=Path(f"/data/{SENTINEL}/0.3.DR1/x.jpg"), relpath=f"0.3.DR1/{SENTINEL}.jpg", split="test",
                       dr=1, referable_dr=1, glaucoma=1, age=64.0, sex="female", quality="adequate",
                       extra={"increased_cup_disc": SENTINEL, "macular_edema": SENTINEL, "DR_ICDR": SENTINEL})


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- the shipped suite -------------------------------------------------------------------------------------


def test_shipped_task_names_are_exactly_the_spec_list(index):
    # the FunBench tasks (multiple choice, named by level and code) are listed in test_funbench_tasks.py
    binary = binary_tasks(index)
    assert {t.name for t in binary} == set(PROMPTS)
    assert all(t.name.startswith("funbench_") for t in index.tasks() if not t.binary)
    for task in binary:
        assert task.name == f"{task.target}_{task.dataset}"


def test_every_prompt_is_frozen_and_image_only(index):
    for name, expected in PROMPTS.items():
        task = index.get(name)
        assert task.render_prompt(sentinel_record(task.dataset)) == expected, name
        assert task.render_prompt() == expected


def test_zero_shot_texts_are_the_reference_pair_per_target(index):
    for task in binary_tasks(index):
        assert task.zero_shot == ZERO_SHOT[task.target], task.name


def test_proxy_cohort_and_label_rules(index):
    proxies = {t.name for t in binary_tasks(index) if t.proxy}
    assert proxies == {"referable_dr_rfmid", "referable_dr_rfmid2"}
    assert "CME" in index.get("referable_dr_rfmid").label_rule
    assert "ME == 1" in index.get("referable_dr_rfmid2").label_rule
    assert {t.name: t.cohort for t in binary_tasks(index) if t.cohort} == {
        "dr_brset": "diabetic", "referable_dr_brset": "diabetic", "glaucoma_brset": "diabetic",
        "dr_mbrset": "views_1_3", "referable_dr_mbrset": "views_1_3"}
    rule = index.get("glaucoma_brset").label_rule
    assert "cup/disc finding" in rule and "not a glaucoma diagnosis" in rule
    for name in ("dr_jsiec", "referable_dr_jsiec"):
        rule = " ".join(index.get(name).label_rule.split())
        for folder in ("18.Vitreous particles", "20.Massive hard exudates", "22.Cotton-wool spots",
                       "25.Preretinal hemorrhage", "26.Fibrosis", "27.Laser Spots", "29.0.Blur fundus without PDR",
                       "29.1.Blur fundus with suspected PDR"):
            assert folder in rule, (name, folder)
    for task in binary_tasks(index):
        assert task.splits == {"train": "train", "val": "val", "test": "test"}
        assert task.version is not None and task.label_rule and task.description
        assert [m["metric"] for m in task.metric_list] == [
            "auroc", "auprc", "accuracy", "f1", "precision", "recall", "ece", "brier"]
        assert len(task.hash) == 64


def test_groups_per_target_and_dataset_keep_synthetic_apart(index):
    groups = index.groups
    for target in ("dr", "referable_dr", "glaucoma"):
        members = set(groups[target].tasks)
        expected = {t.name for t in index.tasks() if t.target == target and not t.dataset.startswith("synth")}
        assert members == expected
    for task in binary_tasks(index):
        assert task.name in groups[task.dataset].tasks
    assert set(groups["synth"].tasks) == {t.name for t in binary_tasks(index) if "_synth_" in t.name}
    assert all(g.aggregation == "macro_mean" for g in groups.values())
    assert "focus" in index.tags and not any("_synth_" in t for t in index.tags["focus"])


def test_hash_is_stable_and_follows_the_resolved_config(index, tmp_path):
    assert TaskIndex().get("dr_brset").hash == index.get("dr_brset").hash
    write(tmp_path, "dr_brset_v2.yaml", (Path(index.get("dr_brset").path).read_text()
                                         .replace("task: dr_brset", "task: dr_brset_v2")))
    user = TaskIndex([tmp_path])
    write(tmp_path / "other", "dr_brset_v3.yaml", (Path(index.get("dr_brset").path).read_text()
                                                   .replace("task: dr_brset", "task: dr_brset_v3")
                                                   .replace("version: 1.0", "version: 1.1")))
    assert user.get("dr_brset_v2").hash != index.get("dr_brset").hash  # the name is part of the config
    assert TaskIndex([tmp_path]).get("dr_brset_v3").hash != user.get("dr_brset_v2").hash


# --- prompts never reach labels -----------------------------------------------------------------------------


def test_prompt_context_holds_no_target_field(index):
    context = index.get("dr_brset").prompt_context(sentinel_record())
    assert tuple(context) == PROMPT_CONTEXT
    assert not {"dr", "referable_dr", "glaucoma", "extra", "record", "image_id", "path"} & set(context)
    assert SENTINEL not in repr(context)


def test_every_context_name_renders_without_leaking(tmp_path):
    write(tmp_path, "leak_all.yaml", """
task: leak_all
include: _base_dr.yaml
dataset: brset
prompt: "{{ task }}|{{ target }}|{{ dataset }}|{{ dataset_title }}|{{ age }}|{{ sex }}"
metadata: {version: 1, label_rule: test}
""")
    task = TaskIndex([tmp_path]).get("leak_all")
    text = task.render_prompt(sentinel_record())
    assert text == "leak_all|dr|brset|BRSET|64.0|female"
    assert SENTINEL not in text


@pytest.mark.parametrize("expression", ["{{ record.dr }}", "{{ dr }}", "{{ extra.increased_cup_disc }}",
                                        "{{ glaucoma }}", "{{ image_id }}", "{{ age.__class__ }}",
                                        "{{ task.__class__.__mro__ }}"])
def test_a_template_reaching_for_labels_fails_at_load(tmp_path, expression):
    path = write(tmp_path, "sneaky.yaml", f"""
task: sneaky
include: _base_glaucoma.yaml
dataset: brset
prompt: "Is it glaucoma? {expression}"
metadata: {{version: 1, label_rule: test}}
""")
    with pytest.raises(FocusError) as info:
        TaskIndex([tmp_path])
    assert str(path) in str(info.value)


# --- loader validation -------------------------------------------------------------------------------------

GOOD = """
task: {name}
include: _base_dr.yaml
dataset: idrid
metadata: {{version: 1, label_rule: grade >= 1}}
"""


@pytest.mark.parametrize("text, message", [
    (GOOD.format(name="t1") + "promtp: x\n", "unknown key(s) promtp"),
    (GOOD.format(name="t1").replace("metadata: {", "metadata: {colour: red, "), "unknown metadata key(s) colour"),
    ("task: t1\ndataset: idrid\nmetadata: {version: 1, label_rule: x}\n", "missing required key(s) target"),
    (GOOD.format(name="t1").replace("dataset: idrid", "dataset: eyepacs"), "unknown dataset 'eyepacs'"),
    (GOOD.format(name="t1") + "target: amd\n", "unknown target 'amd'"),
    (GOOD.format(name="t1").replace("label_rule: grade >= 1", "description: x"), "label_rule is required"),
    (GOOD.format(name="t1") + "proxy: maybe\n", "'proxy' must be true or false"),
    (GOOD.format(name="t1") + "metric_list: [{metric: kappa}]\n", "unknown metric 'kappa'"),
    (GOOD.format(name="t1") + "zero_shot: {positive: []}\n", "zero_shot.positive must not be empty"),
    (GOOD.format(name="t1") + "zero_shot: {neutral: [a]}\n", "exactly the keys negative and positive"),
    (GOOD.format(name="t1") + "splits: {test: holdout}\n", "names unknown split(s)"),
    (GOOD.format(name="t1") + "splits: {extra: test}\n", "'splits' must map exactly"),
    (GOOD.format(name="t1") + "prompt: '{% if %}'\n", "not a valid Jinja template"),
    (GOOD.format(name="t1").replace("_base_dr.yaml", "_base_nothing.yaml"), "'_base_nothing.yaml' not found"),
    ("- just\n- a list\n", "must be a YAML mapping"),
    ("task: t1\nprompt: !!python/object/apply:os.system [echo hi]\n", "not valid YAML"),
    ("task: [unclosed\n", "not valid YAML"),
    (GOOD.format(name="dr_brset"), "defined twice"),
    (GOOD.format(name="focus"), "also used as a tag"),
])
def test_validation_errors_name_the_file(tmp_path, text, message):
    path = write(tmp_path, "bad.yaml", text)
    with pytest.raises(FocusError) as info:
        TaskIndex([tmp_path])
    assert str(path) in str(info.value) or str(path.resolve()) in str(info.value)
    assert message in str(info.value)


def test_include_cycle_is_reported(tmp_path):
    write(tmp_path, "_a.yaml", "include: _b.yaml\ntarget: dr\n")
    write(tmp_path, "_b.yaml", "include: _a.yaml\n")
    write(tmp_path, "t_cycle.yaml", "task: t_cycle\ninclude: _a.yaml\n")
    with pytest.raises(FocusError, match="include cycle"):
        TaskIndex([tmp_path])


def test_user_task_inherits_shipped_base_and_overrides_keys(tmp_path):
    write(tmp_path, "sub/_mine.yaml", "include: _base_glaucoma.yaml\ntag: [mine]\nmetadata: {version: 2}\n")
    write(tmp_path, "sub/glaucoma_brset_all.yaml", """
task: glaucoma_brset_all
include: _mine.yaml
dataset: brset
cohort: all
metadata: {label_rule: increased_cup_disc == 1, description: all images}
""")
    user = TaskIndex([tmp_path])
    task = user.get("glaucoma_brset_all")
    assert (task.target, task.cohort, task.tags, task.version) == ("glaucoma", "all", ("mine",), 2)
    assert task.metadata == {"version": 2, "label_rule": "increased_cup_disc == 1", "description": "all images"}
    assert task.render_prompt() == GLAUCOMA_PROMPT
    assert user.expand("mine") == ["glaucoma_brset_all"]
    assert "glaucoma_brset_all" not in TaskIndex().names


def test_shipped_tasks_sit_in_one_folder_per_target_with_its_base(index):
    for task in binary_tasks(index):
        folder = Path(task.path).parent
        assert folder.name == ("synth" if task.dataset.startswith("synth") else task.target), task.path
        assert (folder / "README.md").is_file() and task.name in (folder / "README.md").read_text()
        if folder.name != "synth":
            assert (folder / f"_base_{task.target}.yaml").is_file()


def test_includes_by_relative_path_and_by_name_from_a_subfolder(tmp_path):
    write(tmp_path, "bases/_colour.yaml", "include: ../_top.yaml\ntag: [colour]\n")
    write(tmp_path, "_top.yaml", "include: _base_referable_dr.yaml\nmetadata: {version: 3}\n")
    write(tmp_path, "deep/er/referable_dr_idrid_v3.yaml", """
task: referable_dr_idrid_v3
include: [../../bases/_colour.yaml]
dataset: idrid
metadata: {label_rule: grade >= 2}
""")
    task = TaskIndex([tmp_path]).get("referable_dr_idrid_v3")
    assert (task.target, task.tags, task.version) == ("referable_dr", ("colour",), 3)
    assert task.render_prompt() == REFERABLE_PROMPT
    assert task.hash != TaskIndex().get("referable_dr_idrid").hash


def test_an_include_name_found_twice_below_a_folder_is_an_error_naming_both(tmp_path):
    first = write(tmp_path, "a/_twin.yaml", "target: dr\n")
    second = write(tmp_path, "b/_twin.yaml", "target: glaucoma\n")
    write(tmp_path, "t_twin.yaml", GOOD.format(name="t_twin").replace("_base_dr.yaml", "_twin.yaml"))
    with pytest.raises(FocusError, match="'_twin.yaml' is ambiguous") as info:
        TaskIndex([tmp_path])
    assert str(first.resolve()) in str(info.value) and str(second.resolve()) in str(info.value)


def test_task_file_needs_its_own_name(tmp_path):
    write(tmp_path, "nameless.yaml", "include: _base_dr.yaml\ndataset: idrid\n")
    with pytest.raises(FocusError, match="own 'task: NAME' key"):
        TaskIndex([tmp_path])


def test_user_groups_are_checked(tmp_path):
    write(tmp_path, "_groups.yaml", "groups:\n  - group: mine\n    task: [dr_brset, dr_brsett]\n")
    with pytest.raises(FocusError, match="unknown task.*dr_brsett.*did you mean dr_brset"):
        TaskIndex([tmp_path])
    write(tmp_path, "_groups.yaml", "groups:\n  - group: dr\n    task: [dr_brset]\n")
    with pytest.raises(FocusError, match="group 'dr' is defined twice"):
        TaskIndex([tmp_path])
    write(tmp_path, "_groups.yaml", "groups:\n  - group: mine\n    task: [dr_brset]\n    aggregation: median\n")
    with pytest.raises(FocusError, match="unknown aggregation 'median'"):
        TaskIndex([tmp_path])


def test_missing_include_path_is_an_error(tmp_path):
    with pytest.raises(FocusError, match="not a folder"):
        TaskIndex([tmp_path / "nope"])


# --- expansion ---------------------------------------------------------------------------------------------


def test_pattern_expands_to_every_task_starting_with_glaucoma(index):
    assert index.expand("glaucoma_*") == ["glaucoma_brset", "glaucoma_g1020", "glaucoma_papila", "glaucoma_refuge"]
    assert index.expand("glaucoma_synth_*") == ["glaucoma_synth_desktop", "glaucoma_synth_mobile"]
    assert index.expand("*_synth_mobile") == ["dr_synth_mobile", "glaucoma_synth_mobile", "referable_dr_synth_mobile"]


def test_groups_tags_and_names_mix_without_duplicates(index):
    assert index.expand("glaucoma, glaucoma_brset,dr_idrid,glaucoma_*,glaucoma_synth_mobile") == [
        "glaucoma_brset", "glaucoma_papila", "glaucoma_refuge", "glaucoma_g1020", "dr_idrid", "glaucoma_synth_mobile"]
    assert index.expand(["brset", "dr_brset"]) == ["dr_brset", "referable_dr_brset", "glaucoma_brset"]
    assert len(index.expand("focus")) == 16


def test_proxy_tasks_need_asking_unless_named(index):
    assert "referable_dr_rfmid" not in index.expand("referable_dr")
    assert "referable_dr_rfmid" not in index.expand("referable_dr_*")
    assert index.expand("rfmid") == ["dr_rfmid"]
    assert index.expand("rfmid", include_proxy=True) == ["dr_rfmid", "referable_dr_rfmid"]
    assert index.expand("referable_dr_rfmid") == ["referable_dr_rfmid"]
    with pytest.raises(FocusError, match="only proxy tasks"):
        index.expand("proxy")


def test_unknown_names_suggest_close_matches(index):
    with pytest.raises(FocusError, match="unknown task, group or tag 'glaucoma_mbrset'; did you mean glaucoma_brset"):
        index.expand("glaucoma_mbrset")
    with pytest.raises(FocusError, match="matches no task"):
        index.expand("amd_*")
    with pytest.raises(FocusError, match="no tasks given"):
        index.expand(" , ")
    with pytest.raises(FocusError, match="did you mean dr_idrid"):
        index.get("dr_idird")


def test_task_records_select_split_and_defined_labels(index):
    task = index.get("glaucoma_brset")
    records = [ImageRecord("brset", f"i{k}", f"p{k}", Path("x"), "x", split=split, glaucoma=label)
               for k, (split, label) in enumerate([("test", 1), ("test", None), ("train", 0), ("test", 0)])]
    assert [r.image_id for r in task.records(records)] == ["i0", "i3"]
    assert [r.image_id for r in task.records(records, "train")] == ["i2"]

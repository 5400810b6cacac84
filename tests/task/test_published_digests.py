"""Published test-split digests (``task.test_digests``): the canonical digest as documented, one entry per task
that exists and at its version, written by the maintainers' command into the task's own folder, and used by
``verify`` when the data is not at hand. (That the shipped synthetic digests equal the demo's data is checked in
tests/system/test_verify_demo.py, which renders it.)"""

import hashlib
import shutil

import pytest
from helpers.records import synthetic_root
from helpers.submissions import METHOD, honest_results, rewrite_jsonl
from hypothesis import given
from hypothesis import strategies as st

from focus_eval.cli import main
from focus_eval.data.registry import SYNTHETIC_DATASETS
from focus_eval.resources import resource_dir
from focus_eval.scoring import score_unit
from focus_eval.task import TaskIndex
from focus_eval.task.test_digests import DIGESTS_FILE, read_digests, same_version, split_digest
from focus_eval.verification import verify

CUSTOM = """task: {name}
include: _base_{target}.yaml
dataset: synth_desktop
tag: []
metadata:
  version: 2.0
  label_rule: the synthetic dataset's {target} label
"""

ids = st.text(alphabet=st.characters(blacklist_characters="\t\r\n", blacklist_categories=("Cs",)), min_size=1,
              max_size=8)
labels = st.one_of(st.integers(0, 4), st.lists(st.integers(0, 6), unique=True, max_size=4))


def test_the_digest_is_the_sha256_of_the_sorted_documented_lines():
    expected = hashlib.sha256("a1\t0\nb2\t0,2\nc3\t1\n".encode("utf-8")).hexdigest()
    assert split_digest([("c3", 1), ("a1", 0), ("b2", [2, 0])]) == (expected, 3)


@given(pairs=st.dictionaries(ids, labels, min_size=1, max_size=12), data=st.data())
def test_the_digest_depends_on_the_pairs_not_their_order(pairs, data):
    items = list(pairs.items())
    shuffled = data.draw(st.permutations(items))
    assert split_digest(items) == split_digest(shuffled)
    image, label = data.draw(st.sampled_from(items))
    other = (label + 1) if isinstance(label, int) else [*label, 7]
    changed = [(i, other if i == image else l) for i, l in items]
    assert split_digest(changed)[0] != split_digest(items)[0]
    assert split_digest(items[:-1])[0] != split_digest(items)[0]


@pytest.mark.parametrize("pairs, problem", [([("a", 0), ("a", 1)], "listed twice"),
                                            ([("a\tb", 0)], "tab or a line break")])
def test_pairs_that_cannot_be_written_canonically_are_refused(pairs, problem):
    with pytest.raises(ValueError, match=problem):
        split_digest(pairs)


def test_every_shipped_digest_names_a_task_at_its_version_and_every_synthetic_task_has_one(index):
    shipped = read_digests(resource_dir("tasks"))
    for name, digest in shipped.items():
        task = index.get(name)
        assert same_version(digest.version, task.version), name
        assert digest.n_test > 0
    synthetic = {t.name for t in index.tasks() if t.dataset in SYNTHETIC_DATASETS}
    assert synthetic and synthetic <= set(shipped)


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return synthetic_root(tmp_path_factory, "data", n=40, seed=21)


@pytest.fixture(scope="module")
def custom(tmp_path_factory, data_root):
    """A task folder with two tasks on synth_desktop: one whose digest the maintainers' command writes, one
    without; and the index that reads it."""
    folder = tmp_path_factory.mktemp("tasks")
    for name, target in (("dr_synth_custom", "dr"), ("glaucoma_synth_custom", "glaucoma")):
        (folder / f"{name}.yaml").write_text(CUSTOM.format(name=name, target=target))
    shipped = (resource_dir("tasks") / DIGESTS_FILE).read_bytes()
    assert main(["verify", "--write-digests", "--data-root", str(data_root), "--include-path", str(folder),
                 "--tasks", "dr_synth_custom"]) == 0
    assert (resource_dir("tasks") / DIGESTS_FILE).read_bytes() == shipped  # written beside the task, not here
    return folder, TaskIndex([folder])


def test_the_maintainers_command_writes_the_digest_into_the_tasks_own_folder(custom, data_root):
    folder, index = custom
    (digest,) = read_digests(folder).values()
    task = index.get("dr_synth_custom")
    assert (digest.task, digest.version) == ("dr_synth_custom", 2.0)
    from focus_eval.data.registry import load_dataset

    load = load_dataset("synth_desktop", data_root)
    pairs = [(r.image_id, task.label(r)) for r in load.records if r.split == "test" and task.label(r) is not None]
    assert (digest.sha256, digest.n_test) == split_digest(pairs)


def test_without_the_data_a_line_is_checked_against_its_published_digest(tmp_path, custom, data_root):
    folder, index = custom
    out = tmp_path / "out"
    model = honest_results(out, data_root, tasks=("dr_synth_custom", "glaucoma_synth_custom"), index=index)
    verdicts = {v.task: v for v in verify([out], index=index)}
    assert verdicts["dr_synth_custom"].state == "verified"
    assert verdicts["glaucoma_synth_custom"].reasons == ["no published digest for this task (no --data-root given)"]
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    rewrite_jsonl(copy / model.name / "samples" / f"dr_synth_custom.{METHOD}.jsonl",
                  lambda rows: rows[0].update(label=1 - rows[0]["label"]))
    score_unit(copy / model.name, "dr_synth_custom", METHOD)
    (bad,) = [v for v in verify([copy], index=index) if v.task == "dr_synth_custom"]
    assert bad.state == "mismatch" and [f.figure for f in bad.findings] == ["test_digest"]
    assert bad.reasons[0].startswith("test split: the samples' image ids and labels")

"""The pooled FunBench L1 set on the miniature layouts: every member present read as on its own and prefixed
with its name, each record keeping its member's split, the absent members named, and the pooled L1b task asking
over colour fundus, OCT and ultra-wide-field images at FunBench's random guess 0.375."""

import shutil

import pytest

from focus_eval.cli import main
from focus_eval.data.readers.funbench_pool import MEMBERS
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("pool")
    assert main(["synth", "--layout", "real", "--out", str(root)]) == 0
    return root


def test_pool_is_the_union_of_its_members_with_their_splits(root):
    pool = load_dataset("funbench_pool", root)
    expected = set()
    for member in MEMBERS:
        part = load_dataset(member, root)
        expected |= {(f"{member}/{r.image_id}", f"{member}/{r.patient_id}", r.split, r.modality)
                     for r in part.records}
    got = {(r.image_id, r.patient_id, r.split, r.modality) for r in pool.records}
    assert got == expected and len(pool.records) == len(expected)
    assert pool.metadata["split_source"] == "official" and pool.metadata["members"] == list(MEMBERS)
    assert {r.modality for r in pool.split("test")} == {"cfp", "oct", "uwf"}
    assert all((root / r.relpath).resolve() == r.path.resolve() for r in pool.records)


def test_absent_members_are_named_and_none_present_is_an_error(root, tmp_path):
    for member in ("octid", "neh"):
        shutil.copytree(root / member, tmp_path / member)
    pool = load_dataset("funbench_pool", tmp_path)
    assert {r.image_id.split("/")[0] for r in pool.records} == {"octid", "neh"}
    assert any(w.startswith("pooled datasets not under the data root, left out: idrid, ddr") for w in pool.warnings)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataError, match="none of the pooled FunBench datasets"):
        load_dataset("funbench_pool", empty)


def test_pooled_l1b_task_random_guess_is_the_papers(root):
    from focus_eval.runner.records import task_records
    from focus_eval.task import TaskIndex
    from focus_eval.task.questions import guess_of_questions

    index = TaskIndex()
    assert index.expand("funbench_l1b_pooled") == ["funbench_l1b_modality_funbench_pool"]
    task = index.get("funbench_l1b_modality_funbench_pool")
    records = task_records(load_dataset("funbench_pool", root), task, "test")
    # three true classes, each offered in every question of four options: sensitivity 1/4, specificity 3/4
    assert guess_of_questions(task, records)["funbench_f1"] == pytest.approx(2 * 0.25 * 0.75 / (0.25 + 0.75))


def test_datasets_check_lists_the_pool_only_when_named(root, capsys):
    import json

    assert main(["datasets", "check", "--data-root", str(root), "--json"]) == 0
    assert "funbench_pool" not in {e["name"] for e in json.loads(capsys.readouterr().out)["datasets"]}
    assert main(["datasets", "check", "--data-root", str(root), "funbench_pool", "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["datasets"]
    assert entry["name"] == "funbench_pool" and entry["usable"]

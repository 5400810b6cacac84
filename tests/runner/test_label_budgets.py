"""--train-fraction: probes fitted on a stratified share of the training patients, each budget and seed its
own unit with both in the fingerprint; ``report label-efficiency`` reads the lines back."""

import json
import math
from collections import defaultdict

import pytest
from helpers.records import synthetic_root

from focus_eval.cli import main
from focus_eval.data.registry import load_dataset
from focus_eval.options import RunOptions
from focus_eval.results.schema import read_jsonl


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return synthetic_root(tmp_path_factory, "data", n=120, seed=11)


def hand_count(data_root, fraction):
    """Training patients a probe with this budget sees: per label stratum ceil(fraction * n), at least one."""
    load = load_dataset("synth_desktop", data_root)
    labels = defaultdict(list)
    for r in load.records:
        if r.split == "train" and r.label("dr") is not None:
            labels[r.patient_id or r.image_id].append(r.label("dr"))
    strata = defaultdict(int)
    for values in labels.values():
        strata[max(values)] += 1
    return len(labels), sum(max(1, math.ceil(fraction * n)) for n in strata.values())


def test_a_tenth_of_the_training_patients(tmp_path, data_root):
    out = tmp_path / "out"
    assert main(["--no-progress", "--num-workers", "0", "--n-boot", "50", "--model", "tiny-vit",
                 "--tasks", "dr_synth_desktop", "--data-root", str(data_root), "--output-path", str(out),
                 "--cache-dir", str(tmp_path / "cache"), "--train-fraction", "0.1,0.5", "--train-seeds", "2"]) == 0
    rows = read_jsonl(out / "tiny-vit" / "results.jsonl")
    probes = {r["task"]: r for r in rows if r["method"] == "linear_probe"}
    assert set(probes) == {"dr_synth_desktop", *(f"dr_synth_desktop@train{f}-s{s}" for f in (0.1, 0.5)
                                                 for s in (0, 1))}
    everyone, tenth = hand_count(data_root, 0.1)
    assert probes["dr_synth_desktop"]["extra"]["n_train_patients"] == everyone
    for seed in (0, 1):
        line = probes[f"dr_synth_desktop@train0.1-s{seed}"]
        assert (line["extra"]["train_fraction"], line["extra"]["train_seed"]) == (0.1, seed)
        assert line["extra"]["n_train_patients"] == tenth < everyone
    assert main(["report", "label-efficiency", str(out), "--json", str(tmp_path / "l.json")]) == 0
    table = json.loads((tmp_path / "l.json").read_text())["rows"]
    assert [(r["fraction"], r["patients"], r["seeds"]) for r in table] == [
        (0.1, tenth, 2), (0.5, hand_count(data_root, 0.5)[1], 2), (1.0, everyone, 1)]


def test_the_budget_and_seed_are_in_the_fingerprint(tmp_path, data_root):
    from focus_eval.runner.provenance import changes
    from focus_eval.runner.run import Runner

    runner = Runner(RunOptions(model="tiny-vit", tasks="dr_synth_desktop", data_root=data_root,
                               output_path=tmp_path, train_fraction="0.1,0.5", train_seeds=2,
                               methods=["linear_probe"]))
    prints = {u.task.name: runner.fingerprint(u) for u in runner.units}
    a, b = prints["dr_synth_desktop@train0.1-s0"], prints["dr_synth_desktop@train0.1-s1"]
    assert any(c.startswith("train_seed") for c in changes(a, b))
    assert any(c.startswith("train_fraction") for c in changes(a, prints["dr_synth_desktop@train0.5-s0"]))
    assert "train_fraction" not in prints["dr_synth_desktop"]


def test_a_budget_makes_units_of_the_probes_only(tmp_path, data_root):
    from focus_eval.runner.run import Runner

    runner = Runner(RunOptions(model="tiny-clip", tasks="dr_synth_desktop", data_root=data_root,
                               output_path=tmp_path, train_fraction="0.1"))
    units = {(u.task.name, u.method) for u in runner.units}
    assert ("dr_synth_desktop@train0.1-s0", "linear_probe") in units
    assert ("dr_synth_desktop", "zero_shot") in units
    assert not any(m == "zero_shot" and "@" in t for t, m in units)


def test_resume_keeps_each_draw_apart(tmp_path, data_root, capsys):
    out = tmp_path / "out"
    common = ["--no-progress", "--num-workers", "0", "--n-boot", "50", "--model", "tiny-vit", "--tasks",
              "dr_synth_desktop", "--data-root", str(data_root), "--output-path", str(out), "--cache-dir",
              str(tmp_path / "cache"), "--train-fraction", "0.1"]
    assert main(common) == 0
    first = {r["task"]: r for r in read_jsonl(out / "tiny-vit" / "results.jsonl")}
    capsys.readouterr()
    assert main([*common, "--train-seeds", "2"]) == 0
    assert "finished 1, already done 2" in capsys.readouterr().out
    second = {r["task"]: r for r in read_jsonl(out / "tiny-vit" / "results.jsonl")}
    assert set(second) == {*first, "dr_synth_desktop@train0.1-s1"}
    assert second["dr_synth_desktop@train0.1-s0"] == first["dr_synth_desktop@train0.1-s0"]

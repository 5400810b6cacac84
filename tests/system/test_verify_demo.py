"""``focus-eval verify`` on a real demo run (``focus-eval demo --models efficientnet-lite0`` with the demo's own
data): the honest run passes, from its published digests alone and against the data; a run whose AUROC was raised
by 0.05 in results.jsonl, and one whose sample label disagrees with the dataset, are refused naming the task; the
published digests of the synthetic tasks are those of the data the demo renders."""

import json
import shutil

import pytest
from helpers.submissions import rewrite_jsonl

from focus_eval.cli import build_parser, main
from focus_eval.data.registry import SYNTHETIC_DATASETS, load_dataset
from focus_eval.resources import resource_dir
from focus_eval.task.test_digests import read_digests, split_digest, split_pairs

pytestmark = pytest.mark.slow  # a demo run of one real encoder on the demo's full synthetic data

MODEL = "efficientnet-lite0"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    assert main(["demo", "--out", str(out), "--models", MODEL, "--n-boot", "200", "--no-progress"]) == 0
    return out


def test_the_published_synthetic_digests_are_those_of_the_data_the_demo_renders(demo, index):
    defaults = build_parser("demo").parse_args([])
    manifest = json.loads((demo / "data" / "synth_desktop" / "synth.json").read_text())
    assert (manifest["n"], manifest["seed"]) == (defaults.n, defaults.seed)
    shipped = read_digests(resource_dir("tasks"))
    tasks = [t for t in index.tasks() if t.dataset in SYNTHETIC_DATASETS]
    computed = {t.name: split_digest(split_pairs(t, load_dataset(t.dataset, demo / "data", cohort=t.cohort)))
                for t in tasks}
    assert {name: (shipped[name].sha256, shipped[name].n_test) for name in computed} == computed, (
        "the synthetic data changed: run `focus-eval demo`, then `focus-eval verify --write-digests --data-root "
        "demo-out/data` and commit tasks/_test_digests.yaml")


def test_verify_passes_the_honest_demo_run_with_and_without_its_data(demo, tmp_path, capsys):
    results = demo / "results"
    assert main(["verify", str(results)]) == 0
    assert main(["verify", str(results), "--data-root", str(demo / "data"), "--json", str(tmp_path / "v.json")]) == 0
    record = json.loads((tmp_path / "v.json").read_text())
    assert record["summary"] == {"verified": 6, "mismatch": 0, "unverifiable": 0}
    bundle = tmp_path / "bundle"
    assert main(["report", "bundle", str(results), "-o", str(bundle), "--submitter", "Demo clinic"]) == 0
    assert main(["verify", str(bundle)]) == 0
    assert "Demo clinic" in capsys.readouterr().out


def copy_results(demo, tmp_path):
    copy = tmp_path / "results"
    shutil.copytree(demo / "results", copy)
    return copy / MODEL


def test_verify_refuses_a_run_whose_auroc_was_raised_naming_the_task(demo, tmp_path, capsys):
    model = copy_results(demo, tmp_path)
    rows = [json.loads(line) for line in (model / "results.jsonl").read_text().splitlines()]
    line = next(i for i, r in enumerate(rows) if r["metrics"]["auroc"] <= 0.95)
    task, before = rows[line]["task"], rows[line]["metrics"]["auroc"]
    rewrite_jsonl(model / "results.jsonl", lambda r: r[line]["metrics"].update(auroc=before + 0.05))
    capsys.readouterr()
    assert main(["verify", str(model.parent)]) == 1
    out = capsys.readouterr().out
    assert f"{task} ({MODEL}, linear_probe): mismatch" in out
    assert f"metrics.auroc: reported {before + 0.05:.6g}, recomputed {before:.6g}" in out
    assert "5 verified, 1 mismatch, 0 unverifiable" in out


def test_verify_refuses_a_run_whose_sample_label_disagrees_with_the_dataset(demo, tmp_path, capsys):
    model = copy_results(demo, tmp_path)
    task = "glaucoma_synth_mobile"
    rewrite_jsonl(model / "samples" / f"{task}.linear_probe.jsonl", lambda r: r[0].update(label=1 - r[0]["label"]))
    assert main(["score", str(model)]) == 0  # the results line now agrees with its samples
    capsys.readouterr()
    assert main(["verify", str(model.parent), "--data-root", str(demo / "data")]) == 1
    out = capsys.readouterr().out
    assert f"{task} ({MODEL}, linear_probe): mismatch" in out
    assert "1 test sample line(s) have labels that disagree with synth_mobile as read here" in out
    assert main(["verify", str(model.parent)]) == 1  # without the data: the published digest
    out = capsys.readouterr().out
    assert f"{task} ({MODEL}, linear_probe): mismatch" in out
    assert "differ from the published test split" in out
    assert "5 verified, 1 mismatch, 0 unverifiable" in out

"""Nothing is dropped silently: a corrupt or torn sample line stops `score` naming file and line (or, with
--skip-bad, is left out and counted), train/val images that fail to decode are counted per split and printed,
and a torn results line stops the leaderboard naming it."""

import json

import pytest

from focus_eval.cli import main
from focus_eval.results.schema import read_jsonl

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    from focus_eval.synth.datasets import write_synthetic

    root = tmp_path_factory.mktemp("drops")
    write_synthetic(root / "data", n=40, seed=4)
    args = ["--model", "tiny-vit", "--tasks", "dr_synth_desktop,glaucoma_synth_desktop", "--data-root",
            str(root / "data"), "--output-path", str(root / "out"), "--no-progress", "--num-workers", "0",
            "--n-boot", "50", "--cache-dir", str(root / "cache")]
    assert main(args) == 0
    return root


def copy_model(finished, tmp_path):
    import shutil

    return shutil.copytree(finished / "out" / "tiny-vit", tmp_path / "tiny-vit")


@pytest.mark.parametrize("damage", ["corrupt", "torn"])
def test_score_stops_on_a_bad_sample_line_and_skip_bad_counts_it(finished, tmp_path, capsys, damage):
    model = copy_model(finished, tmp_path)
    path = model / "samples" / "dr_synth_desktop.linear_probe.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    n, n_test = len(lines), sum(1 for line in lines if json.loads(line)["split"] == "test")
    assert n_test < n  # test rows first, then the validation rows
    if damage == "corrupt":
        lines[3] = lines[3][:10] + "#" + lines[3][11:]
        where = "line 4"
    else:
        lines[-1] = lines[-1][: len(lines[-1]) // 2]
        where = f"line {n}"
    path.write_text("".join(lines))
    capsys.readouterr()
    assert main(["score", str(model)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and where in err and "--skip-bad" in err
    assert main(["score", "--skip-bad", str(model)]) == 0
    assert where in capsys.readouterr().err
    line = next(r for r in read_jsonl(model / "results.jsonl") if r["task"] == "dr_synth_desktop")
    # the corrupt line is a test row (line 4), the torn one the last validation row
    assert line["n"] == n_test - (damage == "corrupt") and line["extra"]["n_bad_lines"] == 1


def test_train_and_val_images_that_fail_are_counted_per_split(finished, tmp_path, capsys):
    import shutil

    from focus_eval.data.registry import load_dataset

    data = shutil.copytree(finished / "data", tmp_path / "data")
    load = load_dataset("synth_desktop", data)
    train = sorted((r for r in load.records if r.split == "train"), key=lambda r: r.image_id)[:3]
    val = sorted((r for r in load.records if r.split == "val"), key=lambda r: r.image_id)[:1]
    for record in [*train, *val]:
        record.path.write_bytes(b"not an image")
    capsys.readouterr()
    assert main(["--model", "tiny-vit", "--tasks", "dr_synth_desktop", "--data-root", str(data), "--output-path",
                 str(tmp_path / "out"), "--no-progress", "--num-workers", "0", "--n-boot", "20",
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    err = capsys.readouterr().err
    assert "3 train image(s) could not be embedded" in err and "1 val image(s)" in err
    (line,) = read_jsonl(tmp_path / "out" / "tiny-vit" / "results.jsonl")
    assert line["extra"]["n_errors_train"] == 3 and line["extra"]["n_errors_val"] == 1


def test_the_leaderboard_stops_on_a_torn_results_line(finished, tmp_path, capsys):
    model = copy_model(finished, tmp_path)
    results = model / "results.jsonl"
    data = results.read_bytes()
    results.write_bytes(data[: len(data) - 30])
    capsys.readouterr()
    assert main(["leaderboard", str(model), "-o", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err
    assert str(results) in err and "line 2" in err

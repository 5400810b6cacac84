"""Metrics-only publishing for private sites: 'focus-eval leaderboard --no-samples' reads no per-image file and
lets no image or patient id reach the site; provenance and group lines are shown when results carry them."""

import json

from focus_eval.cli import main
from focus_eval.leaderboard.pages.groups import provenance_text
from focus_eval.results.collect import metrics_only
from helpers.leaderboard_data import MODELS, TASKS, write_results

# ids a run records in a results line when a split file leaves images out or shares patients across splits
LEAKED_PATIENT, MISSING_IMAGE = "p0007", "img0042"


def results_with_ids(root):
    write_results(root, models=MODELS[:2], tasks=TASKS[:2])
    path = root / MODELS[0].folder / "results.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["extra"]["split_policy"] = {
        "split_source": "file:splits.csv",
        "patient_overlap": {"count": 3, "first": [LEAKED_PATIENT, "p0008", "p0009"]},
        "split_file_missing": {"count": 1, "first": [MISSING_IMAGE]}}
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def site_text(site):
    return "\n".join(p.read_text(errors="replace") for p in site.rglob("*") if p.is_file())


def test_no_samples_keeps_every_image_and_patient_id_off_the_site(tmp_path, capsys):
    results = results_with_ids(tmp_path / "results")
    assert main(["leaderboard", str(results), "-o", str(tmp_path / "public")]) == 0
    public = site_text(tmp_path / "public")
    assert LEAKED_PATIENT in public and MISSING_IMAGE in public  # a normal build publishes the raw lines
    assert "sample file(s) for calibration curves" in capsys.readouterr().out
    assert main(["leaderboard", str(results), "-o", str(tmp_path / "private"), "--no-samples"]) == 0
    assert "no sample files (--no-samples: metrics only)" in capsys.readouterr().out
    private = site_text(tmp_path / "private")
    for image_or_patient in (LEAKED_PATIENT, MISSING_IMAGE, "img0000", "p0000", "img-error"):
        assert image_or_patient not in private
    data = json.loads((tmp_path / "private" / "data" / "results.json").read_text())
    policy = next(r["extra"]["split_policy"] for r in data if "split_policy" in r["extra"])
    assert policy == {"split_source": "file:splits.csv", "patient_overlap": 3, "split_file_missing": 1}
    assert "Published without per-image data (--no-samples)" in private
    assert all(r["metrics"] for r in data)  # the metrics themselves are all there


def test_metrics_only_drops_id_valued_keys():
    row = {"metrics": {"auroc": 0.8}, "extra": {"image_ids": ["a"], "notes": [{"patient_id": "x", "n": 2}]}}
    assert metrics_only(row) == {"metrics": {"auroc": 0.8}, "extra": {"notes": [{"n": 2}]}}


def test_provenance_text_says_where_a_model_came_from():
    assert provenance_text({"preset": "built-in", "hub_id": "org/model", "revision": "abc123"}) == \
        "hub org/model @ abc123; built-in preset"
    assert provenance_text({"preset": "family", "adapter": "hf_vision", "local": True, "weights": "ckpt",
                            "digest": "0123456789abcdef"}) == \
        "local files ckpt (digest 0123456789ab); family adapter hf_vision"
    assert provenance_text({"preset": "user", "preset_file": "x.yaml", "no_weights": True,
                            "adapter_class": "pkg.mod:Cls", "adapter_package": "pkg 1.0"}) == \
        "no weights (the adapter's code alone); user preset x.yaml; adapter pkg.mod:Cls from pkg 1.0"


def test_group_lines_are_shown_and_kept_apart_from_task_lines(tmp_path):
    results = tmp_path / "results"
    write_results(results, models=MODELS[:1], tasks=TASKS[:2])
    path = results / MODELS[0].folder / "results.jsonl"
    group = {"kind": "group", "model": MODELS[0].name, "method": "linear_probe", "adapter": None, "group": "synth",
             "tasks": [TASKS[0].name, TASKS[1].name], "metrics": {"auroc": 0.8123, "auprc": 0.7},
             "ci": {"auroc": [0.75, 0.87]}}
    path.write_text(path.read_text() + json.dumps(group) + "\n")
    assert main(["leaderboard", str(results), "-o", str(tmp_path / "site")]) == 0
    index = (tmp_path / "site" / "index.html").read_text()
    section = index[index.index('<section id="groups">'):index.index('<section id="models">')]
    assert "synth" in section and "0.812" in section and "[0.750, 0.870]" in section
    data = json.loads((tmp_path / "site" / "data" / "results.json").read_text())
    assert all(r.get("kind") != "group" for r in data) and len(data) == 2

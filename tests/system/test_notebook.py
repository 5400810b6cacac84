"""The notebook API: load_results has one row per results line with the leaderboard's numbers, load_samples
one row per image, and every python block of docs/NOTEBOOK.md runs."""

import csv
import json
import re
from pathlib import Path

import pytest

import focus_eval
from focus_eval.errors import FocusError
from helpers.leaderboard_data import write_results

DOC = Path(__file__).resolve().parents[2] / "docs" / "NOTEBOOK.md"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return write_results(tmp_path_factory.mktemp("nb") / "results")


def _lines(root: Path) -> list[dict]:
    return [json.loads(line) for path in sorted(root.glob("*/results.jsonl"))
            for line in path.read_text().splitlines() if line.strip()]


def test_one_row_per_results_line_with_the_sites_numbers(results, tmp_path):
    from focus_eval.leaderboard import build_site

    frame = focus_eval.load_results(results)
    assert len(frame) == len(_lines(results)) > 0
    assert frame["auroc"].dtype == "float64" and frame["untrained"].dtype == bool and frame["n"].dtype == "Int64"
    build_site([results], tmp_path / "site")
    site = json.loads((tmp_path / "site" / "data" / "results.json").read_text())
    assert len(site) == len(frame)
    by_key = {(r["model"], r["method"], r["task"]): r for r in site}
    for row in frame.to_dict("records"):
        line = by_key[(row["model"], row["method"], row["task"])]
        assert _same(row["auroc"], line["metrics"]["auroc"])
        assert _same(row["auroc_ci_low"], (line["ci"].get("auroc") or [None])[0])
        age = line["fairness"].get("age") or {}
        assert _same(row.get("fairness.age.eo_gap"), age.get("eo_gap"))
    with open(tmp_path / "site" / "data" / "calibration.csv", newline="") as f:
        for cal in csv.DictReader(f):
            match = frame[(frame.model == cal["model"]) & (frame.method == cal["method"]) & (frame.task == cal["task"])]
            assert len(match) == 1 and abs(match["ece"].iloc[0] - float(cal["ece"])) < 1e-3


def _same(a, b) -> bool:
    if b is None:
        return a is None or a != a  # null becomes NaN
    return abs(a - b) < 1e-12


def test_samples_are_the_units_sample_file(results):
    frame = focus_eval.load_samples(results, task="dr_synth_desktop", method="linear_probe",
                                    model="efficientnet-lite0")
    path = results / "efficientnet-lite0" / "samples" / "dr_synth_desktop.linear_probe.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    tests = [r for r in rows if r["split"] == "test"]
    assert list(frame["image_id"]) == [r["image_id"] for r in tests] and len(tests) < len(rows)
    rows = tests
    assert all(_same(a, r["score"]) for a, r in zip(frame["score"], rows))
    with pytest.raises(FocusError, match="2 results lines"):
        focus_eval.load_samples(results, task="dr_synth_desktop", method="zero_shot")


def test_limited_lines_only_on_request(tmp_path):
    root = write_results(tmp_path / "r")
    path = root / "efficientnet-lite0" / "results.jsonl"
    lines = _lines(root)
    first = json.loads(path.read_text().splitlines()[0])
    first.update(limited=True, extra={**first.get("extra", {}), "limit": 10})
    rest = path.read_text().splitlines()[1:]
    path.write_text("\n".join([json.dumps(first), *rest]) + "\n")
    assert len(focus_eval.load_results(root)) == len(lines) - 1
    assert focus_eval.load_results(root, include_limited=True)["limited"].sum() == 1


def test_the_notebook_page_runs(results, capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 3
    scope = {"RESULTS": str(results)}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), scope)
    assert len(scope["results"]) == len(_lines(results)) and len(scope["samples"]) > 0
    assert "auroc" in capsys.readouterr().out


def test_created_is_a_utc_timestamp_and_a_bad_one_names_its_line(tmp_path):
    import pandas as pd

    root = write_results(tmp_path / "r")
    frame = focus_eval.load_results(root)
    assert str(frame["created"].dtype).startswith("datetime64") and str(frame["created"].dt.tz) == "UTC"
    lines = {(r["model"], r["method"], r["task"]): r for r in _lines(root) if r.get("kind") != "group"}
    for row in frame.to_dict("records"):
        assert row["created"] == pd.Timestamp(lines[(row["model"], row["method"], row["task"])]["created"])
    path = root / "efficientnet-lite0" / "results.jsonl"
    text = path.read_text().splitlines()
    first = json.loads(text[0])
    first["created"] = "2026-05-07 14:00:00+02:00"  # another zone: the same instant in UTC
    path.write_text("\n".join([json.dumps(first), *text[1:]]) + "\n")
    again = focus_eval.load_results(root)
    assert (again["created"] == pd.Timestamp("2026-05-07T12:00:00Z")).sum() >= 1
    first["created"] = "last tuesday"
    path.write_text("\n".join([json.dumps(first), *text[1:]]) + "\n")
    with pytest.raises(FocusError, match=r"results\.jsonl, row 1: created: 'last tuesday' is not an ISO 8601"):
        focus_eval.load_results(root)


def test_a_model_folder_whose_name_is_not_utf8_loads(tmp_path):
    import os

    root = write_results(tmp_path / "r")
    expected = focus_eval.load_results(root)
    odd = os.path.join(os.fsencode(root), b"caf\xe9-\xff-model")
    try:
        os.rename(os.fsencode(root / "efficientnet-lite0"), odd)
    except OSError as exc:
        pytest.skip(f"this file system refuses a name that is not UTF-8: {exc}")
    frame = focus_eval.load_results(root)
    assert len(frame) == len(expected)
    moved = frame[frame["model"] == "efficientnet-lite0"]
    assert len(moved) > 0 and all(os.fsencode(s) == os.path.join(odd, b"results.jsonl") for s in moved["source"])
    assert all(Path(s).is_file() for s in frame["source"])
    assert list(moved["auroc"]) == list(expected[expected["model"] == "efficientnet-lite0"]["auroc"])
    samples = focus_eval.load_samples(root, task="dr_synth_desktop", method="linear_probe", model="efficientnet-lite0")
    assert len(samples) > 0 and set(samples["model"]) == {"efficientnet-lite0"}

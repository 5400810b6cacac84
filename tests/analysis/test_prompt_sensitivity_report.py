"""``report prompt-sensitivity`` on results lines with known scores: spreads, Kendall's tau between variant
rankings against a hand count, and the stability sentence per target."""

import json

import pytest

from focus_eval.analysis.fragility import kendall_tau
from focus_eval.cli import main
from focus_eval.results.schema import dumps

# model -> variant -> AUROC on dr_x; "swap" reverses m1 and m2 only, "flip" reverses all three
SCORES = {"m1": {"default": 0.9, "swap": 0.7, "flip": 0.6},
          "m2": {"default": 0.8, "swap": 0.85, "flip": 0.7},
          "m3": {"default": 0.6, "swap": 0.5, "flip": 0.9}}


def write(root):
    for model, by_variant in SCORES.items():
        rows = []
        for variant, auroc in by_variant.items():
            extra = {} if variant == "default" else {"prompt_variant": variant, "base_task": "dr_x"}
            task = "dr_x" if variant == "default" else f"dr_x@{variant}"
            rows.append({"model": model, "method": "prompt", "task": task, "dataset": "x", "target": "dr",
                         "metrics": {"auroc": auroc}, "extra": extra})
        (root / model).mkdir(parents=True)
        (root / model / "results.jsonl").write_text("".join(dumps(r) + "\n" for r in rows))
    return root


def test_kendall_tau_by_hand():
    assert kendall_tau({"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 2, "c": 3}) == 1
    assert kendall_tau({"a": 1, "b": 2, "c": 3}, {"a": 3, "b": 2, "c": 1}) == -1
    # one discordant pair of three: (2 - 1) / 3
    assert kendall_tau({"a": 1, "b": 2, "c": 3}, {"a": 2, "b": 1, "c": 3}) == pytest.approx(1 / 3)
    assert kendall_tau({"a": 1}, {"a": 1}) is None


def test_spread_and_tau_matrix(tmp_path):
    root = write(tmp_path / "out")
    assert main(["report", "prompt-sensitivity", str(root), "--json", str(tmp_path / "r.json")]) == 0
    record = json.loads((tmp_path / "r.json").read_text())
    m1 = next(r for r in record["rows"] if r["model"] == "m1")
    assert (m1["min"], m1["max"], m1["variants"]) == (0.6, 0.9, 3)
    assert m1["mean"] == pytest.approx((0.9 + 0.7 + 0.6) / 3)
    assert m1["sd"] == pytest.approx(0.152752523, abs=1e-6)
    taus = {(p["a"], p["b"]): p["tau"] for p in record["kendall_tau"]["dr"]}
    assert taus[("default", "swap")] == pytest.approx(1 / 3)
    assert taus[("default", "flip")] == pytest.approx(-1)
    assert "NOT stable" in record["stability"][0] and record["stability"][0].startswith("dr:")


def test_no_variant_lines_is_an_error(tmp_path, capsys):
    root = tmp_path / "out" / "m"
    root.mkdir(parents=True)
    (root / "results.jsonl").write_text(dumps({"model": "m", "method": "prompt", "task": "dr_x", "dataset": "x",
                                               "target": "dr", "metrics": {"auroc": 0.7}}) + "\n")
    assert main(["report", "prompt-sensitivity", str(tmp_path / "out")]) == 2
    assert "--prompt-variants" in capsys.readouterr().err

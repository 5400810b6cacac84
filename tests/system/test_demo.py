"""`focus-eval demo`: the main job end to end, offline, and its leaderboard in a real browser."""

import json

import pytest
from helpers.browser_support import Visit

from focus_eval.cli import main
from focus_eval.commands.demo import DEMO_MODELS
from focus_eval.results.schema import read_jsonl, validate_result_dict

pytestmark = pytest.mark.slow  # the whole demo, then its site in a browser


def test_demo_evaluates_every_family_and_builds_a_site_that_opens_cleanly(tmp_path, browser, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--n", "120", "--n-boot", "100"]) == 0
    printed = capsys.readouterr().out
    index = out / "site" / "index.html"
    assert index.as_uri() in printed
    families = set()
    for model in DEMO_MODELS:
        rows = read_jsonl(out / "results" / model / "results.jsonl")
        assert {r["task"] for r in rows} == {f"{t}_synth_{d}" for t in ("dr", "referable_dr", "glaucoma")
                                             for d in ("desktop", "mobile")}
        for r in rows:
            validate_result_dict(r)
        families.add(rows[0]["family"])
    assert families == {"vm", "vlm", "mllm"}
    lite0 = read_jsonl(out / "results" / "efficientnet-lite0" / "results.jsonl")
    assert max(r["metrics"]["auroc"] for r in lite0) > 0.8  # real ImageNet features separate synthetic DR
    data = json.loads((out / "site" / "data" / "results.json").read_text())
    assert len(data) == sum(len(read_jsonl(out / "results" / m / "results.jsonl")) for m in DEMO_MODELS)

    # the per-image pages show a thumbnail of each test image
    thumbs = list((out / "site" / "thumbs").glob("*.jpg"))
    assert thumbs and all(t.stat().st_size > 0 for t in thumbs)
    sample_page = next((out / "site" / "samples").glob("dr_synth_desktop/efficientnet-lite0*.html"))
    assert sample_page.read_text().count('<img class="thumb"') >= 10
    assert "[demo] next:" in printed and "focus-eval report ranks" in printed

    visit = Visit(browser)
    page = visit.open(index)
    assert page.locator("svg rect").count() > 10
    visit.assert_clean()

"""Option badges only for real departures: a default zero-shot run records the logit scale the model itself
learned (``zs_scale`` with ``zs_convention: model``), which is no option and gets no badge on any page (it is
shown in the model card); a run with ``--zs-scale 100`` gets its badge. Sites built from the runner's own
results, checked in the browser."""

from __future__ import annotations

import json

import pytest

from focus_eval.cli import main
from helpers.browser_support import Visit

TASKS = "dr_synth_desktop"


def run(tmp, out, *options):
    assert main(["--model", "tiny-clip", "--methods", "zero_shot,linear_probe", "--tasks", TASKS, "--data-root",
                 str(tmp / "data"), "--output-path", str(out), "--cache-dir", str(tmp / "cache"), "--n-boot", "20",
                 "--no-progress", "--num-workers", "0", *options]) == 0


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    from focus_eval.leaderboard import build_site
    from focus_eval.synth.datasets import write_synthetic

    tmp = tmp_path_factory.mktemp("badges")
    write_synthetic(tmp / "data", n=60, seed=1)
    run(tmp, tmp / "default")
    run(tmp, tmp / "reference", "--zs-scale", "100")
    built = {}
    for name in ("default", "reference"):
        report = build_site([tmp / name], tmp / f"site-{name}")
        built[name] = (report.out_dir, report.pages)
    return tmp, built


def zero_shot_extra(out):
    rows = [json.loads(x) for x in (out / "tiny-clip" / "results.jsonl").read_text().splitlines()]
    return next(r["extra"] for r in rows if r.get("method") == "zero_shot")


def convention_badges(browser, site, pages) -> dict[str, list[str]]:
    visit = Visit(browser)
    found = {}
    for page in pages:
        opened = visit.open(site / page)
        found[page] = opened.locator(".badge-convention").all_inner_texts()
    visit.close()
    return found


def test_a_default_zero_shot_run_shows_no_option_badge_on_any_page(browser, sites):
    tmp, built = sites
    extra = zero_shot_extra(tmp / "default")
    assert extra["zs_convention"] == "model" and extra["zs_scale"] not in (None, 100.0)  # the model's own scale
    site, pages = built["default"]
    found = convention_badges(browser, site, pages)
    assert {"index.html", "fairness.html"} <= set(pages) and any(p.startswith("tasks/") for p in pages)
    assert {p: b for p, b in found.items() if b} == {}
    visit = Visit(browser)
    card = visit.open(site / "models" / "tiny-clip.html").locator("dl.card").inner_text()
    visit.close()
    assert "Zero-shot logit scale" in card and f"{extra['zs_scale']:g}" in card


def test_a_zs_scale_100_run_shows_its_badge(browser, sites):
    tmp, built = sites
    assert zero_shot_extra(tmp / "reference")["zs_convention"] == "compat"
    site, pages = built["reference"]
    found = convention_badges(browser, site, ["index.html", *(p for p in pages if p.startswith("tasks/"))])
    assert "zs-scale 100" in found["index.html"]
    assert all("zs-scale 100" in badges for page, badges in found.items() if page.startswith("tasks/"))

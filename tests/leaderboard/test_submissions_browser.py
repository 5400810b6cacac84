"""In headless Chromium: a site built from two groups' bundles, one of them tampered (its AUROCs raised after the
run), shows the tampered lines as not verified and ranks them nowhere: no row of the main table or the rank
intervals, no rank on their task pages, where they are listed with their badge and its reasons, and listed on the
submissions page with the reason; the honest group's lines are ranked and marked verified. The badges are not
hidden by the column picker's default at any width."""

from __future__ import annotations

import pytest

from focus_eval.leaderboard import build_site
from helpers.browser_support import Visit
from helpers.records import synthetic_root
from helpers.submissions import CLINIC_A, CLINIC_B, DATA, TASKS, group_submissions

pytestmark = pytest.mark.slow  # a real browser

EM_DASH = "\u2014"
DESKTOP, PHONE = (1440, 900), (390, 844)
MAIN_JS = """() => [...document.querySelectorAll('#main-table tbody tr')].filter(r => r.querySelector('td.submitter'))
  .map(r => ({submitter: r.querySelector('td.submitter').innerText.trim(),
              rank: r.querySelector('.rank').innerText.trim(), shown: r.getClientRects().length > 0}))"""
RANKING_JS = """() => [...document.querySelectorAll('table#ranking tbody tr')].filter(r => r.querySelector('td.submitter'))
  .map(r => ({submitter: r.querySelector('td.submitter').innerText.trim(), unverified: r.classList.contains('is-unverified'),
              rank: r.querySelector('.rank').innerText.trim(), rank_title: r.querySelector('.rank').title,
              badges: [...r.querySelectorAll('.flags .badge')].filter(b => b.getClientRects().length > 0)
                .map(b => ({text: b.innerText.trim(), title: b.title, kind: b.className}))}))"""
NOT_VERIFIED_JS = """() => [...document.querySelectorAll('#not-verified-table tbody tr')]
  .map(r => [...r.cells].map(c => c.innerText.trim()))"""


@pytest.fixture(scope="module")
def site(tmp_path_factory, index):
    root = tmp_path_factory.mktemp("submissions")
    data = synthetic_root(tmp_path_factory, "data", **DATA)
    sources = group_submissions(root / "in", data, index)
    report = build_site([sources.clinic_a, sources.clinic_b], root / "site", data_root=data)
    assert report.verdicts == {"verified": 6, "mismatch": 3, "unverifiable": 0}
    return report.out_dir


@pytest.mark.parametrize("size", [DESKTOP, PHONE])
def test_the_tampered_lines_are_unverified_and_unranked(browser, site, size):
    visit = Visit(browser, *size)
    main = visit.open(site / "index.html").evaluate(MAIN_JS)
    assert main and all(r["shown"] and r["rank"].isdigit() for r in main)
    assert {r["submitter"] for r in main} == {CLINIC_A}
    ranks = visit.open(site / "ranks.html").locator("#ranks-table").inner_text()
    assert f"from {CLINIC_A}" in ranks and CLINIC_B not in ranks
    for task in TASKS:
        lines = visit.open(site / "tasks" / f"{task}.html").evaluate(RANKING_JS)
        tampered = [r for r in lines if r["submitter"] == CLINIC_B]
        honest = [r for r in lines if r["submitter"] == CLINIC_A]
        assert len(tampered) == 1 and len(honest) == 2
        (line,) = tampered
        assert line["unverified"] and line["rank"] == EM_DASH and line["rank_title"].startswith("not ranked: unverified")
        (badge,) = [b for b in line["badges"] if "badge-unverified" in b["kind"]]
        assert badge["text"] == "mismatch" and "metrics.auroc: reported 1, recomputed 0." in badge["title"]
        assert all(r["rank"].isdigit() and not r["unverified"] for r in honest)
        assert all(any(b["text"] == "verified" for b in r["badges"]) for r in honest)
    listed = visit.open(site / "submissions.html").evaluate(NOT_VERIFIED_JS)
    assert sorted(r[0] for r in listed) == sorted([*TASKS, "group:synth_desktop"])
    assert all(r[1] == CLINIC_B and r[3] == "mismatch" for r in listed)
    assert all(r[4] for r in listed) and any(r[4].startswith("metrics.auroc: reported 1") for r in listed)
    visit.close()

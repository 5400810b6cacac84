"""In headless Chromium: the site's main table and its rank intervals page rank the same configurations, on a
results folder holding every kind of line (variants of tasks, another task version, a configuration without
answers, one below the coverage floor); and a task page shows what each score rests on (the coverage column and
its answer counts) at any width, never hidden by the column picker's default."""

from __future__ import annotations

import pytest

from focus_eval.leaderboard import build_site
from helpers.browser_support import Visit
from helpers.leaderboard_data import line, write_lines
from helpers.variant_lines import sample_rows, specs, write_variants

pytestmark = pytest.mark.slow  # a real browser

DESKTOP, PHONE = (1440, 900), (390, 844)
MAIN_ROWS_JS = """() => [...document.querySelectorAll('#main-table tbody tr')]
  .filter(r => r.querySelector('th[data-value]')).map(r => r.querySelector('th').dataset.value)"""
RANKED_JS = """() => [...document.querySelectorAll('#ranks-table tbody tr')]
  .filter(r => r.cells[0].textContent.trim() === 'overall').map(r => r.cells[1].textContent.trim())"""
COVERAGE_JS = """() => { const t = document.querySelector('table#ranking');
  const i = [...t.tHead.rows[0].cells].findIndex(c => c.textContent.trim() === 'coverage');
  const rows = [...t.tBodies[0].rows].filter(r => r.cells.length === t.tHead.rows[0].cells.length);
  return rows.map(r => ({shown: !r.cells[i].classList.contains('col-off') && r.cells[i].getClientRects().length > 0,
                         text: r.cells[i].textContent.trim(), model: r.cells[0].textContent.trim()})); }"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("ranked")
    results = write_variants(root / "results")
    low = [line(model="m7", family="mllm", method="prompt", task=t, dataset="a", target=t.split("_")[0],
                n_answered=20, n=40, n_valid=40, n_pos=20, coverage=0.5, metrics={"auroc": 0.99}) for t in ("dr_a", "glaucoma_a")]
    write_lines(results / "m7" / "results.jsonl", low)
    for t in ("dr_a", "glaucoma_a"):
        rows = [{**r, "score": 0.99 if r["label"] else 0.01} for r in sample_rows(specs()[0])]
        write_lines(results / "m7" / "samples" / f"{t}.prompt.jsonl", rows)
    build_site([results], root / "site")
    return root / "site"


def test_the_ranks_page_ranks_what_the_main_table_ranks(browser, site):
    visit = Visit(browser, *DESKTOP)
    main = visit.open(site / "index.html").evaluate(MAIN_ROWS_JS)
    ranked = visit.open(site / "ranks.html").evaluate(RANKED_JS)
    visit.close()
    assert sorted(main) == sorted(ranked) and len(main) == 6
    assert not any(m.startswith(("m5 ", "m6 ", "m7 ")) for m in main)  # no answers, old version, low coverage


@pytest.mark.parametrize("size", [DESKTOP, PHONE])
def test_a_task_page_shows_what_each_score_rests_on(browser, site, size):
    visit = Visit(browser, *size)
    cells = visit.open(site / "tasks" / "dr_a.html").evaluate(COVERAGE_JS)
    visit.close()
    assert cells and all(c["shown"] for c in cells)
    by_model = {c["model"].split()[-1]: c["text"] for c in cells}
    assert by_model["m7"].startswith("0.500") and by_model["m7"].endswith("20 of 40")
    assert by_model["m5"].endswith("0 of 40")

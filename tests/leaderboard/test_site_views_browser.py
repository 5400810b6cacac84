"""Views of the built leaderboard one can share and drill into, in headless Chromium: a table's sort, filters and
search come back from its address, a task page leads to the per-image page of each line with a sample file, the
main score of every table is in view on a phone, wide tables on a desktop get a column picker, and no text is
drawn under 11 px (chart text at the size the chart is drawn)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import leaderboard_data as data
from helpers.browser_support import Visit
from focus_eval.leaderboard import build_site
from focus_eval.leaderboard.draw.calibration import read_test_rows

pytestmark = pytest.mark.slow  # a real browser

DESKTOP, PHONE = (1440, 900), (390, 844)
MIN_PX = 10.95  # 11 px, less rounding in the SVG scale

# Rendered size of every element with text of its own: the computed size, times the drawing scale inside an SVG.
FONT_SIZES_JS = """() => [...document.querySelectorAll('body *')]
  .filter(el => el.getClientRects().length && [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
  .map(el => {
    let size = parseFloat(getComputedStyle(el).fontSize);
    const svg = el.closest('svg');
    if (svg && svg.viewBox.baseVal && svg.viewBox.baseVal.width) {
      size *= svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    }
    return {text: el.textContent.trim().slice(0, 30), tag: el.tagName, css: el.getAttribute('class'), size};
  })"""
# Tables wider than their box that have no column picker.
OVERFLOWING_JS = """() => [...document.querySelectorAll('.table-scroller')]
  .filter(s => s.getClientRects().length)
  .filter(s => { const w = s.querySelector('.table-wrap'); return w.scrollWidth > w.clientWidth + 1; })
  .filter(s => !s.querySelector('.column-picker')).map(s => s.querySelector('table').id)"""
# The edges of each visible table's main score cell (the header marked data-main, else the first numeric one).
SCORE_EDGES_JS = """() => [...document.querySelectorAll('.table-scroller table')].filter(t => t.getClientRects().length)
  .map(t => {
    const head = t.tHead.rows[0];
    const main = head.querySelector('th[data-main]') || head.querySelector('th[data-sort="num"]');
    const index = main ? main.cellIndex : 1;
    const rows = [...t.tBodies[0].rows].filter(r => !r.hidden && r.cells.length === head.cells.length);
    if (!rows.length || !rows[0].cells[index]) return null;
    const box = rows[0].cells[index].getBoundingClientRect();
    return {id: t.id, left: box.left, right: box.right};
  }).filter(x => x)"""


def funbench_line(model: str, method: str, seed: int) -> dict:
    """A multiple-choice (FunBench) results line on 40 images, right on about 60% of them."""
    from focus_eval.results.schema import UnitMeta
    from focus_eval.scoring import evaluate_samples

    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 5, 40)
    preds = np.where(rng.random(40) < 0.6, labels, (labels + 1) % 5)
    samples = [{"image_id": f"i{i}", "patient_id": f"p{i}", "split": "test", "label": int(y), "score": None,
                "pred": int(p), "age": None, "sex": None, "quality": None, "error": None,
                "output_type": "multiple_choice", "probs": None} for i, (y, p) in enumerate(zip(labels, preds))]
    meta = UnitMeta.from_dict({
        "model": model, "family": "mllm", "domain": "general", "untrained": False, "method": method,
        "task": "funbench_l4c_dr_grading_synth_desktop", "dataset": "synth_desktop", "target": "dr_grade",
        "proxy": False, "adapter": None, "task_version": 1, "task_hash": "h", "preset_hash": "p", "n_boot": 20,
        "seed": 0, "extra": {"output_type": "multiple_choice", "multilabel": False, "ordinal": True,
                             "classes": ["no_dr", "mild", "moderate", "severe", "proliferative"]}})
    return evaluate_samples(samples, meta).to_dict()


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    """The known results; the standard set with comparisons and two FunBench models (every page kind)."""
    root = tmp_path_factory.mktemp("views")
    known = data.write_known(root / "known")
    standard = data.write_results(root / "standard")
    data.write_compare(standard / "compare.jsonl")
    for seed, model in enumerate(("funbench-mllm-with-a-long-name", "funbench-other")):
        data.write_lines(standard / model / "results.jsonl", [funbench_line(model, "multiple_choice", seed)])
    return {"known": build_site([known], root / "known-site"),
            "standard": build_site([standard], root / "standard-site")}


def visible_rows(page, table="main-table") -> list[str]:
    return page.eval_on_selector_all(f"#{table} tbody tr:not(.group-head)", """rows => rows
        .filter(r => !r.hidden && r.getClientRects().length).map(r => r.cells[0].textContent.trim())""")


def test_a_sorted_and_filtered_table_comes_back_from_its_address(browser, sites):
    v = Visit(browser, *DESKTOP)
    page = v.open(sites["standard"].out_dir / "index.html")
    before = visible_rows(page)
    page.locator("#main-table thead th[data-sort]").nth(2).click()  # a score column, highest first
    page.select_option('.filters[data-for="main-table"] select[data-filter="method"]', "linear_probe")
    page.fill('.filters[data-for="main-table"] input[data-filter-text]', "e")
    shown = visible_rows(page)
    assert shown and shown != before and len(shown) < len(before)
    address = page.url
    assert "main-table.sort=" in address and "main-table.f.method=linear_probe" in address
    assert "main-table.q=e" in address
    again = Visit(browser, *DESKTOP).page
    again.goto(address)
    again.wait_for_load_state("load")
    assert visible_rows(again) == shown
    assert again.locator('.filters[data-for="main-table"] select[data-filter="method"]').input_value() == "linear_probe"
    again.close()
    v.close()


def test_every_heading_has_an_anchor_link_that_leads_back_to_it(browser, sites):
    v = Visit(browser, *DESKTOP)
    page = v.open(sites["standard"].out_dir / "index.html")
    headings = page.eval_on_selector_all("main h1, main h2, main h3", """hs => hs.map(h => ({id: h.id,
        href: h.querySelector('a.anchor') ? h.querySelector('a.anchor').getAttribute('href') : null}))""")
    assert headings and all(h["id"] and h["href"] == "#" + h["id"] for h in headings)
    assert len({h["id"] for h in headings}) == len(headings)
    v.close()


def test_a_task_page_leads_to_per_image_rows_equal_to_the_sample_file(browser, sites, tmp_path):
    report = sites["known"]
    v = Visit(browser, *DESKTOP)
    page = v.open(report.out_dir / "tasks" / "dr_alpha.html")
    page.locator("a.sample-link", has_text="gen-vit").click()
    page.wait_for_load_state("load")
    file_rows = read_test_rows(report.inputs.results_files[0].parent.parent / "gen-vit" / "samples"
                               / "dr_alpha.linear_probe.jsonl")
    cells = page.eval_on_selector_all("#samples tbody tr", """rows => rows.map(r => ({id: r.cells[0].textContent.trim(),
        score: r.cells[1].getAttribute('data-value'), label: r.cells[2].textContent.trim(),
        pred: r.cells[3].textContent.trim(), sex: r.cells[5].textContent.trim(), cell: r.dataset.cell}))""")
    assert [c["id"] for c in cells] == [r["image_id"] for r in file_rows]
    assert [float(c["score"]) for c in cells] == pytest.approx([r["score"] for r in file_rows])
    assert [(int(c["label"]), int(c["pred"]), c["sex"]) for c in cells] == [
        (r["label"], r["pred"], r["sex"]) for r in file_rows]
    # a confusion-matrix cell filters the rows to its images; the count it shows is theirs
    false_positives = [r["image_id"] for r in file_rows if r["pred"] == 1 and r["label"] == 0]
    button = page.locator('button.cell-filter[data-cell="fp"]')
    assert int(button.inner_text()) == len(false_positives) > 0
    button.click()
    assert visible_rows(page, "samples") == false_positives
    assert "samples.f.cell=fp" in page.url
    button.click()
    assert len(visible_rows(page, "samples")) == len(file_rows)
    v.close()


def test_on_a_phone_the_main_score_of_every_table_is_in_view(browser, sites):
    report = sites["standard"]
    assert {"index.html", "fairness.html", "funbench.html"} <= set(report.pages)
    v = Visit(browser, *PHONE)
    for name in [p for p in report.pages if "/" not in p]:
        page = v.open(report.out_dir / name)
        edges = page.evaluate(SCORE_EDGES_JS)
        assert all(0 <= e["left"] and e["right"] <= PHONE[0] for e in edges), (name, edges)
        if name == "index.html":
            assert {"main-table", "summary-table"} <= {e["id"] for e in edges}
        if name == "funbench.html":  # synthetic lines: the table of datasets other than FunBench's sources
            assert "funbench-other-table" in {e["id"] for e in edges}
    v.close()


def test_on_a_desktop_no_table_overflows_its_box_without_a_column_picker(browser, sites):
    report = sites["standard"]
    v = Visit(browser, *DESKTOP)
    for name in report.pages:
        page = v.open(report.out_dir / name)
        assert page.evaluate(OVERFLOWING_JS) == [], name
    v.close()


def test_the_column_picker_shows_hidden_columns_and_keeps_them_in_the_address(browser, sites):
    v = Visit(browser, 700, 900)
    page = v.open(sites["standard"].out_dir / "index.html")
    picker = page.locator(".table-scroller:has(#main-table) .column-picker")
    assert picker.count() == 1
    hidden = page.locator("#main-table thead th.col-off")
    n_hidden = hidden.count()
    assert n_hidden > 0
    picker.locator("summary").click()
    picker.locator("input:not(:checked)").first.check()
    assert hidden.count() == n_hidden - 1 and "main-table.cols=" in page.url
    again = Visit(browser, 700, 900).page
    again.goto(page.url)
    assert again.locator("#main-table thead th.col-off").count() == n_hidden - 1
    again.close()
    v.close()


@pytest.mark.parametrize("size", [DESKTOP, PHONE])
def test_no_text_is_drawn_under_11_px(browser, sites, size):
    for report in sites.values():
        v = Visit(browser, *size)
        for name in report.pages:
            page = v.open(report.out_dir / name)
            small = [e for e in page.evaluate(FONT_SIZES_JS) if e["size"] < MIN_PX]
            assert small == [], (name, small[:5])
        v.close()


@pytest.fixture(scope="module")
def thumbnail_site(tmp_path_factory):
    """A prompt line on real synthetic images, built with --thumbnails from their data root."""
    from focus_eval.data.registry import load_dataset
    from helpers.records import synthetic_root

    root = synthetic_root(tmp_path_factory, "views-data", n=48, seed=5)
    records = [r for r in load_dataset("synth_desktop", root).records if r.split == "test"][:16]
    rows = []
    for i, r in enumerate(records):
        score = round(0.15 + 0.7 * ((i * 7) % 16) / 15, 3)
        rows.append({"image_id": r.image_id, "patient_id": r.patient_id, "split": "test", "label": int(r.dr or 0),
                     "score": score, "pred": int(score >= 0.5), "age": r.age, "sex": r.sex, "quality": r.quality,
                     "error": None, "p_yes": score, "text": "yes" if score >= 0.5 else "no", "parsed": True})
    results = tmp_path_factory.mktemp("views-results")
    data.write_lines(results / "tiny-mllm" / "results.jsonl", [data.line(
        model="tiny-mllm", family="mllm", method="prompt", task="dr_synth_desktop", dataset="synth_desktop")])
    data.write_lines(results / "tiny-mllm" / "samples" / "dr_synth_desktop.prompt.jsonl", rows)
    return build_site([results], tmp_path_factory.mktemp("views") / "thumb-site", thumbnails=True, data_root=root)


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_per_image_page_with_thumbnails_and_its_screenshot(browser, thumbnail_site, size, tmp_path):
    """Thumbnails load from the site folder; FOCUS_SCREENSHOTS=DIR keeps the screenshots the README shows."""
    import os
    from pathlib import Path

    from PIL import Image

    v = Visit(browser, *size)
    page = v.open(thumbnail_site.out_dir / "tasks" / "dr_synth_desktop.html")
    page.locator("a.sample-link").first.click()
    page.wait_for_load_state("load")
    page.locator('button.cell-filter[data-cell="fp"]').click()
    sources = page.eval_on_selector_all("#samples img.thumb", "imgs => imgs.map(i => i.getAttribute('src'))")
    assert len(sources) == len(page.locator("#samples tbody tr").all()) > 0
    assert all((thumbnail_site.out_dir / "samples" / "x" / src).resolve().is_file() for src in sources)
    first = page.locator("#samples tbody tr:not([hidden]) img.thumb").first
    first.scroll_into_view_if_needed()
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=first.element_handle())
    assert 0 < first.evaluate("img => img.naturalWidth") <= 96
    assert "Answer" in page.locator("#samples thead").inner_text()
    out = Path(os.environ.get("FOCUS_SCREENSHOTS") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    shot = out / f"leaderboard-samples-{'desktop' if size == DESKTOP else 'phone'}.png"
    page.screenshot(path=str(shot))
    with Image.open(shot) as image:
        assert image.size == size
    v.close()

"""The built leaderboard in headless Chromium, on a desktop (1440 x 900) and a phone (390 x 844): sorting and
filters, untrained rows hidden, no sideways scrolling to read the main score, the sticky header, badge and text
contrast, keyboard access to the heatmap, honest significance, and the screenshots the README shows.

Set FOCUS_SCREENSHOTS=DIR to keep the screenshots (docs/img/ holds the committed ones)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import leaderboard_data as data
from helpers.browser_support import Visit
from focus_eval.leaderboard import build_site

pytestmark = pytest.mark.slow  # a real browser

DESKTOP, PHONE = (1440, 900), (390, 844)

# WCAG contrast of an element's text against the first opaque background behind it (its own or an ancestor's).
CONTRAST_JS = """
selector => {
  const rgba = c => { const v = c.match(/[\\d.]+/g).map(Number); return v.length === 4 ? v : [...v, 1]; };
  const lum = c => c.slice(0, 3).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
    .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  const background = el => {
    for (; el; el = el.parentElement) { const c = rgba(getComputedStyle(el).backgroundColor); if (c[3] > 0) return c; }
    return [255, 255, 255, 1];
  };
  return [...document.querySelectorAll(selector)].filter(el => el.getClientRects().length).map(el => {
    const style = getComputedStyle(el), fg = rgba(style.color), bg = background(el);
    const mixed = fg.slice(0, 3).map((v, i) => v * fg[3] + bg[i] * (1 - fg[3]));
    const [hi, lo] = [lum(mixed), lum(bg)].sort((a, b) => b - a);
    const size = parseFloat(style.fontSize), bold = parseInt(style.fontWeight) >= 700;
    return {text: el.textContent.trim().slice(0, 40), css: el.className, ratio: (hi + 0.05) / (lo + 0.05),
            large: size >= 24 || (bold && size >= 18.66)};
  });
}
"""
# Elements that hold text of their own, outside the charts (whose text sits on cell fills checked in Python).
TEXT = ("main p, main li, main dt, main dd, main th, main td, main span, main a, main label, main h1, main h2, "
        "main h3, main code, main figcaption, .site-header a, .banner, .site-footer p")


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    """The known results set, the standard synthetic one (with comparisons and a hostile model name), and a
    showcase of made-up results on the synthetic datasets for the screenshots."""
    root = tmp_path_factory.mktemp("browser")
    known = data.write_known(root / "known")
    built = {"known": build_site([known, known / "seed-1", known / "eye-vit"], root / "known-site")}
    synthetic = [t for t in data.TASKS if t.dataset.startswith("synth_")]
    for name, models, tasks in (("standard", data.MODELS, data.TASKS), ("showcase", data.SHOWCASE, synthetic)):
        results = data.write_results(root / name, models=models, tasks=tasks)
        data.write_compare(results / "compare.jsonl")
        built[name] = build_site([results], root / f"{name}-site")
    return built


def visit(browser, size):
    return Visit(browser, width=size[0], height=size[1])


def main_rows(page) -> list[dict]:
    return page.eval_on_selector_all("#main-table tbody tr:not(.group-head)", """rows => rows.map(r => ({
        model: r.cells[0].querySelector('a').textContent, overall: r.cells[1].getAttribute('data-value'),
        rank: r.querySelector('.rank').textContent.trim(), visible: !r.hidden && r.getClientRects().length > 0,
        baseline: r.parentElement.classList.contains('baselines')}))""")


def test_every_page_loads_offline_without_errors_or_dialogs(browser, sites):
    for report in sites.values():
        v = visit(browser, DESKTOP)
        for page in report.pages:
            v.open(report.out_dir / page)
        v.close()


def test_charts_are_drawn_and_a_hostile_model_name_stays_text(browser, sites):
    report = sites["standard"]
    n_configs = sum(len(m.methods) for m in data.MODELS)
    v = visit(browser, DESKTOP)
    page = v.open(report.out_dir / "index.html")
    assert page.locator("#heatmap .cells rect").count() == n_configs * len(data.TASKS)
    assert page.locator("#radar .series polygon").count() == 3  # the trained configurations only
    page.get_by_role("link", name=data.HOSTILE, exact=True).first.click()
    page.wait_for_load_state("load")
    assert page.locator("h1").inner_text().startswith(data.HOSTILE)
    scripts = page.evaluate("[...document.querySelectorAll('script')].map(s => s.getAttribute('src'))")
    assert scripts == ["../static/leaderboard.js", "../static/views.js"] and v.dialogs == []  # the site's own only
    page = v.open(report.out_dir / "tasks" / "dr_synth_desktop.html")
    assert page.locator("svg.reliability").count() == n_configs
    assert page.locator("svg.reliability .axis-title").count() == 2 * n_configs
    page = v.open(report.out_dir / "fairness.html")
    assert page.locator("#fairness-figure circle.dot").count() > 20
    v.close()


def test_no_page_is_wider_than_a_phone(browser, sites):
    """Wide tables and charts scroll inside their own boxes; the page itself never scrolls sideways."""
    v = visit(browser, PHONE)
    report = sites["standard"]
    for name in report.pages:
        page = v.open(report.out_dir / name)
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE[0], name
    v.close()


def test_main_table_sorts_and_hides_untrained_rows(browser, sites):
    v = visit(browser, DESKTOP)
    page = v.open(sites["known"].out_dir / "index.html")
    rows = main_rows(page)
    assert [r["visible"] for r in rows if r["baseline"]] == [False]  # rand-vit: hidden while trained models exist
    assert all(r["visible"] for r in rows if not r["baseline"])
    assert [(r["model"], r["rank"]) for r in rows if not r["baseline"]] == [
        ("eye-vit", "1"), ("gen-vit", "2"), ("eye-clip", "3"), ("gen-vit", "3"), ("med-clip", "5")]
    header = page.locator("#main-table thead th", has_text="Overall AUROC")
    header.click()  # descending first: the order already shown
    assert header.get_attribute("aria-sort") == "descending"
    header.click()
    overall = [float(r["overall"]) for r in main_rows(page) if not r["baseline"]]
    assert overall == sorted(overall)
    page.check("input[data-show-baselines]")
    rows = main_rows(page)
    assert all(r["visible"] for r in rows) and rows[-1]["model"] == "rand-vit" and rows[-1]["baseline"]
    assert page.locator('.filters[data-for="main-table"] .filter-count').inner_text() == "6 of 6 rows"
    page.select_option('.filters[data-for="main-table"] select[data-filter="domain"]', "ophthalmic")
    assert sorted(r["model"] for r in main_rows(page) if r["visible"]) == ["eye-clip", "eye-vit"]
    v.close()


def test_task_ranking_sorts_numbers_with_missing_values_last_and_filters(browser, sites):
    v = visit(browser, DESKTOP)
    page = v.open(sites["standard"].out_dir / "tasks" / "dr_idrid.html")
    auroc = page.locator("#ranking thead th", has_text="AUROC").first
    auroc.click()
    values = page.eval_on_selector_all("#ranking tbody tr", "rows => rows.map(r => r.cells[1].getAttribute('data-value'))")
    numbers = [float(x) for x in values if x]
    assert numbers == sorted(numbers, reverse=True) and values[-1] == ""
    page.select_option('.filters[data-for="ranking"] select[data-filter="method"]', "linear_probe")
    visible = page.locator("#ranking tbody tr:not([hidden])")
    assert set(visible.evaluate_all("rows => rows.map(r => r.dataset.method)")) == {"linear_probe"}
    v.close()


def test_a_phone_shows_the_model_and_its_main_score_without_sideways_scrolling(browser, sites):
    v = visit(browser, PHONE)
    page = v.open(sites["known"].out_dir / "index.html")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE[0]
    first = page.locator("#main-table tbody tr").first
    first.scroll_into_view_if_needed()
    for cell in (first.locator("th"), first.locator("td.main-score")):
        box = cell.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE[0], box
    assert first.locator("td.main-score").inner_text().startswith("0.850")
    v.close()


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_page_header_and_the_table_header_stay_in_view_when_scrolling(browser, sites, size):
    v = visit(browser, size)
    page = v.open(sites["standard"].out_dir / "fairness.html")
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    header = page.locator(".site-header").bounding_box()
    assert header["y"] == 0 and header["height"] > 20
    assert page.evaluate("document.elementFromPoint(8, 8).closest('.site-header') !== null")
    wrap = page.locator("#fairness-table").locator("xpath=..")
    wrap.scroll_into_view_if_needed()
    wrap.evaluate("w => w.scrollTop = 400")
    head, box = page.locator("#fairness-table thead th").first.bounding_box(), wrap.bounding_box()
    assert abs(head["y"] - box["y"]) < 2  # the header row sits at the top of the scrolled table
    v.close()


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_every_badge_and_text_passes_wcag_aa_contrast(browser, sites, size):
    v = visit(browser, size)
    for report, pages in ((sites["known"], ("index.html", "finetune.html", "models/gen-vit.html")),
                          (sites["standard"], ("index.html", "fairness.html", "tasks/referable_dr_rfmid.html"))):
        for name in pages:
            page = v.open(report.out_dir / name)
            if page.locator("input[data-show-baselines]").count():
                page.check("input[data-show-baselines]")  # untrained rows have colours of their own
            badges = page.evaluate(CONTRAST_JS, ".badge")
            assert badges and all(b["ratio"] >= 4.5 for b in badges), [b for b in badges if b["ratio"] < 4.5]
            texts = page.evaluate(CONTRAST_JS, TEXT)
            low = [t for t in texts if t["text"] and t["ratio"] < (3.0 if t["large"] else 4.5)]
            assert not low, (name, low[:5])
    v.close()


def test_heatmap_cells_tell_their_interval_on_keyboard_focus_and_tap(browser, sites):
    v = visit(browser, DESKTOP)
    page = v.open(sites["known"].out_dir / "index.html")
    cells = page.locator("#heatmap .cells [data-tip]")
    assert cells.first.get_attribute("tabindex") == "0" and cells.nth(1).get_attribute("tabindex") == "-1"
    cells.first.focus()
    tip = page.locator(".tip")
    assert tip.is_visible() and "95% interval [" in tip.inner_text()
    page.keyboard.press("ArrowRight")
    focused = page.evaluate("document.activeElement.getAttribute('data-tip')")
    assert focused == cells.nth(1).get_attribute("data-tip") and tip.inner_text() == focused
    page.keyboard.press("Tab")
    assert not tip.is_visible()
    cells.nth(2).dispatch_event("click")  # what a tap on a touch screen sends
    assert tip.is_visible() and tip.inner_text() == cells.nth(2).get_attribute("data-tip")
    v.close()


def test_the_comparison_page_says_not_significant_for_a_zero_delta(browser, sites):
    v = visit(browser, DESKTOP)
    page = v.open(sites["known"].out_dir / "finetune.html")
    rows = page.eval_on_selector_all("#finetune-table tbody tr", """rows => rows.map(r => [
        r.cells[0].textContent.trim(), r.cells[3].textContent.trim(), r.cells[1].firstChild.textContent.trim(),
        r.cells[2].textContent.trim()])""")
    expected = {(adapter, "AUROC" if metric == "auroc" else "ECE"): words
                for adapter, metric, _, _, _, _, _, words in data.KNOWN_DELTAS}
    shown = {(adapter, metric.split()[0]): words for adapter, metric, _, words in rows}
    assert shown == expected
    zero = [r for r in rows if r[2] == "0"]
    assert {r[0] for r in zero} == {"a-zero", "a-flat"} and all(r[3].startswith("not significant") for r in zero)
    assert page.locator(".badge-better").first.evaluate("b => getComputedStyle(b).color") != \
        page.locator(".badge-not-significant").first.evaluate("b => getComputedStyle(b).color")
    v.close()


SHOTS = (("overview", "index.html"), ("task", "tasks/dr_synth_desktop.html"), ("model-card", "models/flair.html"),
         ("finetune", "finetune.html"))


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_screenshots_of_the_overview_a_task_a_model_card_and_fine_tuning(browser, sites, size, tmp_path):
    from PIL import Image

    out = Path(os.environ.get("FOCUS_SCREENSHOTS") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    v = visit(browser, size)
    for name, page_path in SHOTS:
        page = v.open(sites["showcase"].out_dir / page_path)
        shot = out / f"leaderboard-{name}-{'desktop' if size == DESKTOP else 'phone'}.png"
        page.screenshot(path=str(shot))
        with Image.open(shot) as image:
            assert image.size == size
            assert len(image.convert("RGB").getcolors(maxcolors=1 << 20)) > 100  # more than a blank page
    v.close()

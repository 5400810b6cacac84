"""The site on a phone (390 x 844) and its links, in headless Chromium: ticking "Show untrained baselines" keeps the
main scores on screen, the Fragility page fits the screen with every chart label in view, a link to a heading lands
below the sticky header (a phone's and a desktop's, whose header wraps to more lines), every id of the overview is
its own (the main table's heading is #main, not #main-table-2), and the drill-down goes all the way: a score cell
opens its per-image page, which shows the prompt each answer replies to and offers its rows, as the overview offers
its main table, as CSV."""

from __future__ import annotations

import csv
import io
import json

import pytest

from helpers import leaderboard_data as data
from helpers.browser_support import Visit
from focus_eval.leaderboard import build_site
from focus_eval.results.schema import dumps

pytestmark = pytest.mark.slow  # a real browser

DESKTOP, NARROW, PHONE = (1440, 900), (900, 800), (390, 844)
# fragility runs of three models with the long names real presets and user models have
LONG = ("retfound-dinov2-shanghai-finetuned", "clinic-foundation-model-v2-large", "medgemma-27b-with-an-adapter")
PROMPT_TASK = "dr_synth_desktop"


def fragility_lines(root):
    for k, model in enumerate(LONG):
        rows = []
        for task, base in (("dr_synth_desktop", 0.9), ("glaucoma_synth_desktop", 0.8)):
            for j, variant in enumerate(("default", "plain", "short", "signs")):
                extra = {} if variant == "default" else {"prompt_variant": variant, "base_task": task}
                rows.append({"model": model, "method": "prompt", "task": task if variant == "default"
                             else f"{task}@{variant}", "dataset": "synth_desktop", "target": task.split("_")[0],
                             "metrics": {"auroc": base - 0.1 * k - 0.01 * j}, "extra": extra})
            for j, corruption in enumerate(("blur:3", "jpeg:3", "rotation:2")):
                rows.append({"model": model, "method": "prompt", "task": f"{task}@{corruption.replace(':', '')}",
                             "dataset": "synth_desktop", "target": task.split("_")[0],
                             "metrics": {"auroc": base - 0.1 * k - 0.05 * (j + 1)},
                             "extra": {"corruption": corruption, "base_task": task}})
        (root / model).mkdir(parents=True)
        (root / model / "results.jsonl").write_text("".join(dumps(r) + "\n" for r in rows))
    return root


def with_current_task_hash(results, model: str, task: str) -> str:
    """The results line of ``model`` on ``task`` made to carry the hash of the shipped task file (as a run of it
    writes), the others keep theirs; returns the hash."""
    from focus_eval.task import TaskIndex

    digest = TaskIndex([]).get(task).hash
    path = results / model / "results.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        if line["task"] == task:
            line["task_hash"] = digest
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return digest


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    root = tmp_path_factory.mktemp("phone")
    standard = data.write_results(root / "standard")
    with_current_task_hash(standard, "tiny-medgemma", PROMPT_TASK)
    return {"standard": build_site([standard], root / "standard-site"),
            "fragility": build_site([fragility_lines(root / "fragility")], root / "fragility-site")}


def score_edges(page) -> list[dict]:
    """Left and right edges of the main score (header and every shown row) of the main table."""
    return page.eval_on_selector_all("#main-table tr", """rows => rows.filter(r => !r.hidden && r.cells.length > 2)
        .map(r => { const b = r.cells[1].getBoundingClientRect();
                    return {text: r.cells[0].textContent.trim().slice(0, 30), left: b.left, right: b.right}; })""")


def test_showing_the_untrained_baselines_on_a_phone_keeps_every_score_on_screen(browser, sites):
    v = Visit(browser, *PHONE)
    page = v.open(sites["standard"].out_dir / "index.html")
    before = score_edges(page)
    page.check("input[data-show-baselines]")
    after = score_edges(page)
    assert len(after) > len(before)  # the baselines are shown
    width = page.evaluate("document.documentElement.clientWidth")
    off = [e for e in after if e["left"] < 0 or e["right"] > width]
    assert not off, off
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    v.close()


def test_the_fragility_page_fits_a_phone_and_shows_every_chart_label(browser, sites):
    for size in (PHONE, DESKTOP):
        v = Visit(browser, *size)
        page = v.open(sites["fragility"].out_dir / "fragility.html")
        width = page.evaluate("document.documentElement.clientWidth")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        labels = page.eval_on_selector_all("svg.forest .forest-row text", """ts => ts.map(t => {
            const box = t.getBoundingClientRect(), wrap = t.closest('.chart-wrap').getBoundingClientRect();
            return {text: t.textContent, x: t.getBBox().x, left: box.left, right: box.right,
                    wrapLeft: wrap.left}; })""")
        assert len(labels) >= 2 * 3 * 4  # two sections, three models, their variants and corruptions
        assert all(label["x"] >= 0 and label["left"] >= label["wrapLeft"] - 0.5 for label in labels), labels[:3]
        # whole on the screen before the chart is scrolled: the plot beside them scrolls in its box
        assert all(label["right"] <= width for label in labels), [lb for lb in labels if lb["right"] > width][:3]
        assert any(LONG[1] in label["text"] for label in labels)
        ids = page.eval_on_selector_all("[id]", "els => els.map(e => e.id)")
        assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
        sentences = page.locator("ul.stability li").all_inner_texts()
        assert any("the ranking of 3 models is" in s for s in sentences), sentences
        v.close()


def heading_below_header(page, target: str) -> dict:
    return page.evaluate("""id => {
        const el = document.getElementById(id), header = document.querySelector('.site-header');
        return {top: el.getBoundingClientRect().top, header: header.getBoundingClientRect().bottom,
                scrolled: window.scrollY}; }""", target)


@pytest.mark.parametrize("size", [PHONE, NARROW, DESKTOP], ids=["phone", "narrow", "desktop"])
def test_a_link_to_a_heading_lands_below_the_sticky_header(browser, sites, size):
    site = sites["standard"].out_dir
    targets = (("index.html", "main"), ("index.html", "summary"), (f"tasks/{PROMPT_TASK}.html", "per-image"))
    for path, target in targets:
        v = Visit(browser, *size)
        page = v.page
        page.goto((site / path).resolve().as_uri() + "#" + target)
        page.wait_for_load_state("load")
        found = heading_below_header(page, target)
        assert found["scrolled"] > 0 and found["top"] >= found["header"], (path, target, found)
        v.close()
    # following a heading's own anchor link does the same
    v = Visit(browser, *size)
    page = v.open(site / "index.html")
    page.locator("#summary a.anchor").click()
    found = heading_below_header(page, "summary")
    assert found["scrolled"] > 0 and found["top"] >= found["header"], found
    v.close()


def test_every_id_of_the_overview_is_its_own_and_the_main_table_heading_is_main(browser, sites):
    v = Visit(browser, *PHONE)
    page = v.open(sites["standard"].out_dir / "index.html")
    ids = page.eval_on_selector_all("[id]", "els => els.map(e => e.id)")
    assert len(ids) == len(set(ids))
    heading = page.locator("h2", has_text="Main table")
    assert heading.get_attribute("id") == "main"
    assert heading.locator("a.anchor").get_attribute("href") == "#main"
    assert not [i for i in ids if i.endswith("-2")]
    # the navigation's section links land on their headings
    assert page.locator("h2#tasks").count() == 1 and page.locator("h2#models").count() == 1
    v.close()


def test_a_score_cell_opens_its_per_image_page_with_the_prompt_and_the_rows_as_csv(browser, sites):
    report = sites["standard"]
    v = Visit(browser, *PHONE)
    page = v.open(report.out_dir / "tasks" / f"{PROMPT_TASK}.html")
    links = page.eval_on_selector_all("#ranking tbody tr", """rows => rows.map(r => ({model: r.cells[0].textContent
        .trim(), links: [...r.querySelectorAll('td.num a.score-link')].map(a => a.href)}))""")
    with_samples = [r for r in links if r["links"]]
    assert len(with_samples) == len(links)  # every line of this task has its sample file
    assert all(len(set(r["links"])) == 1 and len(r["links"]) >= 3 for r in with_samples)  # each score cell
    row = page.locator("#ranking tbody tr", has_text="tiny-medgemma")
    row.locator("td.num a.score-link").first.click()
    page.wait_for_load_state("load")
    assert "/samples/" in page.url and page.locator("h1").inner_text().startswith("tiny-medgemma")
    from focus_eval.task import TaskIndex

    asked = TaskIndex([]).get(PROMPT_TASK).render_prompt(None)
    assert page.locator("pre.prompt").inner_text().strip() == asked.strip()
    assert page.locator(".warning", has_text="task file has changed").count() == 0
    answers = page.eval_on_selector_all("#samples tbody tr", "rows => rows.map(r => r.cells[2].textContent.trim())")
    assert set(answers) <= {"yes", "no", "\u2014"} and "yes" in answers
    # the rows as CSV, beside the page, equal to the table
    href = page.locator("p.downloads a[download]").get_attribute("href")
    written = list(csv.DictReader(io.StringIO((report.out_dir / "samples" / PROMPT_TASK / href).read_text())))
    shown = page.eval_on_selector_all("#samples tbody tr", "rows => rows.map(r => r.cells[0].textContent.trim())")
    assert [r["image_id"] for r in written] == shown
    assert {r["prompt"] for r in written} == {" ".join(asked.split("\n"))}
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE[0]
    v.close()
    # a line computed from another version of the task file says the prompt is the file's current one
    v = Visit(browser, *PHONE)
    page = v.open(report.out_dir / "tasks" / "glaucoma_synth_desktop.html")
    page.locator("#ranking tbody tr", has_text="tiny-medgemma").locator("a.score-link").first.click()
    page.wait_for_load_state("load")
    assert page.locator("pre.prompt").count() == 1
    assert page.locator(".warning", has_text="task file has changed since this run").count() == 1
    v.close()


def test_the_main_table_downloads_as_csv_with_every_row(browser, sites):
    report = sites["standard"]
    v = Visit(browser, *PHONE)
    page = v.open(report.out_dir / "index.html")
    page.check("input[data-show-baselines]")
    link = page.locator("#main ~ p.downloads a[download], section p.downloads a[download]").first
    assert link.get_attribute("href") == "data/main-table.csv"
    rows = list(csv.DictReader(io.StringIO((report.out_dir / "data" / "main-table.csv").read_text())))
    shown = page.eval_on_selector_all("#main-table tbody tr:not(.group-head)", """rows => rows.map(r => ({
        model: r.cells[0].querySelector('a').textContent.trim(), overall: r.cells[1].getAttribute('data-value')}))""")
    assert [r["model"] for r in rows] == [s["model"] for s in shown]
    assert [round(float(r["overall_auroc"]), 6) for r in rows] == [round(float(s["overall"]), 6) for s in shown]
    assert any(r["untrained"] == "true" for r in rows) and any(r["untrained"] == "false" for r in rows)
    v.close()

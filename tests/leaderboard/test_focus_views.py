"""The FOCUS Table 4 and Figs. 3, 5, 24, 28 and 29 pages: each page exists with its figure, its CSV equals what
``focus-eval report NAME --csv`` writes, and its numbers equal those worked out here from the raw results lines
(a difference of means over the vision encoders and over every family, a Pearson r, a paired mean, the interface
summary's and the reliability matrix's means)."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from statistics import fmean

import numpy as np
import pytest

from focus_eval.cli import main
from focus_eval.leaderboard import build_site
from helpers import leaderboard_data as data

VIEWS = ("domain-gap", "fairness-calibration", "specialisation", "zero-shot-probe", "interfaces", "reliability")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = data.write_results(tmp_path_factory.mktemp("focus") / "results", models=data.MODELS + data.FOCUS_MODELS)
    return root, build_site([root], root.parent / "site")


def raw_lines(root) -> list[dict]:
    """The lines that enter the views, read straight from the files: trained, no proxy or underpowered task."""
    rows = [json.loads(t) for p in sorted(root.glob("*/results.jsonl")) for t in p.read_text().splitlines()]
    return [r for r in rows if not r["untrained"] and not r["proxy"] and not r["underpowered"]
            and r["metrics"]["auroc"] is not None]


def site_rows(report, name: str) -> list[dict]:
    with open(report.out_dir / "data" / f"{name}.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("name", VIEWS)
def test_page_has_figure_and_csv_equal_to_report(built, name, tmp_path, capsys):
    root, report = built
    html = (report.out_dir / f"{name}.html").read_text(encoding="utf-8")
    assert "<svg" in html and f'href="data/{name}.csv"' in html
    assert data.HOSTILE not in html  # model names from files are escaped
    assert f'href="{name}.html"' in (report.out_dir / "index.html").read_text(encoding="utf-8")
    out = tmp_path / "report.csv"
    assert main(["report", name, str(root), "--csv", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == (report.out_dir / "data" / f"{name}.csv").read_text(encoding="utf-8")
    printed = capsys.readouterr().out
    assert printed.strip()  # the table is printed too


def gaps(lines) -> dict:
    by = defaultdict(lambda: defaultdict(list))
    for r in lines:
        by[r["dataset"]][r["domain"]].append(r["metrics"]["auroc"])
    return {d: fmean(v["general"]) - fmean(v["ophthalmic"]) for d, v in by.items() if v["general"] and v["ophthalmic"]}


def test_domain_gap_is_over_vision_encoders_with_the_pooled_table_beside(built, tmp_path):
    root, report = built
    encoders = gaps(r for r in raw_lines(root) if r["family"] == "vm")
    pooled = gaps(raw_lines(root))
    rows = {r["dataset"]: r for r in site_rows(report, "domain-gap")}
    assert {d for d, r in rows.items() if r["difference"]} == set(encoders)
    assert float(rows["idrid"]["difference"]) == pytest.approx(encoders["idrid"])
    assert (rows["idrid"]["country"], rows["idrid"]["device"]) == ("India", "Kowa VX-10\u03b1")
    assert rows["synth_desktop"]["country"] == ""  # a dataset without a documented origin: no guess
    pooled_rows = {r["dataset"]: r for r in site_rows(report, "domain-gap-pooled")}
    assert float(pooled_rows["idrid"]["difference"]) == pytest.approx(pooled["idrid"])
    assert pooled["idrid"] != pytest.approx(encoders["idrid"])  # pooling the families moves the difference
    html = (report.out_dir / "domain-gap.html").read_text(encoding="utf-8")
    assert 'id="domain-gap-table"' in html and 'id="domain-gap-pooled-table"' in html
    out = tmp_path / "pooled.csv"
    assert main(["report", "domain-gap-pooled", str(root), "--csv", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == (report.out_dir / "data" / "domain-gap-pooled.csv").read_text(
        encoding="utf-8")


def test_messidor2_has_its_country():
    from focus_eval.analysis.origins import origin

    assert origin("messidor2").country == "France"


def test_interfaces_summarise_each_way_of_asking(built):
    root, report = built
    by = defaultdict(list)
    for r in raw_lines(root):
        by[(r["family"], r["method"])].append(r)
    rows = {(r["family"], r["method"]): r for r in site_rows(report, "interfaces")}
    assert set(rows) == set(by)
    assert [r["interface"] for r in site_rows(report, "interfaces")][:2] == ["vision encoder, linear probe",
                                                                            "dual encoder, zero-shot"]
    for key, lines in by.items():
        assert int(rows[key]["n_lines"]) == len(lines)
        assert float(rows[key]["auroc"]) == pytest.approx(fmean(r["metrics"]["auroc"] for r in lines))


def test_reliability_matrix_per_configuration(built):
    root, report = built
    by = defaultdict(list)
    for r in raw_lines(root):
        by[(r["model"], r["method"])].append(r)
    rows = {(r["model"], r["method"]): r for r in site_rows(report, "reliability")}
    assert set(rows) == set(by)
    for key, lines in by.items():
        assert float(rows[key]["auroc"]) == pytest.approx(fmean(r["metrics"]["auroc"] for r in lines))
        assert float(rows[key]["calibration"]) == pytest.approx(1 - fmean(r["metrics"]["ece"] for r in lines))
        datasets = defaultdict(list)
        for r in lines:
            datasets[r["dataset"]].append(r["metrics"]["auroc"])
        if len(datasets) > 1:
            means = [fmean(v) for v in datasets.values()]
            assert float(rows[key]["shift"]) == pytest.approx(1 - (max(means) - min(means)))


def test_fairness_calibration_pearson_r_per_family(built):
    root, report = built
    vlm = [r for r in raw_lines(root) if r["family"] == "vlm"]
    pairs = [(r["metrics"]["ece"], r["metrics"]["auroc"]) for r in vlm]
    expected = float(np.corrcoef(*zip(*pairs))[0, 1])
    row = next(r for r in site_rows(report, "fairness-calibration") if r["family"] == "vlm" and r["x"] == "ece")
    assert int(row["n_lines"]) == len(pairs) and float(row["pearson_r"]) == pytest.approx(expected)
    sex = [(r["fairness"]["sex"]["eo_gap"], r["metrics"]["auroc"]) for r in raw_lines(root)
           if r["family"] == "vm" and r["fairness"]["sex"]["eo_gap"] is not None]
    row = next(r for r in site_rows(report, "fairness-calibration") if r["family"] == "vm" and r["x"] == "eo_gap_sex")
    assert float(row["pearson_r"]) == pytest.approx(float(np.corrcoef(*zip(*sex))[0, 1]))


def test_specialisation_pairs_only_where_both_members_have_results(built):
    root, report = built
    rows = site_rows(report, "specialisation")
    assert [(r["scale"], r["general_model"], r["specialised_model"]) for r in rows] == [
        ("27B", "gemma3-27b", "medgemma-27b")]  # no gemma3-4b results: no 4B row
    lines = raw_lines(root)
    general = {r["task"]: r["metrics"]["auroc"] for r in lines if r["model"] == "gemma3-27b"}
    special = {r["task"]: r["metrics"]["auroc"] for r in lines if r["model"] == "medgemma-27b"}
    common = sorted(set(general) & set(special))
    assert int(rows[0]["n_tasks"]) == len(common)
    assert float(rows[0]["difference"]) == pytest.approx(fmean(special[t] - general[t] for t in common))


def test_zero_shot_probe_rows_per_dual_encoder_and_task(built):
    root, report = built
    by = defaultdict(dict)
    for r in raw_lines(root):
        if r["family"] == "vlm":
            by[(r["model"], r["task"])][r["method"]] = r["metrics"]["auroc"]
    expected = {k: v for k, v in by.items() if len(v) == 2}
    rows = site_rows(report, "zero-shot-probe")
    assert {(r["model"], r["task"]) for r in rows} == set(expected)
    for r in rows:
        both = expected[(r["model"], r["task"])]
        assert float(r["zero_shot_auroc"]) == pytest.approx(both["zero_shot"])
        assert float(r["difference"]) == pytest.approx(both["linear_probe"] - both["zero_shot"])
    html = (report.out_dir / "zero-shot-probe.html").read_text(encoding="utf-8")
    assert 'class="diagonal"' in html


@pytest.mark.slow
def test_the_demo_site_shows_table_4_over_vision_encoders_and_figs_28_and_29(tmp_path, browser):
    """The demo, then its site in Chromium: Table 4 over the vision encoders with the pooled table below it, the
    interface summary (Fig. 28) and the reliability matrix (Fig. 29), each linked from the overview, drawn and
    holding the demo's trained vision encoder (at the demo's own size: smaller test sets are underpowered and enter
    no view)."""
    from helpers.browser_support import Visit

    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--n-boot", "20", "--models", "efficientnet-lite0,tiny-clip",
                 "--no-progress"]) == 0
    site = out / "site"
    v = Visit(browser)
    index = v.open(site / "index.html")
    for name in ("domain-gap", "interfaces", "reliability"):
        assert index.locator(f'a[href="{name}.html"]').count() >= 1, name
    page = v.open(site / "domain-gap.html")
    table = page.locator("#domain-gap-table")
    assert table.is_visible() and "synth_desktop" in table.inner_text()
    assert "vision encoders only" in page.inner_text("main") and page.locator("#domain-gap-pooled-table").is_visible()
    # tiny-clip is untrained, so neither table holds a line of it; the vision encoders' general lines are counted
    rows = page.eval_on_selector_all("#domain-gap-table tbody tr", "rows => rows.map(r => r.cells[3].textContent)")
    assert rows and all(int(n) >= 1 for n in rows)
    page = v.open(site / "interfaces.html")
    assert page.locator("main svg").first.is_visible()
    assert "vision encoder, linear probe" in page.locator("#interfaces-table").inner_text()
    assert "FOCUS Fig. 28" in page.inner_text("main")
    page = v.open(site / "reliability.html")
    assert page.locator("main svg").first.is_visible() and "FOCUS Fig. 29" in page.inner_text("main")
    matrix = page.locator("#reliability-table")
    assert "efficientnet-lite0" in matrix.inner_text() and "tiny-clip" not in matrix.inner_text()
    heads = page.eval_on_selector_all("#reliability-table thead th", "cells => cells.map(c => c.textContent)")
    assert heads[-5:] == ["auroc", "calibration", "fairness", "quality", "shift"]
    v.close()


def test_report_help_lists_the_views(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["report", "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    for name, words in (("interfaces", "Fig. 28"), ("reliability", "Fig. 29"), ("domain-gap", "vision encoders"),
                        ("domain-gap-pooled", "pooled")):
        line = next(t for t in text.splitlines() if t.strip().startswith(name + " "))
        assert words in line, line
    assert "--random-guess documented" in text

"""The site shows the paired statistics: its rank, pairwise, operating-point and recalibration pages exist with
their figures, their CSV files are what ``focus-eval report NAME --csv`` writes for the same results, the main
table carries rank intervals and the tied mark, and task pages carry the pairwise matrix and operating points."""

from __future__ import annotations

import csv

from focus_eval.cli import main
from focus_eval.leaderboard import build_site
from helpers.paired_data import MODELS, write_paired

PAGES = {"ranks": "ranks", "pairwise": "pairwise", "operating-points": "operating_points",
         "recalibration": "recalibration"}


def test_statistics_pages_and_csv_files_match_the_reports(tmp_path):
    # "twin" scores exactly as "middle" does: the two must tie
    results = write_paired(tmp_path / "out", models=MODELS + (("twin", 1.0, "linear_probe"),))
    middle = (results / "middle" / "samples").iterdir()
    for path in middle:
        target = results / "twin" / "samples" / path.name
        target.write_text(path.read_text())
    build_site([results], tmp_path / "site")
    site = tmp_path / "site"
    for page, name in PAGES.items():
        html = (site / f"{page}.html").read_text()
        assert "<svg" in html and f"data/{name}.csv" in html
        out = tmp_path / f"{name}.csv"
        assert main(["report", page, str(results), "--csv", str(out)]) == 0
        assert (site / "data" / f"{name}.csv").read_text() == out.read_text(), page
    ranks = list(csv.DictReader((site / "data" / "ranks.csv").open()))
    assert ranks and list(ranks[0]) == ["scope", "model", "rank", "rank_low", "rank_high", "p_first"]
    overall = {r["model"].split(" ")[0]: r for r in ranks if r["scope"] == "overall"}
    assert overall["strong"]["rank"] == "1"
    assert (overall["middle"]["rank_low"], overall["middle"]["rank_high"]) == \
           (overall["twin"]["rank_low"], overall["twin"]["rank_high"])
    assert overall["middle"]["p_first"] == overall["twin"]["p_first"]
    pairwise = list(csv.DictReader((site / "data" / "pairwise.csv").open()))
    assert list(pairwise[0])[:9] == ["task", "model_a", "model_b", "delta", "ci_low", "ci_high", "p", "p_delong", "q"]
    twins = [r for r in pairwise if {r["model_a"].split(" ")[0], r["model_b"].split(" ")[0]} == {"middle", "twin"}]
    assert twins and all(float(r["delta"]) == 0.0 and r["p_delong"] == "" for r in twins)
    operating = list(csv.DictReader((site / "data" / "operating_points.csv").open()))
    assert any(r["task"] != r["source_task"] for r in operating)  # external sets
    assert {r["meets"] for r in operating if r["task"].startswith("referable_dr")} <= {"true", "false"}
    recal = list(csv.DictReader((site / "data" / "recalibration.csv").open()))
    assert {"ece", "ece_recalibrated", "brier", "brier_recalibrated", "model", "task", "method", "n"} <= set(recal[0])
    index = (site / "index.html").read_text()
    assert "Rank interval" in index and "rank-interval" in index and ">leader<" in index
    task_page = (site / "tasks" / "referable_dr_b.html").read_text()
    assert "Pairwise comparisons" in task_page and "Operating points" in task_page and "external" in task_page


def test_a_site_without_samples_has_no_statistics_pages(tmp_path):
    results = write_paired(tmp_path / "out")
    build_site([results], tmp_path / "site", no_samples=True)
    for page in PAGES:
        assert not (tmp_path / "site" / f"{page}.html").exists()
    assert "rank-interval" in (tmp_path / "site" / "index.html").read_text()  # the column, empty

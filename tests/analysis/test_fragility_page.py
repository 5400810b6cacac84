"""The fragility page and the overview's stability block draw from the fragility analyses: the page's CSV is
the report's table, the overview states one sentence per target, and variant lines stay out of the rankings."""

import csv
import io

from focus_eval.cli import main
from focus_eval.leaderboard import build_site
from focus_eval.results.schema import dumps

# model -> variant -> AUROC on dr_x: the three variants rank the models the same way
SCORES = {"m1": (0.9, 0.88, 0.91), "m2": (0.8, 0.79, 0.82), "m3": (0.7, 0.6, 0.65)}


def write(root):
    for model, scores in SCORES.items():
        rows = []
        for variant, auroc in zip(("default", "plain", "short"), scores):
            extra = {} if variant == "default" else {"prompt_variant": variant, "base_task": "dr_x"}
            task = "dr_x" if variant == "default" else f"dr_x@{variant}"
            rows.append({"model": model, "method": "prompt", "task": task, "dataset": "x", "target": "dr",
                         "metrics": {"auroc": auroc}, "extra": extra})
        (root / model).mkdir(parents=True)
        (root / model / "results.jsonl").write_text("".join(dumps(r) + "\n" for r in rows))
    return root


def test_page_csv_and_overview_sentence(tmp_path):
    results = write(tmp_path / "out")
    build_site([results], tmp_path / "site")
    assert main(["report", "prompt-sensitivity", str(results), "--csv", str(tmp_path / "p.csv")]) == 0
    page_csv = (tmp_path / "site" / "data" / "prompt-sensitivity.csv").read_text()
    assert list(csv.reader(io.StringIO(page_csv))) == list(csv.reader(io.StringIO((tmp_path / "p.csv").read_text())))
    page = (tmp_path / "site" / "fragility.html").read_text()
    assert "<svg" in page and "dr: the ranking of 3 models is stable across prompt variants" in page
    overview = (tmp_path / "site" / "index.html").read_text()
    assert 'id="stability"' in overview and "ranking of 3 models is stable" in overview


def test_variant_lines_stay_out_of_the_rankings(tmp_path):
    from focus_eval.leaderboard.conventions import collect_results
    from focus_eval.leaderboard.draw.catalog import load_catalog
    from focus_eval.leaderboard.pages.build import assemble

    collection = collect_results([write(tmp_path / "out")])
    site = assemble(collection, load_catalog(), include_proxy=False, top=5, include_paths=(), no_samples=True,
                    include_limited=False, title="t", base_url=None)
    assert {e.line.task for e in site.ranked} == {"dr_x"}
    assert len(site.entries) == 9


def test_variant_tasks_are_no_columns_of_the_overview_heatmap(tmp_path):
    report = build_site([write(tmp_path / "out")], tmp_path / "site")
    overview = (report.out_dir / "index.html").read_text()
    heatmap = overview[overview.index('id="heatmap"'):overview.index("</svg>", overview.index('id="heatmap"'))]
    assert "dr_x" in heatmap and "dr_x@" not in heatmap

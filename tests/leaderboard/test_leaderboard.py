"""The leaderboard builder (focus_eval/leaderboard) and the built site in headless Chromium."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pytest
from markupsafe import escape

from helpers import leaderboard_data as data
from helpers.leaderboard_data import line, tables, write_lines
from focus_eval.cli import main
from focus_eval.errors import DataError, FocusError
from focus_eval.leaderboard import build_site
from focus_eval.leaderboard.draw.calibration import read_calibration, reliability_bins
from focus_eval.leaderboard.draw.catalog import load_catalog
from focus_eval.leaderboard.draw.charts import auroc_colour, contrast, ink
from focus_eval.analysis.deltas import read_compare_files
from focus_eval.leaderboard.draw.csvdata import CsvTable
from focus_eval.leaderboard.conventions import read_entries
from focus_eval.leaderboard.pages.groups import paper_table
from focus_eval.results.collect import discover
from focus_eval.leaderboard.draw.slugs import assign_slugs
from focus_eval.analysis.significance import Mean, competition_ranks, mean_of_scores, verdict
from focus_eval.leaderboard.draw.numbers import fmt_signed, nice_ticks, tick_label


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The standard synthetic results (with a comparison file) built once into a site."""
    root = tmp_path_factory.mktemp("leaderboard")
    results = data.write_results(root / "results")
    data.write_compare(results / "compare.jsonl")
    report = build_site([results], root / "site")
    return report


# ---------------------------------------------------------------- inputs


def test_discover_finds_results_and_comparison_files(tmp_path):
    results = data.write_results(tmp_path / "out", models=data.MODELS[:2], tasks=data.TASKS[:1])
    data.write_compare(results / "compare-glaucoma.jsonl")
    data.write_compare(results / "sft-run" / "compare.jsonl")
    found = discover([results])
    assert [p.parent.name for p in found.results_files] == ["efficientnet-lite0", "tiny-clip"]
    assert [p.name for p in found.compare_files] == ["compare-glaucoma.jsonl", "compare.jsonl"]
    # A model folder, a file, and the same file twice (read once).
    model_dir = results / "tiny-clip"
    again = discover([model_dir, model_dir / "results.jsonl", results / "compare-glaucoma.jsonl"])
    assert again.results_files == [model_dir / "results.jsonl"]
    assert len(again.compare_files) == 1


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "absent", "no such file"),
    (lambda p: (p / "empty").mkdir() or p / "empty", "no results found"),
    (lambda p: write_lines(p / "notes.jsonl", ["{}"]), "expected a results folder"),
])
def test_discover_rejects_paths_without_results(tmp_path, make, message):
    with pytest.raises(FocusError, match=message):
        discover([make(tmp_path)])


# ---------------------------------------------------------------- reading and checking


@pytest.mark.parametrize("bad, message", [
    (line(metrics={"auroc": "0.9"}), "metrics.auroc must be a number"),
    ('{"model": "m", "method": "linear_probe", "task": "t", "metrics": {"auroc": NaN}}', "written as null"),
    ({k: v for k, v in line().items() if k != "task"}, "missing required keys \\['task'\\]"),
    (line(proxy="yes"), "'proxy' must be true or false"),
    (line(ci={"auroc": [0.1]}), "ci.auroc must be \\[low, high\\]"),
    (line(fairness={"age": {"eo_gap": "large"}}), "fairness.age.eo_gap must be a number"),
])
def test_a_malformed_results_line_is_an_error_naming_file_and_row(tmp_path, bad, message):
    path = write_lines(tmp_path / "m" / "results.jsonl", [line(task="ok"), bad])
    with pytest.raises(DataError, match=message) as error:
        read_entries(path)
    assert f"{path}, row 2" in str(error.value)


def test_fixture_lines_follow_the_results_contract(site):
    from focus_eval.results.schema import validate_result_dict

    for path in site.inputs.results_files:
        for row in json.loads("[" + ",".join(path.read_text(encoding="utf-8").splitlines()) + "]"):
            validate_result_dict(row)


def test_optional_keys_may_be_missing_and_extra_keys_are_kept(tmp_path):
    minimal = {"model": "m", "method": "zero_shot", "task": "dr_a", "metrics": {"auroc": 0.7},
               "note": "beyond the contract", "extra": {"seed_runs": 3}}
    [entry] = read_entries(write_lines(tmp_path / "results.jsonl", [minimal]))
    assert entry.line.family is None and entry.line.fairness == {} and entry.metric("ece") is None
    assert entry.raw["note"] == "beyond the contract"
    assert entry.flags == []


def test_underpowered_comes_from_the_flag_or_else_from_the_positive_count(tmp_path):
    rows = [line(task="flagged", underpowered=True, n_pos=50), line(task="few", n_pos=4),
            line(task="enough", n_pos=10)]
    entries = {e.line.task: e for e in read_entries(write_lines(tmp_path / "results.jsonl", rows))}
    assert entries["flagged"].underpowered and entries["few"].underpowered
    assert not entries["enough"].underpowered


def test_contamination_from_a_flag_or_from_the_pretraining_list(tmp_path):
    rows = [line(task="a", extra={"contaminated": True, "contamination": "FLAIR saw IDRiD"}),
            line(task="b", dataset="idrid", extra={"contamination": ["idrid", "rfmid"]}),
            line(task="c", dataset="messidor2", extra={"contamination": ["idrid"]}),
            line(task="d", extra={"contamination": True}),
            line(task="e", extra={"contamination": False})]
    entries = {e.line.task: e for e in read_entries(write_lines(tmp_path / "results.jsonl", rows))}
    assert entries["a"].contamination == "FLAIR saw IDRiD"
    assert "idrid" in entries["b"].contamination and "contaminated" in entries["b"].flags
    assert entries["c"].contamination is None
    assert "pretrained" in entries["d"].contamination and entries["e"].contamination is None


def test_duplicate_results_lines_are_an_error_that_says_how_to_choose(tmp_path):
    write_lines(tmp_path / "run1" / "m" / "results.jsonl", [line(created="2026-01-01T00:00:00Z")])
    write_lines(tmp_path / "run2" / "m" / "results.jsonl", [line(created="2026-02-01T00:00:00Z",
                                                                   metrics={"auroc": 0.9})])
    folders = [tmp_path / "run1", tmp_path / "run2"]
    with pytest.raises(DataError, match="duplicate results line .*first seen in .*--prefer newest.*--prefer FOLDER"):
        build_site(folders, tmp_path / "site")
    newest = build_site(folders, tmp_path / "site", prefer="newest")
    assert newest.replaced == 1 and json.loads((newest.out_dir / "data" / "results.json").read_text())[0][
        "metrics"]["auroc"] == 0.9
    older = build_site(folders, tmp_path / "site", prefer=tmp_path / "run1")
    assert json.loads((older.out_dir / "data" / "results.json").read_text())[0]["metrics"]["auroc"] == 0.8
    with pytest.raises(DataError, match="--prefer .*elsewhere cannot choose: it holds neither or both"):
        build_site(folders, tmp_path / "site", prefer=tmp_path / "elsewhere")


def test_prefer_newest_refuses_lines_of_the_same_time_and_the_cli_reports_what_it_kept(tmp_path, capsys):
    for run in ("run1", "run2"):
        write_lines(tmp_path / run / "m" / "results.jsonl", [line()])
    assert main(["leaderboard", str(tmp_path / "run1"), str(tmp_path / "run2"), "-o", str(tmp_path / "s"),
                 "--prefer", "newest"]) == 2
    assert "same creation time (use --prefer FOLDER)" in capsys.readouterr().err
    assert main(["leaderboard", str(tmp_path / "run1"), str(tmp_path / "run2"), "-o", str(tmp_path / "s"),
                 "--prefer", str(tmp_path / "run2")]) == 0
    assert f"kept 1 preferred line(s) over their duplicates (--prefer {tmp_path / 'run2'})" in capsys.readouterr().out


def test_lines_whose_conventions_differ_are_never_merged(tmp_path):
    write_lines(tmp_path / "m" / "results.jsonl", [
        line(task="dr_a"), line(task="dr_b", metrics={"auroc": 0.6}),
        line(task="dr_a", metrics={"auroc": 0.9}, extra={"probe_compat": True}),
        line(task="dr_a", metrics={"auroc": 0.7}, extra={"seed": 3, "zs_scale": 100.0})])
    entries = read_entries(tmp_path / "m" / "results.jsonl")
    assert [e.convention_text for e in entries] == ["", "", "probe-compat", "seed 3, zs-scale 100"]
    assert len({e.key for e in entries}) == 4  # the same task three times, three configurations
    report = build_site([tmp_path], tmp_path / "site")
    rows = tables(report.out_dir / "index.html")["main-table"]
    assert sorted((cells[0][1].split(" Linear probe")[-1].strip(" \u00b7"), cells[1][0]) for _, cells in rows) == [
        ("", repr(0.7)), ("probe-compat", repr(0.9)), ("seed 3, zs-scale 100", repr(0.7))]
    index = (report.out_dir / "index.html").read_text(encoding="utf-8")
    assert 'class="badge badge-convention" title="non-default --probe-compat: True (default False)"' in index


def test_comparison_reader_tolerates_missing_keys_and_rejects_wrong_types(tmp_path):
    path = write_lines(tmp_path / "compare.jsonl", [
        {"metric": "auroc", "delta": 0.1},
        {"metric": "ece", "train_dataset": "brset", "test_dataset": "brset", "ci": [-0.1, None]},
        {"kind": "summary", "metric": "auroc"},
        {"kind": "by_model", "metric": "auroc", "model": "x"},
    ])
    compare = read_compare_files([path])
    first, second = compare.comparisons
    assert first.domain == "unknown" and first.adapter is None and first.ci is None
    assert second.in_domain is True and second.domain == "in_domain" and second.ci == (-0.1, None)
    assert compare.summaries[0].domain == "unknown" and compare.summaries[0].mean_delta is None
    assert compare.other_kinds == {"by_model": 1}
    bad = write_lines(tmp_path / "compare-bad.jsonl", [{"metric": "auroc"}, {"metric": "auroc", "q": "0.01"}])
    with pytest.raises(DataError, match="row 2: 'q' must be a finite number"):
        read_compare_files([bad])


# ---------------------------------------------------------------- summary columns


def _summary_entries(tmp_path, extra_rows=()):
    rows = [
        line(task="dr_a", dataset="a", metrics={"auroc": 0.9, "accuracy": None},
             fairness={"age": {"eo_gap": 0.1, "accuracy_gap": 0.2, "auroc_gap": None, "dp_gap": 0.9}},
             robustness={"quality": {"accuracy_gap": 0.1, "ece_gap": 0.3}}),
        line(task="dr_b", dataset="a", metrics={"auroc": 0.8, "accuracy": 0.6},
             fairness={"age": {"eo_gap": 0.5, "accuracy_gap": None}}),
        line(task="dr_c", dataset="b", metrics={"auroc": 0.7, "accuracy": 0.8}),
        # Another family with no gaps at all: its scores stay missing instead of taking the others' median.
        line(model="clip", family="vlm", method="zero_shot", task="dr_a", dataset="a"),
        *extra_rows,
    ]
    return read_entries(write_lines(tmp_path / "results.jsonl", rows))


def test_summary_columns_follow_the_paper_without_imputation(tmp_path):
    [block] = paper_table(_summary_entries(tmp_path), load_catalog(), include_proxy=False)
    vm, vlm = block.rows
    # Fairness: column means (EO 0.3, accuracy 0.2; the DP gap is not a fairness column), then their mean.
    assert vm.summary.fairness.value == pytest.approx(1 - (0.3 + 0.2) / 2)
    assert (vm.summary.fairness.covered, vm.summary.fairness.total) == (2, 3)
    # Quality mixes the accuracy and ECE gaps as the paper does; one line of three has them.
    assert vm.summary.quality.value == pytest.approx(1 - (0.1 + 0.3) / 2)
    assert (vm.summary.quality.covered, vm.summary.quality.total) == (1, 3)
    assert vm.summary.means["accuracy"] == pytest.approx(0.7)  # the null accuracy is skipped, not zero
    assert vm.summary.means["auroc"] == pytest.approx(0.8)
    assert vm.summary.shift == pytest.approx(1 - (0.85 - 0.7))  # per-dataset means 0.85 (a) and 0.7 (b)
    assert vlm.summary.fairness.value is None and vlm.summary.quality.value is None
    assert vlm.summary.shift is None  # a single dataset has no spread


def test_proxy_and_underpowered_lines_stay_out_of_group_means_unless_asked(tmp_path):
    extra = [line(task="referable_dr_x", dataset="x", target="referable_dr", proxy=True, metrics={"auroc": 0.1}),
             line(task="dr_small", dataset="y", underpowered=True, metrics={"auroc": 0.2})]
    entries = _summary_entries(tmp_path, extra)
    [default] = paper_table(entries, load_catalog(), include_proxy=False)[:1]
    assert default.rows[0].summary.means["auroc"] == pytest.approx(0.8)
    with_proxy = paper_table(entries, load_catalog(), include_proxy=True)
    assert with_proxy[0].rows[0].summary.means["auroc"] == pytest.approx((0.9 + 0.8 + 0.7 + 0.2) / 4)


def test_overview_shows_missing_summary_scores_as_a_dash_with_coverage(tmp_path):
    write_lines(tmp_path / "results" / "m" / "results.jsonl", [
        r for r in (json.loads(json.dumps(e.raw)) for e in _summary_entries(tmp_path / "tmp"))])
    report = build_site([tmp_path / "results"], tmp_path / "site")
    rows = tables(report.out_dir / "index.html")["summary-table"]
    by_family = {cells[1][1].split()[0]: cells for _, cells in rows}
    fairness_vm = by_family["Vision"][9]
    assert fairness_vm == (repr(0.75), "0.750 2/3")
    fairness_vlm = by_family["Dual"][9]
    assert fairness_vlm == ("", "\u2014 0/1")


# ---------------------------------------------------------------- calibration


def test_reliability_bins_use_ten_equal_width_bins_like_the_ece():
    bins = reliability_bins([0.05, 0.15, 0.95, 1.0], [0, 1, 1, 1])
    assert [(b.lower, b.count) for b in bins] == [(0.0, 1), (0.1, 1), (0.9, 2)]
    assert bins[2].mean_score == pytest.approx(0.975) and bins[1].mean_label == 1.0


def test_calibration_from_samples_skips_unscored_and_training_rows(site):
    results = site.inputs.results_files[0].parent
    calibration = read_calibration(results / "samples" / "dr_synth_desktop.linear_probe.jsonl")
    [entry] = [e for e in read_entries(results / "results.jsonl") if e.line.task == "dr_synth_desktop"]
    assert calibration.n == 120 and calibration.n_skipped == 1
    assert calibration.ece == pytest.approx(entry.metric("ece"))


def test_bad_sample_rows_name_the_file_and_row(tmp_path):
    path = write_lines(tmp_path / "t.m.jsonl", [{"split": "test", "label": 1, "score": 0.3},
                                                {"split": "test", "label": 1, "score": 1.7}])
    with pytest.raises(DataError, match="t.m.jsonl, row 2: score must be a probability"):
        read_calibration(path)


# ---------------------------------------------------------------- the built site


def test_every_page_is_written(site):
    out = site.out_dir
    expected = {"index.html", "fairness.html", "robustness.html", "finetune.html"}
    expected |= {f"tasks/{t.name}.html" for t in data.TASKS}
    assert expected <= set(site.pages)
    assert len([p for p in site.pages if p.startswith("models/")]) == len(data.MODELS)
    for page in site.pages:
        assert (out / page).is_file()
    assert (out / "static" / "style.css").is_file() and (out / "static" / "leaderboard.js").is_file()
    rows = json.loads((out / "data" / "results.json").read_text(encoding="utf-8"))
    assert len(rows) == site.n_lines == sum(len(m.methods) for m in data.MODELS) * len(data.TASKS)
    assert {r["model"] for r in rows} == {m.name for m in data.MODELS}
    assert all("extra" in r and "underpowered" in r for r in rows)


def test_no_external_assets(site):
    """Nothing a page loads comes from the network (links to a model's hub page are only followed on a click)."""
    loaded = re.compile(r'<(?:script|img|link|iframe|source)\b[^>]*\b(?:src|href)="([^"]*)"')
    for page in site.pages:
        html = (site.out_dir / page).read_text(encoding="utf-8")
        assert all(not url.startswith(("http:", "https:", "//")) for url in loaded.findall(html)), page
        assert "//cdn" not in html
    assert "url(" not in (site.out_dir / "static" / "style.css").read_text(encoding="utf-8")


def own_scripts_only(html: str) -> bool:
    """The page's script tags are the site's own two files, and nothing else starts a script."""
    tags = re.findall(r"<script[^>]*>", html)
    return html.count("<script") == len(tags) == 2 and all(
        re.fullmatch(r'<script src="(\.\./)*static/(leaderboard|views)\.js">', tag) for tag in tags)


def test_strings_from_results_are_escaped(site):
    for page in site.pages:
        html = (site.out_dir / page).read_text(encoding="utf-8")
        assert data.HOSTILE not in html
        assert own_scripts_only(html), page
    index = (site.out_dir / "index.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in index
    hostile_pages = [p for p in site.pages if p.startswith("models/script-alert-1-script-")]
    assert len(hostile_pages) == 1


def test_hostile_values_in_attributes_and_labels_stay_text(tmp_path):
    attack = '"><img src=x onerror=alert(2)>'
    write_lines(tmp_path / "r" / "m" / "results.jsonl", [
        line(dataset=attack, family=attack, extra={"threshold_rule": "</script><script>alert(3)</script>",
                                                     "contamination": attack, "contaminated": True})])
    report = build_site([tmp_path / "r"], tmp_path / "site")
    for page in report.pages:
        html = (report.out_dir / page).read_text(encoding="utf-8")
        assert "<img" not in html and "alert(3)</script>" not in html
        assert own_scripts_only(html)


def test_null_metrics_show_as_an_em_dash(site):
    ranking = tables(site.out_dir / "tasks" / "dr_idrid.html")["ranking"]
    [(_, cells)] = [row for row in ranking if "tiny-medgemma" in row[1][0][1]]
    auroc = cells[1]  # model (with its rank), then the scores, AUROC first
    assert auroc == ("", "\u2014")
    assert ranking[-1] == (ranking[-1][0], cells)  # ranked last: missing values sort after every number


def test_markers_for_proxy_underpowered_untrained_and_contaminated_rows(site):
    proxy = tables(site.out_dir / "tasks" / "referable_dr_rfmid.html")["ranking"]
    assert all("is-proxy" in attrs["class"] and "is-underpowered" in attrs["class"] for attrs, _ in proxy)
    model = tables(site.out_dir / "models" / "tiny-clip.html")["model-results"]
    assert all("is-untrained" in attrs["class"] and "untrained" in cells[-1][1] for attrs, cells in model)
    flair = tables(site.out_dir / "models" / "flair.html")["model-results"]
    marked = [cells[0][1] for attrs, cells in flair if "is-contaminated" in attrs["class"]]
    assert marked == ["dr_idrid"]


def test_missing_sample_file_leaves_a_note_instead_of_a_curve(site):
    html = (site.out_dir / "tasks" / "dr_synth_mobile.html").read_text(encoding="utf-8")
    assert html.count("No sample file next to the results") == 1
    assert html.count('class="chart reliability"') == sum(len(m.methods) for m in data.MODELS) - 1


def test_task_pages_show_the_label_rule_from_the_task_file(site):
    from focus_eval.task import TaskIndex

    shipped = TaskIndex().get("dr_idrid")
    html = (site.out_dir / "tasks" / "dr_idrid.html").read_text(encoding="utf-8")
    assert str(escape(shipped.label_rule)) in html
    assert "differs from the one these results used" in html  # the fixture's task hashes are made up
    assert "pred = the probe&#39;s class" in html  # the hard-label rule the results line states


def test_metric_direction_is_shown_in_headers(site):
    html = (site.out_dir / "tasks" / "dr_idrid.html").read_text(encoding="utf-8")
    assert "ECE&nbsp;<span class=\"dir\" aria-label=\"lower is better\">\u2193</span>" in html
    assert "AUROC&nbsp;<span class=\"dir\" aria-label=\"higher is better\">\u2191</span>" in html
    fairness = (site.out_dir / "fairness.html").read_text(encoding="utf-8")
    assert "EO gap&nbsp;<span class=\"dir\" aria-label=\"lower is better\">" in fairness


def test_an_all_underpowered_build_says_why_the_summary_is_empty(tmp_path):
    small = tuple(data.TaskSpec(t.name, t.dataset, t.target, n_pos=5) for t in data.TASKS[:2])
    results = data.write_results(tmp_path / "r", models=data.MODELS[:2], tasks=small)
    index = build_site([results], tmp_path / "site").out_dir / "index.html"
    assert "summary-table" not in tables(index)
    assert index.read_text(encoding="utf-8").count("build with <code>--include-proxy</code>") == 2
    with_proxy = build_site([results], tmp_path / "site", include_proxy=True).out_dir / "index.html"
    assert len(tables(with_proxy)["summary-table"]) == 3  # one target: vm probe, vlm zero-shot, vlm probe


def test_finetune_page_only_with_comparison_files(tmp_path):
    results = data.write_results(tmp_path / "r", models=data.MODELS[:1], tasks=data.TASKS[:1])
    report = build_site([results], tmp_path / "site")
    assert "finetune.html" not in report.pages
    assert "finetune.html" not in (report.out_dir / "index.html").read_text(encoding="utf-8")


def test_rebuild_replaces_an_earlier_build_but_refuses_a_foreign_folder(tmp_path):
    results = data.write_results(tmp_path / "r", models=data.MODELS[:2], tasks=data.TASKS[:1])
    out = tmp_path / "site"
    build_site([results], out)
    assert (out / "models" / "tiny-clip.html").is_file()
    (results / "tiny-clip" / "results.jsonl").unlink()
    build_site([results], out)
    assert not (out / "models" / "tiny-clip.html").exists()
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(FocusError, match="not empty"):
        build_site([results], foreign)
    assert (foreign / "notes.txt").read_text() == "keep me"


def test_slugs_are_safe_and_distinct():
    slugs = assign_slugs(["dinov2-l", "Model", "model", data.HOSTILE, "a/b", "a b"])
    assert slugs["dinov2-l"] == "dinov2-l"
    assert len(set(s.lower() for s in slugs.values())) == len(slugs)
    assert all("/" not in s and "<" not in s and " " not in s for s in slugs.values())


def test_cli_builds_the_site_and_lists_its_inputs(tmp_path, capsys):
    results = data.write_results(tmp_path / "r", models=data.MODELS[:1], tasks=data.TASKS[:2])
    assert main(["leaderboard", str(results), "-o", str(tmp_path / "site")]) == 0
    out = capsys.readouterr().out
    assert "read 2 results lines from 1 results file(s)" in out
    assert str(results / "efficientnet-lite0" / "results.jsonl") in out
    assert (tmp_path / "site" / "index.html").is_file()
    assert main(["leaderboard", str(tmp_path / "absent"), "-o", str(tmp_path / "x")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


@pytest.mark.slow
def test_a_grid_with_twice_the_tasks_builds_in_about_twice_the_time(tmp_path):
    # A ratio, not a time bound: the build's cost grows in proportion to the results lines (nothing quadratic in
    # them), whatever the machine. CPU time of this process: the build runs in one thread, and other jobs sharing
    # the machine's cores do not count against it. (docs/PERFORMANCE.md gives the time of a 30 x 24 grid.)
    build_site([data.write_results(tmp_path / "warm", *data.grid(2, 3, ("linear_probe",)))], tmp_path / "warm-site")
    seconds = {}
    for n_tasks in (12, 24):
        models, tasks = data.grid(16, n_tasks, ("linear_probe", "zero_shot"))
        results = data.write_results(tmp_path / f"r{n_tasks}", models=models, tasks=tasks, shared_samples=True)
        started = time.process_time()
        report = build_site([results], tmp_path / f"site{n_tasks}")
        seconds[n_tasks] = time.process_time() - started
        assert report.n_lines == 16 * n_tasks * 2 and len(report.samples_files) == 16 * n_tasks * 2
    assert seconds[24] < 2.5 * seconds[12], f"12 tasks: {seconds[12]:.1f} s, 24 tasks: {seconds[24]:.1f} s of CPU"


# ---------------------------------------------------------------- statistics the pages state


def test_ties_at_the_shown_precision_share_a_rank_and_missing_values_have_none():
    assert competition_ranks([0.9, 0.8123, 0.81231, None, 0.7]) == [1, 2, 2, None, 4]
    assert competition_ranks([0.1, 0.2], lower_is_better=True) == [1, 2]


@pytest.mark.parametrize("low, high", [(-0.0115, 0.0115), (-0.3, 0.2), (0.0, 1.0), (-2e-6, 2e-6)])
def test_axis_ticks_are_round_distinct_and_cover_the_range(low, high):
    ticks, step = nice_ticks(low, high, 4)
    labels = [tick_label(t, step, signed=True) for t in ticks]
    assert ticks[0] <= low and ticks[-1] >= high and len(set(labels)) == len(labels) and "0" in labels
    assert all(abs((b - a) - step) < step * 1e-6 for a, b in zip(ticks, ticks[1:]))


def test_small_deltas_keep_their_digits():
    assert [fmt_signed(v) for v in (0.0, 1.7e-6, -0.00042, 0.0123, -0.5)] == \
        ["0", "+1.7e-06", "-0.00042", "+0.012", "-0.500"]


@pytest.mark.parametrize("metric, delta, ci, q, underpowered, status", [
    ("auroc", 0.05, [0.02, 0.08], 0.01, False, "better"),
    ("ece", 0.05, [0.02, 0.08], 0.01, False, "worse"),  # higher ECE is worse
    ("ece", -0.05, [-0.08, -0.02], 0.01, False, "better"),
    ("auroc", 0.0, [0.0, 0.0], 0.0, False, "not-significant"),  # a zero delta is never significant
    ("auroc", 0.05, [0.02, 0.08], 0.01, True, "underpowered"),
    ("auroc", 0.05, [-0.01, 0.08], 0.01, False, "not-significant"),  # the interval holds zero
    ("auroc", 0.05, [0.02, 0.08], 0.2, False, "not-significant"),
    ("auroc", 0.05, [0.02, 0.08], None, False, "not-significant"),
    ("auroc", None, None, 0.01, False, "no-estimate"),
])
def test_significant_only_when_q_is_small_the_interval_excludes_zero_and_the_test_is_powered(
        metric, delta, ci, q, underpowered, status):
    assert verdict(metric, delta, ci, q, underpowered).status == status


def test_a_comparison_is_underpowered_by_its_flag_or_its_counts(tmp_path):
    path = write_lines(tmp_path / "compare.jsonl", [
        {"metric": "auroc", "delta": 0.1, "n": 300, "n_pos": 60}, {"metric": "auroc", "n": 300, "n_pos": 4},
        {"metric": "auroc", "n": 12}, {"metric": "auroc", "n": 300, "underpowered": True},
        {"kind": "summary", "metric": "auroc", "n_comparisons": 2},
        {"kind": "summary", "metric": "auroc", "n_comparisons": 5}])
    data_ = read_compare_files([path])
    assert [c.underpowered for c in data_.comparisons] == [False, True, True, True]
    assert [s.underpowered for s in data_.summaries] == [True, False]


def test_the_mean_of_task_scores_averages_their_replicates():
    a, b = np.array([0.8, 0.7, 0.9, 0.85]), np.array([0.6, 0.5, 0.7, 0.65])
    mean = mean_of_scores([(0.8, a), (0.6, b)])
    assert mean.value == pytest.approx(0.7) and mean.n == 2
    assert mean.ci == pytest.approx(tuple(np.percentile((a[1:] + b[1:]) / 2, [2.5, 97.5])))
    assert mean_of_scores([(0.8, None), (None, None)]) == Mean(0.8, None, 1)


def test_every_heatmap_colour_has_text_of_aa_contrast():
    for value in [i / 200 for i in range(201)]:
        fill = auroc_colour(value)
        assert contrast(fill, ink(fill)) >= 4.5, (value, fill)


# ---------------------------------------------------------------- publishing


def test_title_and_base_url_for_publishing(tmp_path, capsys):
    results = data.write_results(tmp_path / "r", models=data.MODELS[:1], tasks=data.TASKS[:1])
    assert main(["leaderboard", str(results), "-o", str(tmp_path / "site"), "--title", "Retina <models>",
                 "--base-url", "https://example.org/board"]) == 0
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "<title>Retina &lt;models&gt;</title>" in index
    assert '<link rel="canonical" href="https://example.org/board/index.html">' in index
    task = (tmp_path / "site" / "tasks" / "dr_synth_desktop.html").read_text(encoding="utf-8")
    assert '<link rel="canonical" href="https://example.org/board/tasks/dr_synth_desktop.html">' in task
    assert 'href="../static/style.css"' in task  # links stay relative: any static host serves the folder
    assert main(["leaderboard", str(results), "-o", str(tmp_path / "s2"), "--base-url", 'x" onload="y']) == 2
    assert "--base-url" in capsys.readouterr().err


def test_a_synthetic_data_banner_when_every_result_is_synthetic(tmp_path):
    synthetic = [t for t in data.TASKS if t.dataset.startswith("synth_")]
    demo = build_site([data.write_results(tmp_path / "demo", models=data.MODELS[:1], tasks=synthetic)],
                      tmp_path / "demo-site")
    assert all('class="banner"' in (demo.out_dir / p).read_text(encoding="utf-8") for p in demo.pages)
    mixed = build_site([data.write_results(tmp_path / "mixed", models=data.MODELS[:1])], tmp_path / "mixed-site")
    assert 'class="banner"' not in (mixed.out_dir / "index.html").read_text(encoding="utf-8")


def test_csv_cells_never_start_a_spreadsheet_formula():
    table = CsvTable(("model", "value", "flag"))
    table.add("=HYPERLINK(\"x\")", -0.5, True)
    table.add("@cmd", None, False)
    assert table.text().splitlines() == ["model,value,flag", '"\'=HYPERLINK(""x"")",-0.5,true', "'@cmd,,false"]


def test_an_unreadable_run_manifest_is_reported_not_fatal(tmp_path, capsys):
    results = data.write_results(tmp_path / "r", models=data.MODELS[:1], tasks=data.TASKS[:1])
    (results / data.MODELS[0].folder / "run-20260101T000000Z.json").write_text("{torn", encoding="utf-8")
    assert main(["leaderboard", str(results), "-o", str(tmp_path / "site")]) == 0
    assert "warning: run manifest not read:" in capsys.readouterr().out


def test_limited_runs_beside_the_full_results_are_found_and_marked(tmp_path):
    write_lines(tmp_path / "out" / "m" / "results.jsonl", [line()])
    write_lines(tmp_path / "out" / "m" / "limit-5" / "results.jsonl",
                [line(limited=True, metrics={"auroc": 0.99}, extra={"limit": 5})])
    report = build_site([tmp_path / "out"], tmp_path / "site")
    assert report.n_limited == 1 and len(report.inputs.results_files) == 2
    [(_, cells)] = tables(report.out_dir / "index.html")["main-table"]
    assert float(cells[1][0]) == 0.8

"""The leaderboard builder (focus_eval/leaderboard) and the built site in headless Chromium."""

from __future__ import annotations

import json
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markupsafe import escape

import leaderboard_data as data
from focus_eval.cli import main
from focus_eval.errors import DataError, FocusError
from focus_eval.leaderboard import build_site
from focus_eval.leaderboard.calibration import read_calibration, reliability_bins
from focus_eval.leaderboard.catalog import load_catalog
from focus_eval.leaderboard.compare import read_compare_files
from focus_eval.leaderboard.entries import read_entries
from focus_eval.leaderboard.groups import paper_table
from focus_eval.leaderboard.inputs import discover
from focus_eval.leaderboard.slugs import assign_slugs

from browser_support import Visit


# ---------------------------------------------------------------- helpers


class _Tables(HTMLParser):
    """Rows of every table: {table id: [(row attributes, [(cell data-value, cell text), ...]), ...]}."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list] = {}
        self._table = None
        self._row = None
        self._cell = None
        self._in_body = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._table = self.tables.setdefault(attrs.get("id", f"table{len(self.tables)}"), [])
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body and self._table is not None:
            self._row = (attrs, [])
            self._table.append(self._row)
        elif tag == "td" and self._row is not None:
            self._cell = [attrs.get("data-value"), ""]

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self._row[1].append((self._cell[0], " ".join(self._cell[1].split())))
            self._cell = None
        elif tag == "tbody":
            self._in_body = False
        elif tag == "table":
            self._table = None

    def handle_data(self, text):
        if self._cell is not None:
            self._cell[1] += " " + text


def tables(path: Path) -> dict[str, list]:
    parser = _Tables()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser.tables


def write_lines(path: Path, lines: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
                    encoding="utf-8")
    return path


def line(model="m", task="dr_a", dataset="a", target="dr", family="vm", method="linear_probe", **keys) -> dict:
    """A results line with every SPEC key; ``keys`` override any of them."""
    row = {"model": model, "family": family, "domain": "general", "untrained": False, "method": method,
           "task": task, "dataset": dataset, "target": target, "proxy": False, "adapter": None, "n": 100,
           "n_pos": 40, "n_valid": 100, "n_unparsed": 0, "n_errors": 0,
           "metrics": {"auroc": 0.8, "auprc": 0.7, "accuracy": 0.75, "f1": 0.6, "precision": 0.6, "recall": 0.6,
                       "ece": 0.1, "brier": 0.2},
           "ci": {}, "ci_method": "patient_bootstrap", "n_boot": 100, "fairness": {}, "robustness": {},
           "task_version": 1, "task_hash": "t", "preset_hash": "p", "created": "2026-01-01T00:00:00Z"}
    metrics = keys.pop("metrics", {})
    row.update(keys)
    row["metrics"] = {**row["metrics"], **metrics}
    return row


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


def test_duplicate_results_lines_are_an_error(tmp_path):
    write_lines(tmp_path / "run1" / "results.jsonl", [line()])
    write_lines(tmp_path / "run2" / "results.jsonl", [line()])
    with pytest.raises(DataError, match="duplicate results line .*first seen in"):
        build_site([tmp_path], tmp_path / "site")


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
    for page in site.pages:
        html = (site.out_dir / page).read_text(encoding="utf-8")
        assert "http://" not in html and "https://" not in html and "//cdn" not in html
    assert "url(" not in (site.out_dir / "static" / "style.css").read_text(encoding="utf-8")


def test_strings_from_results_are_escaped(site):
    for page in site.pages:
        html = (site.out_dir / page).read_text(encoding="utf-8")
        assert data.HOSTILE not in html
        assert html.count("<script") == 1, page  # only the site's own script tag
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
        assert html.count("<script") == 1


def test_null_metrics_show_as_an_em_dash(site):
    ranking = tables(site.out_dir / "tasks" / "dr_idrid.html")["ranking"]
    [(_, cells)] = [row for row in ranking if "tiny-medgemma" in row[1][1][1]]
    auroc = cells[7]  # #, model, family, method, n, n pos, unparsed, AUROC
    assert auroc == ("", "\u2014")
    assert ranking[-1] == (ranking[-1][0], cells)  # ranked last: missing values sort after every number


def test_markers_for_proxy_underpowered_untrained_and_contaminated_rows(site):
    proxy = tables(site.out_dir / "tasks" / "referable_dr_rfmid.html")["ranking"]
    assert all("is-proxy" in attrs["class"] and "is-underpowered" in attrs["class"] for attrs, _ in proxy)
    model = tables(site.out_dir / "models" / "tiny-clip.html")["model-results"]
    assert all("is-untrained" in attrs["class"] and "untrained" in cells[-1][1] for attrs, cells in model)
    flair = tables(site.out_dir / "models" / "flair.html")["model-results"]
    marked = [cells[1][1] for attrs, cells in flair if "is-contaminated" in attrs["class"]]
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
def test_build_of_a_full_grid_takes_seconds(tmp_path):
    models, tasks = data.grid(30, 24, ("linear_probe", "zero_shot"))
    results = data.write_results(tmp_path / "r", models=models, tasks=tasks, shared_samples=True)
    started = time.perf_counter()
    report = build_site([results], tmp_path / "site")
    elapsed = time.perf_counter() - started
    assert report.n_lines == 30 * 24 * 2 and len(report.samples_files) == 30 * 24 * 2
    assert elapsed < 10, f"building the site took {elapsed:.1f} s"


# ---------------------------------------------------------------- in the browser


def column_values(page, table: str, header_text: str) -> list:
    index = page.locator(f"#{table} thead th", has_text=header_text).first.evaluate("th => th.cellIndex")
    return page.eval_on_selector_all(
        f"#{table} tbody tr", f"rows => rows.map(r => r.cells[{index}].getAttribute('data-value') "
        f"?? r.cells[{index}].textContent.trim())")


@pytest.mark.slow
def test_every_page_loads_offline_without_errors_or_dialogs(browser, site):
    visit = Visit(browser)
    for page in site.pages:
        visit.open(site.out_dir / page)
    visit.assert_clean()
    visit.page.close()


@pytest.mark.slow
def test_clicking_a_header_sorts_numbers_with_missing_values_last(browser, site):
    visit = Visit(browser)
    page = visit.open(site.out_dir / "tasks" / "dr_idrid.html")
    ranked = column_values(page, "ranking", "AUROC")
    page.locator("#ranking thead th", has_text="Model").first.click()
    names = [n.lower() for n in column_values(page, "ranking", "Model")]
    assert names == sorted(names) and column_values(page, "ranking", "AUROC") != ranked
    auroc = page.locator("#ranking thead th", has_text="AUROC").first
    auroc.click()
    values = column_values(page, "ranking", "AUROC")
    numbers = [float(v) for v in values if v]
    assert numbers == sorted(numbers, reverse=True) and values[-1] == ""
    assert auroc.get_attribute("aria-sort") == "descending"
    auroc.click()
    values = column_values(page, "ranking", "AUROC")
    numbers = [float(v) for v in values if v]
    assert numbers == sorted(numbers) and values[-1] == ""
    visit.assert_clean()
    visit.page.close()


@pytest.mark.slow
def test_filters_hide_rows(browser, site):
    visit = Visit(browser)
    page = visit.open(site.out_dir / "tasks" / "dr_idrid.html")
    rows = page.locator("#ranking tbody tr")
    total = rows.count()
    page.select_option('.filters[data-for="ranking"] select[data-filter="method"]', "linear_probe")
    visible = page.locator("#ranking tbody tr:not([hidden])")
    assert 0 < visible.count() < total
    assert set(visible.evaluate_all("rows => rows.map(r => r.dataset.method)")) == {"linear_probe"}
    assert page.locator('.filters[data-for="ranking"] .filter-count').inner_text() == f"{visible.count()} of {total} rows"
    page.select_option('.filters[data-for="ranking"] select[data-filter="method"]', "")
    page.fill('.filters[data-for="ranking"] input[data-filter-text]', "flair")
    assert page.locator("#ranking tbody tr:not([hidden])").count() == 1
    visit.assert_clean()
    visit.page.close()


@pytest.mark.slow
def test_charts_are_drawn(browser, site):
    visit = Visit(browser)
    page = visit.open(site.out_dir / "index.html")
    n_configs = sum(len(m.methods) for m in data.MODELS)
    assert page.locator("#heatmap .cells rect").count() == n_configs * len(data.TASKS)
    assert page.locator("#heatmap").bounding_box()["width"] > 200
    assert page.locator("#radar .series polygon").count() == 5 and page.locator("#radar circle").count() > 20
    page = visit.open(site.out_dir / "tasks" / "dr_synth_desktop.html")
    assert page.locator("svg.reliability").count() == n_configs
    assert page.locator("svg.reliability circle").count() >= n_configs * 3
    page = visit.open(site.out_dir / "finetune.html")
    assert page.locator("#forest .estimate").count() == 4
    visit.assert_clean()
    visit.page.close()


@pytest.mark.slow
def test_hostile_model_name_shows_as_text_and_runs_nothing(browser, site):
    visit = Visit(browser)
    page = visit.open(site.out_dir / "index.html")
    assert page.get_by_role("link", name=data.HOSTILE, exact=True).count() >= 1
    page.get_by_role("link", name=data.HOSTILE, exact=True).first.click()
    page.wait_for_load_state("load")
    assert page.locator("h1").inner_text().startswith(data.HOSTILE)
    assert page.evaluate("document.querySelectorAll('script').length") == 1
    visit.assert_clean()
    visit.page.close()


@pytest.mark.slow
def test_overview_screenshot(browser, site, tmp_path):
    from PIL import Image

    visit = Visit(browser, width=1400)
    page = visit.open(site.out_dir / "index.html")
    shot = tmp_path / "overview.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
    with Image.open(shot) as image:
        assert image.width == 1400 and image.height > 1500
        assert len(image.convert("RGB").getcolors(maxcolors=1 << 20)) > 200  # more than a blank page
    visit.assert_clean()
    visit.page.close()

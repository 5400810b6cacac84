"""Runs combined in one results folder: each case that went wrong when lines of several runs met. A corruption's
clean baseline is the clean line of the same identity, never a label budget's; a label rule is never a seed; a line
of another task version, or without answers, is compared with nothing and ranked nowhere; the rank pages rank the
lines the main table ranks; the operating points page leaves out the lines of fragility runs; a reversing Platt map is flagged; an output never lands on an input; exported names
never collide; ``report``'s resampling options have the run's ranges."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil

import pytest

from focus_eval.analysis import ANALYSES
from focus_eval.analysis.base import ReportOptions
from focus_eval.cli import main
from focus_eval.leaderboard import build_site
from focus_eval.leaderboard.conventions import collect_results
from helpers.leaderboard_data import line, tables, write_lines
from helpers.variant_lines import PLAIN, results_line, sample_rows, specs, write_variants

OPTIONS = ReportOptions(n_boot=40)


def rows_of(name, folder, options=OPTIONS):
    table = ANALYSES.get(name).compute(collect_results([folder]), options)
    return [dict(zip(table.columns, r)) for r in table.rows], table.notes


def plain_auroc(model, task="dr_a"):
    spec = next(s for s in specs() if (s.kind, s.model, s.task) == (PLAIN, model, task))
    return results_line(spec, sample_rows(spec))["metrics"]["auroc"]


@pytest.fixture(scope="module")
def every(tmp_path_factory):
    return write_variants(tmp_path_factory.mktemp("every") / "results")


def test_the_clean_baseline_stays_the_clean_line_when_other_runs_land_beside_it(every):
    rows, notes = rows_of("corruptions", every)
    clean = {(r["model"], r["task"]): r["clean"] for r in rows}
    assert clean == {("m1 (linear_probe)", "dr_a"): plain_auroc("m1"), ("m2 (linear_probe)", "dr_a"): plain_auroc("m2"),
                     ("m3", "dr_a"): plain_auroc("m3")}
    assert any("m1 \u00b7 linear_probe on dr_a@train0.5-s1" in n for n in notes)


def test_label_rule_lines_are_never_seeds_of_a_label_budget(every):
    rows, notes = rows_of("label-efficiency", every)
    m1 = {r["fraction"]: r for r in rows if r["model"] == "m1 (linear_probe)" and r["task"] == "dr_a"}
    assert m1[1.0]["seeds"] == 1 and m1[1.0]["mean"] == plain_auroc("m1") and m1[0.5]["seeds"] == 2
    assert any("m1 \u00b7 linear_probe on dr_a@severe" in n for n in notes)


def test_paraphrases_are_compared_with_paraphrases_only(every):
    rows, _ = rows_of("prompt-sensitivity", every)
    (m3,) = [r for r in rows if r["task"] == "dr_a"]
    assert m3["variants"] == 2 and min(m3["min"], m3["max"]) <= plain_auroc("m3") <= max(m3["min"], m3["max"])
    assert plain_auroc("m3") in (m3["min"], m3["max"])


def test_a_line_of_another_task_version_is_flagged_and_compared_with_nothing(every):
    (old,) = [e for e in collect_results([every]).entries if e.model == "m6"]
    assert "version_mismatch" in old.flags and "version 0" in old.version_note and "version 1" in old.version_note
    for name in ("ranks", "pairwise"):
        table = ANALYSES.get(name).compute(collect_results([every]), OPTIONS)
        assert not any("m6" in str(cell) for row in table.rows for cell in row)
        assert any("another version of the task" in n and "m6" in n for n in table.notes)


def test_two_versions_of_one_configuration_are_two_lines(tmp_path):
    new = line(model="m", task="dr_a", task_version=2, task_hash="t2", created="2026-02-01T00:00:00Z")
    old = line(model="m", task="dr_a", task_version=1, task_hash="t1", created="2026-01-01T00:00:00Z")
    other = line(model="n", task="dr_a", task_version=2, task_hash="t2")
    write_lines(tmp_path / "new" / "m" / "results.jsonl", [new])
    write_lines(tmp_path / "new" / "n" / "results.jsonl", [other])
    write_lines(tmp_path / "old" / "m" / "results.jsonl", [old])
    entries = collect_results([tmp_path / "new", tmp_path / "old"]).entries
    assert len(entries) == 3  # no line replaces another, and reading does not stop on a duplicate
    flagged = [e for e in entries if e.version_note]
    assert [e.line.task_version for e in flagged] == [1]


def test_a_configuration_without_answers_has_no_score_and_no_rank(every, tmp_path):
    (mute, _) = [e for e in collect_results([every]).entries if e.model == "m5"]
    assert mute.line.metrics["accuracy"] == 0.0 and mute.metric("accuracy") is None and mute.metric_ci("accuracy") is None
    assert mute.flags == ["no_answers"]
    for name in ("ranks", "pairwise"):
        table = ANALYSES.get(name).compute(collect_results([every]), OPTIONS)
        assert not any("m5" in str(cell) for row in table.rows for cell in row)
        assert any("no answers" in n and "m5 \u00b7 prompt on dr_a" in n for n in table.notes)
    site = tmp_path / "site"
    build_site([every], site)
    task_page = (site / "tasks" / "dr_a.html").read_text()
    row = re.search(r"<tr[^>]*>(?:(?!</tr>).)*>m5<(?:(?!</tr>).)*</tr>", task_page, re.S).group(0)
    assert "badge-no_answers" in row and 'title="not ranked: no answers' in row
    (cells,) = [cells for _attrs, cells in tables(site / "tasks" / "dr_a.html")["ranking"]
                if "m5" in cells[0][1]]
    assert [text for _value, text in cells[1:9]] == ["\u2014"] * 8  # no score, not 0.000 [0.000, 0.000]
    index = (site / "index.html").read_text()
    assert ">m5<" not in index.split('id="main-table"')[1].split("</table>")[0]
    assert "m5" not in (site / "data" / "ranks.csv").read_text()


def test_the_rank_pages_rank_the_lines_the_main_table_ranks(every, tmp_path):
    results = tmp_path / "results"
    shutil.copytree(every, results)
    low = [line(model="m7", family="mllm", method="prompt", task=t, dataset="a", target=t.split("_")[0],
                n_answered=50, coverage=0.5, metrics={"auroc": 0.99}) for t in ("dr_a", "glaucoma_a")]
    write_lines(results / "m7" / "results.jsonl", low)
    for t in ("dr_a", "glaucoma_a"):
        rows = [{**r, "score": 0.99 if r["label"] else 0.01} for r in sample_rows(specs()[0])]
        write_lines(results / "m7" / "samples" / f"{t}.prompt.jsonl", rows)
    build_site([results], tmp_path / "site")
    main_rows = tables(tmp_path / "site" / "index.html")["main-table"]
    in_main = {cells[0][0] for _attrs, cells in main_rows if cells}
    ranked = list(csv.DictReader(io.StringIO((tmp_path / "site" / "data" / "ranks.csv").read_text())))
    overall = {r["model"] for r in ranked if r["scope"] in ("overall", "untrained:overall")}
    assert overall == in_main and not any("m7" in m or "m5" in m or "m6" in m for m in overall)
    pairs = (tmp_path / "site" / "data" / "pairwise.csv").read_text()
    assert "m7" not in pairs and "m5" not in pairs and "m6" not in pairs


def platt_folder(root):
    """One probe whose validation scores rank the classes the wrong way round: Platt's slope comes out negative."""
    spec = specs()[0]
    rows = sample_rows(spec)
    rows = [{**r, "score": round(1 - r["score"], 6)} if r["split"] == "val" else r for r in rows]
    write_lines(root / "m1" / "samples" / "dr_a.linear_probe.jsonl", rows)
    write_lines(root / "m1" / "results.jsonl", [results_line(spec, rows)])
    return root


def test_a_reversing_platt_map_is_flagged_in_the_table_and_the_csv(tmp_path):
    results = platt_folder(tmp_path / "results")
    assert main(["report", "recalibration", str(results), "--csv", str(tmp_path / "r.csv")]) == 0
    rows = list(csv.DictReader(io.StringIO((tmp_path / "r.csv").read_text())))
    platt = next(r for r in rows if r["scaling"] == "platt")
    temperature = next(r for r in rows if r["scaling"] == "temperature")
    assert float(platt["parameters"].split()[0][2:]) < 0
    assert platt["flags"] == "negative slope; AUROC changed" and temperature["flags"] == ""
    assert abs(float(platt["auroc_recalibrated"]) - (1 - float(platt["auroc"]))) < 1e-9
    build_site([results], tmp_path / "site")
    page = (tmp_path / "site" / "recalibration.html").read_text()
    assert page.count('class="is-flagged"') == 1 and "negative slope (1 row(s))" in page


def test_a_report_never_writes_over_a_file_it_reads(every, tmp_path, capsys):
    results = tmp_path / "results"
    shutil.copytree(every, results)
    target = results / "m1" / "results.jsonl"
    before = target.read_bytes()
    sample = results / "m1" / "samples" / "dr_a.linear_probe.jsonl"
    for argv in (["--json", str(target)], ["--csv", str(sample)], ["--json", str(tmp_path / "x"), "--csv",
                                                                     str(tmp_path / "x")]):
        assert main(["report", "ranks", str(results / "m1"), "--n-boot", "10", *argv]) == 2
        assert "nothing was written" in capsys.readouterr().err
    assert target.read_bytes() == before and not (tmp_path / "x").exists()
    assert sample.read_text().count("\n") == 64


def test_a_site_build_never_clears_the_results_it_reads(every, tmp_path, capsys):
    site = tmp_path / "site"
    build_site([every], site)
    inside = site / "samples" / "results"
    shutil.copytree(every, inside)
    assert main(["leaderboard", str(inside), "-o", str(site)]) == 2
    assert "a file this command reads" in capsys.readouterr().err
    assert (inside / "m1" / "results.jsonl").is_file()


def test_exported_names_never_collide(tmp_path, capsys):
    results = tmp_path / "results"
    write_lines(results / "a" / "results.jsonl", [line(model="lab model")])
    write_lines(results / "b" / "results.jsonl", [line(model="lab__model")])
    write_lines(results / "c" / "results.jsonl", [line(model="Lab__Model")])
    assert main(["report", "export", str(results), "-o", str(tmp_path / "lm")]) == 0
    out = capsys.readouterr().out
    assert "wrote 3 results files" in out and out.count("maps to the same folder name") == 2
    files = sorted((tmp_path / "lm").glob("*/results_*.json"))
    assert len({p.parent.name.casefold() for p in files}) == 3
    assert sorted(json.loads(p.read_text())["config"]["model"] for p in files) == ["Lab__Model", "lab model",
                                                                                 "lab__model"]


@pytest.mark.parametrize("argv,expected", [
    (["--n-boot", "1000000000000"], "argument --n-boot: expected 1 to 100000 resamples"),
    (["--n-boot", "-1"], "argument --n-boot: expected 1 to 100000 resamples"),
    (["--seed", "-1"], "argument --seed: expected a seed from 0 to 4294967295, got '-1'"),
    (["--seed", "1.5"], "argument --seed: expected a whole number"),
])
def test_report_options_have_the_run_options_ranges(tmp_path, argv, expected, capsys):
    with pytest.raises(SystemExit) as exit_:  # at parse time, before RESULTS is looked at
        main(["report", "ranks", str(tmp_path / "none"), *argv])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err


def test_notebook_rows_carry_answers_coverage_and_the_ranking_rule(every):
    import focus_eval

    frame = focus_eval.load_results(every)
    frame = frame[frame.conventions == ""].set_index(["model", "task"])
    assert {"n_answered", "coverage", "ranked", "set_aside"} <= set(frame.columns)
    mute = frame.loc[("m5", "dr_a")]
    assert mute["n_answered"] == 0 and mute["coverage"] == 0.0 and mute["accuracy"] != mute["accuracy"]  # NaN
    assert mute["flags"] == "no_answers" and not mute["ranked"] and mute["set_aside"].startswith("no answers")
    old = frame.loc[("m6", "dr_a")]
    assert "version_mismatch" in old["flags"] and not old["ranked"]
    talker = frame.loc[("m3", "dr_a")]
    assert talker["n_answered"] == 40 and talker["coverage"] == 1.0 and talker["ranked"]
    assert frame.loc[("m1", "dr_a")]["n_answered"] == 40  # a probe's scored rows
    from focus_eval.notebook import load_results

    low = load_results(every, coverage_floor=1.0)
    assert low[(low.model == "m3") & (low.task == "dr_a")]["ranked"].all()  # coverage 1.0 is not below 1.0


def test_trackers_log_answers_and_coverage_and_no_score_without_answers(every):
    from focus_eval.runner.trackers import unit_metrics

    lines = [json.loads(x) for x in (every / "m5" / "results.jsonl").read_text().splitlines()]
    logged = unit_metrics(lines[0])
    assert logged["n_answered"] == 0 and logged["coverage"] == 0.0 and "accuracy" not in logged
    talker = unit_metrics(json.loads((every / "m3" / "results.jsonl").read_text().splitlines()[0]))
    assert talker["n_answered"] == 40 and talker["coverage"] == 1.0 and "auroc" in talker


def test_configurations_without_a_shared_scored_image_are_not_ranked(tmp_path):
    """Two configurations whose sample files share no image with a score: no rank 1 for both, and the notes say
    why (not only how many images were dropped)."""
    spec = specs()[0]
    for model, prefix in (("m1", "a"), ("m2", "b")):
        rows = [{**r, "image_id": prefix + r["image_id"]} for r in sample_rows(spec)]
        write_lines(tmp_path / model / "samples" / "dr_a.linear_probe.jsonl", rows)
        write_lines(tmp_path / model / "results.jsonl", [{**results_line(spec, rows), "model": model}])
    table = ANALYSES.get("ranks").compute(collect_results([tmp_path]), OPTIONS)
    assert table.rows == []
    assert any("no image of both classes scored by every configuration: dr_a" in n for n in table.notes)


def test_the_operating_points_page_leaves_out_the_lines_of_fragility_runs(every, tmp_path):
    site = tmp_path / "site"
    build_site([every], site)
    points = list(csv.DictReader(io.StringIO((site / "data" / "operating_points.csv").read_text())))
    assert points and {(r["task"], r["source_task"]) for r in points} <= {
        (a, b) for a in ("dr_a", "glaucoma_a") for b in ("dr_a", "glaucoma_a")}
    shown = {cells[1][1] for _attrs, cells in tables(site / "operating-points.html")["operating-table"]}
    assert shown and not any("@" in task for task in shown)
    variants = [p for p in (site / "tasks").glob("*.html") if p.name.startswith(("dr_a-", "glaucoma_a-"))]
    assert len(variants) == 6  # the corruption, label budget, label rule and paraphrase lines have task pages
    assert not any("task-operating" in tables(p) for p in variants)
    page = (site / "operating-points.html").read_text()
    for variant in ("dr_a@blur3", "dr_a@train0.5-s1", "dr_a@severe", "glaucoma_a@plain"):
        assert f"on {variant} (" in page  # named among the lines left out, with the variant
    assert "a variant of its task, compared on the fragility reports" in page

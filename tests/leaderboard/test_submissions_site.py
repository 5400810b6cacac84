"""``focus-eval leaderboard`` over a results folder of one's own and two groups' bundles, one of them tampered: the
command names each bundle and prints the verdict counts; the same configuration from two submitters is two rows,
each the mean of its own lines, never averaged together, and their agreement is on the submissions page; the
tampered lines are shown with their badge and reasons and ranked nowhere (main table, rank intervals, pairwise,
operating points, task ranks, agreement); ``--include-unverified`` ranks them, badge kept, and ``--verify`` verifies
one's own folder too. A refused bundle, or one submitter's line twice, stops the build; a submitter's name is text on
every page, never markup, a path or a spreadsheet formula."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
from contextlib import redirect_stdout
from statistics import mean

import pytest
from helpers.leaderboard_data import HOSTILE, tables
from helpers.records import synthetic_root
from helpers.submissions import CLINIC_A, CLINIC_B, DATA, TASKS, group_submissions

from focus_eval.cli import main
from focus_eval.leaderboard import build_site
from focus_eval.results.bundle import write_bundle
from focus_eval.results.collect import discover


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return synthetic_root(tmp_path_factory, "data", **DATA)


@pytest.fixture(scope="module")
def sources(tmp_path_factory, data_root, index):
    return group_submissions(tmp_path_factory.mktemp("submissions"), data_root, index)


def build(tmp_path_factory, sources, data_root, *options):
    site = tmp_path_factory.mktemp("site") / "site"
    printed = io.StringIO()
    with redirect_stdout(printed):
        assert main(["leaderboard", *map(str, sources.paths), "-o", str(site), "--data-root", str(data_root),
                     *options]) == 0
    return site, printed.getvalue()


@pytest.fixture(scope="module")
def default(tmp_path_factory, sources, data_root):
    return build(tmp_path_factory, sources, data_root)


@pytest.fixture(scope="module")
def counted(tmp_path_factory, sources, data_root):
    return build(tmp_path_factory, sources, data_root, "--verify", "--include-unverified")


def rows(site, name):
    return list(csv.DictReader(io.StringIO((site / "data" / name).read_text(encoding="utf-8"))))


def test_the_command_names_each_bundle_and_prints_the_verdict_counts(default, counted, sources):
    _, printed = default
    for folder, who in ((sources.clinic_a, CLINIC_A), (sources.clinic_b, CLINIC_B)):
        assert f"bundle {folder} from {who}: checked on arrival, digest " in printed
    assert ("verified 9 line(s): 6 verified, 3 mismatch, 0 unverifiable; the 3 not verified are marked and ranked "
            "nowhere (--include-unverified ranks them)") in printed
    assert ("verified 15 line(s): 12 verified, 3 mismatch, 0 unverifiable; the 3 not verified are ranked with the "
            "others (--include-unverified)") in counted[1]


def task_aurocs(results_file):
    lines = [json.loads(x) for x in results_file.read_text().splitlines()]
    return [x["metrics"]["auroc"] for x in lines if x.get("kind") != "group"]


def test_one_configuration_from_two_submitters_is_two_rows_never_averaged(default, sources):
    site, _ = default
    ranked = {(r["model"], r["submitter"]): r for r in rows(site, "main.csv") if r["rank"]}
    assert set(ranked) == {(m, who) for m in ("fake-model", "other-model") for who in ("", CLINIC_A)}
    for model in ("fake-model", "other-model"):
        own = mean(task_aurocs(sources.own / model / "results.jsonl"))
        theirs = mean(task_aurocs(sources.clinic_a / "results" / model / "results.jsonl"))
        assert own != theirs
        assert float(ranked[(model, "")]["overall"]) == pytest.approx(own)
        assert float(ranked[(model, CLINIC_A)]["overall"]) == pytest.approx(theirs)
        assert ranked[(model, "")]["verification"] == "" and ranked[(model, CLINIC_A)]["verification"] == "verified"
    assert {(r["model"], r["submitter"]) for r in rows(site, "main-table.csv")} == set(ranked)
    agreement = {(r["model"], r["task"]): r for r in rows(site, "agreement.csv")}
    assert set(agreement) == {(m, t) for m in ("fake-model", "other-model") for t in TASKS}
    for (model, _task), r in agreement.items():  # own runs (no submitter) against Clinic A's
        assert (r["submitter_a"], r["submitter_b"], r["verification_b"]) == ("", CLINIC_A, "verified")
        # fake-model's scores are close to the own run's; other-model's are perfect where the own run's are chance
        assert r["agreement"] == {"fake-model": "agree", "other-model": "differ"}[model]


def test_tampered_lines_are_ranked_nowhere_and_shown_with_their_badge(default):
    site, _ = default
    main_rows = rows(site, "main.csv")
    assert not any(r["rank"] for r in main_rows if r["submitter"] == CLINIC_B)
    left = [r for r in main_rows if r["submitter"] == CLINIC_B]
    assert sorted(r["task"] for r in left) == sorted(TASKS)
    assert all(r["verification"] == "mismatch" and r["left_out"].startswith(
        "unverified: mismatch: metrics.auroc: reported 1, recomputed 0.") for r in left)
    for name in ("ranks.csv", "pairwise.csv", "operating_points.csv", "agreement.csv", "main-table.csv"):
        assert CLINIC_B not in (site / "data" / name).read_text(encoding="utf-8"), name
    for task in TASKS:
        ranking = tables(site / "tasks" / f"{task}.html")["ranking"]
        (row,) = [(attrs, cells) for attrs, cells in ranking if cells[1][0] == CLINIC_B]
        assert row[0]["class"] == "is-unverified" and row[1][0][1].startswith("\u2014 fake-model")
        page = (site / "tasks" / f"{task}.html").read_text(encoding="utf-8")
        assert 'title="not ranked: unverified' in page and 'class="badge badge-unverified"' in page
    judged = {(r["submitter"], r["task"]): r["verification"] for r in json.loads(
        (site / "data" / "results.json").read_text(encoding="utf-8"))}
    assert judged[(CLINIC_B, TASKS[0])] == "mismatch" and judged[(CLINIC_A, TASKS[0])] == "verified"
    assert judged[(None, TASKS[0])] is None


def test_the_submissions_page_says_who_sent_what_and_why_a_line_is_not_verified(default, sources):
    site, _ = default
    found = tables(site / "submissions.html")
    by_who = {cells[0][1]: [text for _value, text in cells[1:]] for _attrs, cells in found["submitters-table"]}
    # bundle digest, bundled, lines, verified, mismatch, unverifiable, not verified (task and group lines)
    assert {who: cells[2:] for who, cells in by_who.items()} == {
        CLINIC_A: ["6", "6", "0", "0", "0"], CLINIC_B: ["3", "0", "3", "0", "0"],
        "results folders of the site's own": ["6", "0", "0", "0", "6"]}
    for who, folder in ((CLINIC_A, sources.clinic_a), (CLINIC_B, sources.clinic_b)):
        assert by_who[who][0] == hashlib.sha256((folder / "bundle.json").read_bytes()).hexdigest()[:16]
    listed = [[text for _value, text in cells] for _attrs, cells in found["not-verified-table"]]
    assert sorted(r[0] for r in listed) == sorted([*TASKS, "group:synth_desktop"])
    assert all(r[1] == CLINIC_B and r[3] == "mismatch" for r in listed)
    assert any(r[4].startswith("metrics.auroc: reported 1, recomputed 0.") for r in listed)
    assert "ranked nowhere" in (site / "submissions.html").read_text(encoding="utf-8")


def test_include_unverified_ranks_the_tampered_lines_and_keeps_their_badge(counted):
    site, _ = counted
    ranked = {(r["model"], r["submitter"]): r for r in rows(site, "main.csv") if r["rank"]}
    assert ranked[("fake-model", CLINIC_B)]["verification"] == "mismatch"
    assert ranked[("fake-model", "")]["verification"] == "verified"  # --verify: one's own lines too
    assert not [r for r in rows(site, "main.csv") if not r["rank"]]
    assert any(r["model"].endswith(f"from {CLINIC_B}") for r in rows(site, "ranks.csv"))
    assert any(CLINIC_B in r["model_a"] + r["model_b"] for r in rows(site, "pairwise.csv"))
    assert CLINIC_B in {r["submitter_b"] for r in rows(site, "agreement.csv")}
    ranking = tables(site / "tasks" / f"{TASKS[0]}.html")["ranking"]
    (cells,) = [cells for _attrs, cells in ranking if cells[1][0] == CLINIC_B]
    assert cells[0][1].split()[0].isdigit()
    assert 'class="badge badge-unverified"' in (site / "tasks" / f"{TASKS[0]}.html").read_text(encoding="utf-8")
    page = (site / "submissions.html").read_text(encoding="utf-8")
    assert "ranked with the others" in page
    by_who = {cells[0][1]: [text for _value, text in cells[3:]] for _attrs, cells in
              tables(site / "submissions.html")["submitters-table"]}
    assert by_who["results folders of the site's own"] == ["6", "6", "0", "0", "0"]


def test_a_refused_bundle_or_one_submitters_line_twice_stops_the_build(sources, data_root, tmp_path, capsys):
    changed = tmp_path / "changed"
    shutil.copytree(sources.clinic_b, changed)
    (changed / "results" / "fake-model" / "notes.txt").write_text("added after bundling\n")
    assert main(["leaderboard", str(sources.own), str(changed), "-o", str(tmp_path / "site")]) == 2
    assert (f"{changed}: bundle refused (1 problem(s)): results/fake-model/notes.txt: not in bundle.json's digest "
            "list") in capsys.readouterr().err
    again = tmp_path / "again"  # a second bundle naming the same submitter, with the same lines
    shutil.copytree(sources.clinic_a, again)
    assert main(["leaderboard", str(sources.clinic_a), str(again), "-o", str(tmp_path / "site")]) == 2
    assert f"duplicate results line for model 'fake-model', method 'linear_probe', submitter '{CLINIC_A}'" in \
        capsys.readouterr().err
    assert not (tmp_path / "site").exists()


def test_a_hostile_submitter_name_is_text_on_every_page_and_no_path(sources, data_root, tmp_path):
    name = f'=HYPERLINK("x") {HOSTILE} ../../outside'
    hostile = tmp_path / "hostile"
    write_bundle(discover([sources.clinic_a]).results_files, hostile, name)
    report = build_site([hostile], tmp_path / "site", data_root=data_root)
    assert report.verdicts["verified"] == 6
    site = report.out_dir.resolve()
    files = [p for p in site.rglob("*") if p.is_file()]
    assert all(p.resolve().is_relative_to(site) for p in files) and not (tmp_path / "outside").exists()
    assert not [p for p in files if p.suffix == ".html" and HOSTILE in p.read_text(encoding="utf-8")]
    assert any("&lt;script&gt;" in p.read_text(encoding="utf-8") for p in files if p.name == "submissions.html")
    assert {r["submitter"] for r in rows(site, "main.csv")} == {"'" + name}  # no formula in a spreadsheet


def test_a_report_reads_bundles_as_the_leaderboard_does(sources, data_root, tmp_path, capsys):
    """``report ranks`` over the same folders: the tampered bundle's lines verified, named in the verdict counts and
    ranked nowhere; ``--include-unverified`` ranks them. ``report export`` transcribes every line (it ranks none),
    each with its verification state: the tampered ones marked mismatch."""
    folders = [str(p) for p in sources.paths]

    def ranked(*options) -> set[str]:
        out = tmp_path / f"ranks{len(options)}.json"
        assert main(["report", "ranks", *folders, "--data-root", str(data_root), "--json", str(out), *options]) == 0
        return {row["model"] for row in json.loads(out.read_text())["rows"]}

    assert not any(CLINIC_B in model for model in ranked())
    assert "mismatch" in capsys.readouterr().out
    assert any(CLINIC_B in model for model in ranked("--include-unverified"))
    exported = tmp_path / "lm-eval"
    assert main(["report", "export", *folders, "--data-root", str(data_root), "-o", str(exported)]) == 0
    assert "mismatch" in capsys.readouterr().out
    states = {}
    for path in exported.rglob("results_*.json"):
        for config in json.loads(path.read_text(encoding="utf-8"))["configs"].values():
            states.setdefault(config["metadata"]["submitter"], set()).add(config["metadata"]["verification"])
    assert states[CLINIC_B] == {"mismatch"} and states[CLINIC_A] == {"verified"}

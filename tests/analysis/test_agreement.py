"""The agreement of submitters: the same configuration on the same task from several submitters is two or more
lines, set side by side in pairs and never averaged; two lines agree when the difference of their scores is at most
the root of the sum of their squared interval half-widths, and differ otherwise; a line with no score or no interval
gets no verdict; lines that nothing may be compared with (an unverified line among them, unless counted) are left
out and named."""

from __future__ import annotations

import math
import shutil
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from focus_eval.analysis import ANALYSES
from focus_eval.analysis.agreement import AGREE, DIFFER, NO_INTERVAL, NO_SCORE, agree, agreement, agreement_table
from focus_eval.cli import main
from focus_eval.leaderboard.conventions import collect_results
from focus_eval.results.bundle import write_bundle
from focus_eval.results.verdict import MISMATCH, Finding, LineVerdict
from helpers.variant_lines import PLAIN, SUBMITTED, SUBMITTER, results_line, sample_rows, specs, variant_paths, \
    write_variants

UNIT = st.floats(0, 1, allow_nan=False)
HALF = st.floats(0, 0.5, allow_nan=False)


def interval(value: float, half: float) -> list[float]:
    return [value - half, value + half]


def test_scores_within_their_intervals_agree_and_scores_apart_differ():
    difference, margin, verdict = agree(0.80, [0.75, 0.85], 0.85, [0.80, 0.90])
    assert (verdict, difference, margin) == (AGREE, pytest.approx(-0.05), pytest.approx(math.sqrt(2) * 0.05))
    assert agree(0.80, [0.78, 0.82], 0.90, [0.88, 0.92])[2] == DIFFER
    assert agree(0.90, [0.87, 0.93], 0.85, [0.81, 0.89])[2] == AGREE  # exactly on the margin (0.03, 0.04 -> 0.05)
    assert agree(0.91, [0.88, 0.94], 0.85, [0.81, 0.89])[2] == DIFFER
    assert agree(0.7, [0.7, 0.7], 0.7, [0.7, 0.7]) == (0.0, 0.0, AGREE)  # one number twice


@given(UNIT, HALF, UNIT, HALF)
def test_the_rule_is_the_interval_of_the_difference_and_does_not_depend_on_the_order(a, half_a, b, half_b):
    difference, margin, verdict = agree(a, interval(a, half_a), b, interval(b, half_b))
    assert difference == pytest.approx(a - b) and margin == pytest.approx(math.hypot(half_a, half_b))
    if abs(a - b) < margin - 1e-9:
        assert verdict == AGREE
    elif abs(a - b) > margin + 1e-9:
        assert verdict == DIFFER
    swapped = agree(b, interval(b, half_b), a, interval(a, half_a))
    assert swapped[2] == verdict and swapped[0] == pytest.approx(-difference) and swapped[1] == margin


@given(st.one_of(st.none(), UNIT), st.sampled_from([None, [], [None, None], [0.5, None], [0.4]]), UNIT)
def test_a_missing_score_or_interval_gives_no_verdict(value, ci, other):
    difference, margin, verdict = agree(value, ci, other, interval(other, 0.05))
    if value is None:
        assert (difference, margin, verdict) == (None, None, NO_SCORE)
    else:
        assert (difference, margin, verdict) == (pytest.approx(value - other), None, NO_INTERVAL)
    assert agree(other, interval(other, 0.05), None, [0.1, 0.2])[2] == NO_SCORE


@pytest.fixture(scope="module")
def submitted(tmp_path_factory):
    """The plain lines (m1 to m4 on dr_a and glaucoma_a), Clinic B's bundle of m1 (close to the plain m1) and m2
    (far below the plain m2), and Clinic C's bundle of the same lines as Clinic B's."""
    root = tmp_path_factory.mktemp("agreement") / "results"
    write_variants(root, (PLAIN, SUBMITTED))
    third = root.with_name("clinic-c")
    write_bundle(sorted(root.with_name(f"{root.name}-staging").glob("*/results.jsonl")), third, "Clinic C")
    return [*variant_paths(root), third]


def reported(kind: str, model: str, task: str) -> float:
    spec = next(s for s in specs() if (s.kind, s.model, s.task) == (kind, model, task))
    return results_line(spec, sample_rows(spec))["metrics"]["auroc"]


def test_one_configuration_from_three_submitters_is_three_lines_in_three_pairs(submitted):
    found = agreement(collect_results(submitted).entries)
    pairs = {(p.a.model, p.a.line.task, p.a.submitter, p.b.submitter): p for p in found.pairs}
    sources = [(None, SUBMITTER), (None, "Clinic C"), (SUBMITTER, "Clinic C")]
    assert set(pairs) == {(m, t, a, b) for m in ("m1", "m2") for t in ("dr_a", "glaucoma_a") for a, b in sources}
    assert found.groups == 4
    for (model, task, a, b), p in pairs.items():  # each side is its own line's number, never a mean of several
        assert p.a.metric("auroc") == reported(PLAIN if a is None else SUBMITTED, model, task)
        assert p.b.metric("auroc") == reported(SUBMITTED, model, task)
        assert p.metric == "auroc" and p.a.identity.without("submitter") == p.b.identity.without("submitter")
    verdicts = {(m, t, a, b): p.verdict for (m, t, a, b), p in pairs.items()}
    # m1 from Clinic B separates the classes as the plain m1 does; m2 from Clinic B far less than the plain m2
    assert {v for (m, _t, a, _b), v in verdicts.items() if m == "m1" or a == SUBMITTER} == {AGREE}
    assert {v for (m, _t, a, _b), v in verdicts.items() if m == "m2" and a is None} == {DIFFER}
    assert pairs[("m1", "dr_a", SUBMITTER, "Clinic C")].difference == 0.0
    assert "8 of 12 pair(s) of lines agree, 4 differ" in found.notes
    alone = next(n for n in found.notes if "no other line that differs from it in submitter only" in n)
    assert "left out 4 line(s)" in alone and "m3 \u00b7 prompt on dr_a" in alone and "m4 \u00b7 zero_shot" in alone


def test_the_table_shows_both_lines_of_each_pair_and_the_rule(submitted):
    table = ANALYSES.get("agreement").compute(collect_results(submitted))
    rows = [dict(zip(table.columns, r)) for r in table.rows]
    assert len(rows) == 12 and {r["agreement"] for r in rows} == {AGREE, DIFFER}
    row = next(r for r in rows if (r["model"], r["task"], r["submitter_a"]) == ("m2", "dr_a", None)
               and r["submitter_b"] == SUBMITTER)
    assert (row["value_a"], row["value_b"]) == (reported(PLAIN, "m2", "dr_a"), reported(SUBMITTED, "m2", "dr_a"))
    assert row["difference"] == pytest.approx(row["value_a"] - row["value_b"])
    assert row["margin"] == pytest.approx(math.hypot((row["ci_high_a"] - row["ci_low_a"]) / 2,
                                                     (row["ci_high_b"] - row["ci_low_b"]) / 2))
    assert (row["verification_a"], row["verification_b"]) == (None, None)  # nothing verified them
    assert table.notes[0].startswith("two lines agree when the difference of their scores is at most")


def mismatch(entry):
    verdict = LineVerdict(str(entry.source), entry.row, entry.model, entry.line.task, entry.line.method,
                          submitter=entry.submitter,
                          findings=[Finding(MISMATCH, "scores", "metrics.auroc: reported 1, recomputed 0.8")])
    return replace(entry, verdict=verdict)


def test_an_unverified_line_is_left_out_and_named_unless_counted(submitted):
    entries = [mismatch(e) if e.submitter == SUBMITTER else e for e in collect_results(submitted).entries]
    found = agreement(entries)
    assert found.pairs and all(SUBMITTER not in (p.a.submitter, p.b.submitter) for p in found.pairs)
    note = next(n for n in found.notes if n.startswith("left out 4 line(s), unverified:"))
    assert f"m1 \u00b7 linear_probe from {SUBMITTER} on dr_a (mismatch: metrics.auroc: reported 1" in note
    counted = agreement([replace(e, rank_unverified=True) for e in entries])
    assert len(counted.pairs) == 12
    table = agreement_table(counted)
    states = {(r[table.columns.index("submitter_b")], r[table.columns.index("verification_b")]) for r in table.rows}
    assert (SUBMITTER, "mismatch") in states


def test_the_report_says_when_no_configuration_comes_from_two_submitters(submitted, tmp_path, capsys):
    own = tmp_path / "own"
    shutil.copytree(submitted[0], own)
    assert main(["report", "agreement", str(own)]) == 2
    assert "no configuration has lines on one task from two submitters" in capsys.readouterr().err

"""Published files say nothing impossible: a results line with a metric outside its range, an inverted interval
or counts that cannot be is refused naming its file and line, and no CSV cell can start a row or a formula."""

import csv
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from focus_eval.analysis.base import Table
from focus_eval.errors import DataError
from focus_eval.results.collect import read_entries
from helpers.leaderboard_data import write_results


def _conventions(extra, limited):
    return ()


@pytest.fixture
def line(tmp_path):
    write_results(tmp_path)
    path = next(tmp_path.rglob("results.jsonl"))
    first = json.loads(path.read_text().splitlines()[0])
    assert read_entries(path, _conventions)  # the fixture itself is possible
    return path, first


@pytest.mark.parametrize("change, says", [
    (lambda r: r["metrics"].update(auroc=1.2), "metrics.auroc is 1.2, outside"),
    (lambda r: r["metrics"].update(ece=-0.1), "metrics.ece is -0.1"),
    (lambda r: r.update(ci={**(r.get("ci") or {}), "auroc": [0.9, 0.7]}), "low end is above its high end"),
    (lambda r: r.update(ci={**(r.get("ci") or {}), "auroc": [0.5, 1.3]}), "outside the range auroc can take"),
    (lambda r: r.update(n_pos=r["n"] + 1), "more than the"),
    (lambda r: r.update(n=-4), "a count is a whole number"),
    (lambda r: r.update(n=10.5), "a count is a whole number"),
    (lambda r: r.update(n=float("inf")), "a count is a whole number"),
    (lambda r: r.update(n_pos=float("nan")), "n_pos"),
    (lambda r: r.update(coverage=1.5), "'coverage' is 1.5"),
    (lambda r: r.update(coverage="all"), "coverage"),
])
def test_impossible_values_are_refused_naming_file_and_line(tmp_path, line, change, says):
    _, row = line
    change(row)
    bad = tmp_path / "bad" / "results.jsonl"
    bad.parent.mkdir()
    bad.write_text(json.dumps(row) + "\n")
    with pytest.raises(DataError) as caught:
        read_entries(bad, _conventions)
    assert says in str(caught.value) and str(bad) in str(caught.value) and "1" in str(caught.value)


def test_a_carriage_return_in_a_name_cannot_start_a_row_or_a_formula():
    table = Table(["model", "auroc"])
    table.add("evil\r=HYPERLINK(\"http://x\")", 0.5)
    table.add("\n@SUM(1)", 0.6)
    table.add(" =1+1", 0.7)
    text = table.to_csv()
    assert "\r" not in text and text.count("\n") == 4
    cells = [row[0] for row in csv.reader(io.StringIO(text))][1:]
    assert cells[0] == "evil =HYPERLINK(\"http://x\")"
    assert all(not c.lstrip().startswith(("=", "+", "-", "@")) for c in cells)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=30), min_size=1, max_size=5))
def test_any_text_cell_stays_in_its_row_and_never_runs(names):
    table = Table(["name", "value"])
    for name in names:
        table.add(name, 1.0)
    text = table.to_csv()
    assert not any(ch in text for ch in "\r\x00\x0b\x0c")
    rows = list(csv.reader(io.StringIO(text)))
    assert len(rows) == len(names) + 1 and all(len(r) == 2 for r in rows)
    for row in rows[1:]:
        assert not row[0].lstrip().startswith(("=", "+", "-", "@"))

"""``focus-eval report`` tables fit the terminal: on 80 columns no printed line is wider (columns aligned where they
fit, else the first column as headings, else one block of ``column: value`` items per row), every row is still
printed, and ``--csv``/``--json`` keep the values in full."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys

import pytest
from helpers.paired_data import TASKS, write_paired
from hypothesis import given, settings
from hypothesis import strategies as st

from focus_eval.tables import render_wide

# long configuration and task names, as real presets and user datasets have them
MODELS = (("retfound-dinov2-shanghai", 2.0, "linear_probe"), ("medsiglip-448", 1.0, "zero_shot"),
          ("clinic-foundation-model-v2-large", 0.5, "linear_probe"))
LONG_TASKS = (*TASKS, ("referable_dr_clinic_screening_programme_2024", "clinic", "referable_dr", 120, 40))


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return write_paired(tmp_path_factory.mktemp("paired"), models=MODELS, tasks=LONG_TASKS)


def report(name: str, results, *extra: str, columns: int = 80) -> str:
    env = {**os.environ, "COLUMNS": str(columns)}
    done = subprocess.run([sys.executable, "-m", "focus_eval", "report", name, str(results), "--n-boot", "40",
                           *extra], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("name", ["ranks", "pairwise", "operating-points"])
def test_on_80_columns_no_report_line_is_wider_and_the_files_keep_every_value(name, results, tmp_path):
    out_csv, out_json = tmp_path / "t.csv", tmp_path / "t.json"
    text = report(name, results, "--csv", str(out_csv), "--json", str(out_json))
    printed = text.split("\nwrote ")[0]
    long = [line for line in printed.splitlines() if len(line) > 80]
    assert not long, f"{len(long)} line(s) over 80 characters: {long[:2]}"
    rows = list(csv.DictReader(out_csv.open(encoding="utf-8")))
    assert rows and len(json.loads(out_json.read_text())["rows"]) == len(rows)
    # every configuration and task is printed whole, and each number as the table rounds it
    for row in rows:
        for column, value in row.items():
            if value and value[0].isalpha() and value not in ("true", "false"):
                assert value in printed.replace("\n    ", " ").replace("\n  ", " "), (column, value)
    numbers = [float(v) for row in rows for v in row.values() if v and v[0].isdigit() and "." in v]
    if name != "ranks":  # (the ranks' shares of resamples have no more digits than the screen shows)
        assert any(len(f"{v!r}") > 5 for v in numbers)  # the files have more digits than the screen
    assert all(f"{v:.3f}" in printed for v in numbers)


def test_a_wide_terminal_keeps_the_aligned_table(results):
    text = report("ranks", results, columns=200)
    lines = text.splitlines()
    assert lines[1].split() == ["scope", "model", "rank", "rank_low", "rank_high", "p_first"]
    assert set(lines[2].replace(" ", "")) == {"-"}


cells = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False), st.integers(),
                  st.text(st.characters(blacklist_categories=("Cs",), max_codepoint=0x2FF), max_size=60))


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=1, max_value=9).flatmap(
    lambda n: st.tuples(st.lists(st.text(st.characters(max_codepoint=0x7E, min_codepoint=0x21), min_size=1,
                                         max_size=14), min_size=n, max_size=n),
                        st.lists(st.lists(cells, min_size=n, max_size=n), max_size=8))),
       st.integers(min_value=20, max_value=140))
def test_every_layout_fits_its_width_and_keeps_every_word(table, columns):
    header, rows = table
    text = render_wide(header, rows, max_width=columns)
    assert all(len(line) <= columns for line in text.splitlines())
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", text)  # no escape sequence or tab reaches the terminal
    flat = "".join(text.split())
    for row in rows:
        for value in row:
            shown = "-" if value is None else ("yes" if value else "no") if isinstance(value, bool) else str(value)
            assert "".join(re.sub(r"[\x00-\x1f\x7f]", " ", shown).split()) in flat

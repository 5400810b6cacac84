"""Implausible metadata never enters silently: ages outside (0, 120] years and non-finite ages become missing,
counted, with a warning naming the label file and the rows (hypothesis over written ages, through the manifest
reader's real row loop); a label file that gives one column name twice is an error naming it and the file."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from focus_eval.data.cells import plausible_age
from focus_eval.data.manifests import register_manifests
from focus_eval.data.registry import load_dataset
from focus_eval.data.tables import read_csv_rows
from focus_eval.errors import DataError
from helpers.open_fixtures import clean_cards, manifest_rows, write_clinic, write_manifest  # noqa: F401

pytestmark = pytest.mark.usefixtures("clean_cards")
N_PATIENTS = 6


@pytest.fixture(scope="module")
def clinic(tmp_path_factory):
    return write_clinic(tmp_path_factory.mktemp("ages") / "clinic", manifest_rows(n_patients=N_PATIENTS))


AGES = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-200, 400),
                 st.sampled_from([-3, 0, 150, "1e3", 0.5, 120, 120.5, "nan", "inf", "-inf", 45]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ages=st.lists(AGES, min_size=2 * N_PATIENTS, max_size=2 * N_PATIENTS))
def test_implausible_ages_become_missing_with_a_count_and_the_rows_named(clinic, tmp_path, ages):
    rows = manifest_rows(n_patients=N_PATIENTS)
    for row, age in zip(rows, ages):
        row["age"] = repr(age) if isinstance(age, float) else str(age)
    write_manifest(clinic / "manifest.csv", rows)
    register_manifests(None, [f"clinic={clinic}"])
    load = load_dataset("clinic", tmp_path)
    # a "nan" cell is the label file's own missing marker, not an implausible age
    written = {r["image"].rsplit(".", 1)[0]: None if r["age"] == "nan" else float(r["age"]) for r in rows}
    bad_lines = [i + 2 for i, r in enumerate(rows) if r["age"] != "nan" and not plausible_age(float(r["age"]))]
    for record in load.records:
        value = written[record.image_id]
        if value is not None and math.isfinite(value) and 0 < value <= 120:
            assert record.age == value
        else:
            assert record.age is None
    assert all(r.age is None or 0 < r.age <= 120 for r in load.records)
    warnings = [w for w in load.warnings if "implausible age" in w]
    if not bad_lines:
        assert warnings == [] and "implausible_ages" not in load.metadata
        return
    assert load.metadata["implausible_ages"] == len(bad_lines)
    (warning,) = warnings
    assert str(clinic / "manifest.csv") in warning and f"{len(bad_lines)} implausible age(s)" in warning
    assert all(f"row {line} " in warning for line in bad_lines[:10])


def test_the_ages_of_the_report_are_read_as_missing(clinic, tmp_path):
    rows = manifest_rows(n_patients=N_PATIENTS)
    for row, age in zip(rows, ["-3", "0", "150", "1e3", "45", "120", "0.5"]):
        row["age"] = age
    write_manifest(clinic / "manifest.csv", rows)
    register_manifests(None, [f"clinic={clinic}"])
    load = load_dataset("clinic", tmp_path)
    ages = {r.image_id: r.age for r in load.records}
    assert [ages[r["image"].rsplit(".", 1)[0]] for r in rows[:7]] == [None, None, None, None, 45.0, 120.0, 0.5]
    (warning,) = [w for w in load.warnings if "implausible age" in w]
    assert "row 2 (-3), row 3 (0), row 4 (150), row 5 (1000)" in warning


def test_a_column_name_given_twice_is_an_error_naming_it_and_the_file(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("image,age,dr_grade,age\na.png,40,0,400\n", encoding="utf-8")
    with pytest.raises(DataError) as caught:
        read_csv_rows(path)
    assert str(path) in str(caught.value) and "'age' in columns 2, 4" in str(caught.value)


def test_a_manifest_with_a_column_twice_stops_the_load(clinic, tmp_path):
    rows = manifest_rows(n_patients=N_PATIENTS)
    write_manifest(clinic / "manifest.csv", rows)
    text = (clinic / "manifest.csv").read_text().splitlines()
    text[0] += ",age"
    lines = [line + ("" if i == 0 else ",99") for i, line in enumerate(text)]
    (clinic / "manifest.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"manifest.csv, row 1: duplicated column name\(s\): 'age'"):
        register_manifests(None, [f"clinic={clinic}"])
        load_dataset("clinic", tmp_path)

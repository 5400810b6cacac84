"""``focus-eval datasets export`` writes every harmonized field the records carry: the FOCUS columns and one
column per FunBench field (laterality, dr_grade, abnormal, conditions, findings.<lesion>, ...), here on the
miniature raw layouts of DDR (grades and lesions) and BRSET (laterality, findings, conditions)."""

from __future__ import annotations

import csv
from functools import partial

from helpers import raw_layouts
from helpers.raw_layouts import raw_copy

from focus_eval.cli import main
from focus_eval.commands.datasets import EXPORT_COLUMNS
from focus_eval.data.registry import load_dataset
from focus_eval.synth import raw_brset, raw_ddr

solid = partial(raw_layouts.solid, green_blue=(9, 9))


def exported(tmp_path, name):
    out = tmp_path / f"{name}.csv"
    assert main(["datasets", "export", name, "--data-root", str(tmp_path), "-o", str(out)]) == 0
    with out.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return reader.fieldnames, {r["image_id"]: r for r in reader}


def test_ddr_export_has_the_dr_grade_and_a_column_per_finding(tmp_path):
    raw_copy(raw_ddr, tmp_path / "ddr", seed=7, image=solid)
    columns, rows = exported(tmp_path, "ddr")
    assert columns[:len(EXPORT_COLUMNS)] == list(EXPORT_COLUMNS)
    assert {"dr_grade", "modality", "findings.hemorrhage", "findings.microaneurysm", "findings.hard_exudate",
            "findings.cotton_wool_spot", "lesion_size.hemorrhage", "lesion_count.hemorrhage"} <= set(columns)
    load = load_dataset("ddr", tmp_path)
    for record in load.records:
        row = rows[record.image_id]
        assert row["dr_grade"] == ("" if record.dr_grade is None else str(record.dr_grade))
        for lesion, value in record.findings.items():
            assert row[f"findings.{lesion}"] == ("" if value is None else str(value))
    assert rows["grading/valid/20170411155036120"]["dr_grade"] == "5"  # the ungradable class, kept
    assert rows["lesion/test/007-3500-300"]["findings.microaneurysm"] == "1"


def test_brset_export_has_laterality_findings_and_conditions(tmp_path):
    raw_copy(raw_brset, tmp_path / "brset", seed=3, image=solid)
    columns, rows = exported(tmp_path, "brset")
    assert {"laterality", "dr_grade", "abnormal", "conditions", "findings.hemorrhage"} <= set(columns)
    load = load_dataset("brset", tmp_path)
    for record in load.records:
        row = rows[record.image_id]
        assert row["laterality"] == (record.laterality or "")
        assert row["abnormal"] == ("" if record.abnormal is None else str(record.abnormal))
        expected = "" if record.conditions is None else (";".join(record.conditions) or "none listed")
        assert row["conditions"] == expected
    assert {r["laterality"] for r in rows.values()} >= {"left", "right"}

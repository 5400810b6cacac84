"""``datasets check`` compares image contents: byte-identical images filed under different patients or in
different splits are a leakage warning naming the pairs, and a test image equal to a training image fails the
split check (the dataset is unusable, exit status 1). Before, nothing said so: the patient-grouped split and the
split check see ids and paths, not pictures."""

from __future__ import annotations

import json
import shutil
from itertools import combinations

import pytest
from helpers.open_fixtures import clean_cards, manifest_rows, write_clinic  # noqa: F401
from hypothesis import given, settings
from hypothesis import strategies as st

from focus_eval.cli import main
from focus_eval.data.duplicates import find_identical
from focus_eval.data.records import ImageRecord

pytestmark = pytest.mark.usefixtures("clean_cards")


def clinic(tmp_path, copies: dict[int, int], splits: dict[int, str] | None = None):
    """A manifest dataset of 12 patients (two eyes each) with an official split column; ``copies`` maps a row
    to the row whose image file it is overwritten with, byte for byte."""
    rows = manifest_rows(n_patients=12)
    for i, row in enumerate(rows):
        row["split"] = (splits or {}).get(i, "train" if i < 16 else "test")
    folder = write_clinic(tmp_path / "clinic", rows=rows,
                          card=open_card().replace("columns: {", "columns: {split: split, "))
    for target, source in copies.items():
        shutil.copyfile(folder / rows[source]["image"], folder / rows[target]["image"])
    return folder, rows


def open_card() -> str:
    from helpers.open_fixtures import CARD

    return CARD.format(manifest="manifest.csv")


def check(tmp_path, folder, capsys, *extra) -> tuple[int, dict]:
    status = main(["datasets", "check", "clinic", "--data-root", str(tmp_path), "--dataset-path",
                   f"clinic={folder}", "--json", *extra])
    (report,) = json.loads(capsys.readouterr().out)["datasets"]
    return status, report


def image_id(row: dict) -> str:
    return row["image"][:-4]


def test_a_test_image_identical_to_a_training_image_fails_the_check_naming_both(tmp_path, capsys):
    folder, rows = clinic(tmp_path, {20: 3})  # row 20 (test, patient 10) is row 3's picture (train, patient 1)
    status, report = check(tmp_path, folder, capsys)
    assert status == 1 and not report["usable"]
    assert report["split_check"].startswith("1 test image(s) byte-identical to a training image")
    assert f"{image_id(rows[3])} (patient {rows[3]['patient']}, train)" in report["split_check"]
    assert f"{image_id(rows[20])} (patient {rows[20]['patient']}, test)" in report["split_check"]
    assert report["identical_images"]["test_and_train"] == 1
    assert [[m["image_id"] for m in g] for g in report["identical_images"]["groups"]] == \
        [[image_id(rows[3]), image_id(rows[20])]]
    # the same images are fine without the content pass (which is what it adds)
    status, report = check(tmp_path, folder, capsys, "--no-content-check")
    assert status == 0 and report["split_check"] == "ok" and "identical_images" not in report


def test_identical_images_across_patients_in_one_split_are_a_warning_with_the_pairs(tmp_path, capsys):
    folder, rows = clinic(tmp_path, {5: 2, 7: 2})  # three patients' files, one picture, all train
    status, report = check(tmp_path, folder, capsys)
    assert status == 0 and report["usable"] and report["split_check"] == "ok"
    (warning,) = [w for w in report["warnings"] if "byte-identical" in w]
    assert warning.startswith("3 pair(s) of byte-identical images filed apart (3 across patients, 0 across splits")
    for a, b in combinations((2, 5, 7), 2):
        assert f"{image_id(rows[a])} (patient {rows[a]['patient']}, train) = {image_id(rows[b])}" in warning


def test_identical_images_across_validation_and_test_are_a_warning(tmp_path, capsys):
    splits = {i: "val" for i in range(16, 20)}
    folder, rows = clinic(tmp_path, {22: 17}, splits)
    status, report = check(tmp_path, folder, capsys)
    assert status == 0 and report["identical_images"]["across_splits"] == 1
    assert any("1 across splits" in w for w in report["warnings"])
    text = main(["datasets", "check", "clinic", "--data-root", str(tmp_path), "--dataset-path", f"clinic={folder}"])
    assert text == 0 and "byte-identical" in capsys.readouterr().out


def test_distinct_images_give_no_report(tmp_path, capsys):
    folder, _ = clinic(tmp_path, {})
    status, report = check(tmp_path, folder, capsys)
    assert status == 0 and report["identical_images"]["pairs"] == 0
    assert not any("byte-identical" in w for w in report["warnings"])


SPLITS = st.sampled_from(["train", "val", "test"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3), SPLITS), min_size=1, max_size=14))
def test_pairs_and_leakage_match_a_brute_force_count(images):
    """Any records (a content, a patient, a split each): every identical pair is found once, classified as
    a brute-force comparison says, and the error is raised exactly when a test and a training image match."""
    records = [ImageRecord("d", f"i{k}", f"p{patient}", path=None, relpath=f"i{k}.png", split=split)
               for k, (_, patient, split) in enumerate(images)]
    contents = {f"i{k}": str(c) for k, (c, _, _) in enumerate(images)}
    found = find_identical(records, digest=lambda r: contents[r.image_id])
    brute = [(a, b) for a, b in combinations(records, 2) if contents[a.image_id] == contents[b.image_id]]
    assert sorted((p.first.image_id, p.second.image_id) for p in found.pairs()) == \
        sorted((a.image_id, b.image_id) for a, b in brute)
    summary = found.to_dict()
    assert summary["across_patients"] == sum(a.patient_id != b.patient_id for a, b in brute)
    assert summary["across_splits"] == sum(a.split != b.split for a, b in brute)
    leaks = len({(a if a.split == "test" else b).image_id for a, b in brute if {a.split, b.split} == {"test", "train"}})
    assert (found.leakage() is not None) == (leaks > 0)
    if leaks:
        assert found.leakage().startswith(f"{leaks} test image(s) byte-identical to a training image")

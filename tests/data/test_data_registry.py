"""The dataset registry: a reader defined outside the package (here, in this test module) is registered at
runtime and loaded through ``load_dataset`` like a built-in one; unknown names get close-name hints."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from focus_eval.cli import main
from focus_eval.data import registry
from focus_eval.data.cells import clean_id, dr_present, parse_age, parse_grade
from focus_eval.data.matching import ImageMatcher, Listed, read_rows
from focus_eval.data.records import DatasetLoad
from focus_eval.data.spec import ALL_IMAGES, ReaderSpec, every_image
from focus_eval.data.tables import read_csv_rows, resolve_columns
from focus_eval.errors import FocusError
from focus_eval.synth.render import fixture_image

# ---- a whole reader for a made-up clinic dataset: labels.csv + images/ ----

SPEC = ReaderSpec(
    name="clinic",
    targets=("dr",),
    group_key="patient",
    cohorts={"adults": lambda record: record.age is not None and record.age >= 18, "all": every_image},
    default_cohort="adults",
    documented_counts={ALL_IMAGES: {"n": 30}},
)
COLUMNS = {"image": ("image",), "patient": ("patient",), "grade": ("grade",), "age": ("age",)}


def read(folder: Path) -> DatasetLoad:
    label = folder / "labels.csv"
    headers, rows = read_csv_rows(label)
    columns = resolve_columns(headers, COLUMNS, label)

    def listed(row: dict) -> Listed:
        n = row["__row__"]
        name = clean_id(row[columns["image"]], label, n, "image")
        grade = parse_grade(row[columns["grade"]], range(5), label, n, "grade")
        return Listed(name, Path(name).stem, n, dict(
            patient_id=clean_id(row[columns["patient"]], label, n, "patient"), dr=dr_present(grade),
            age=parse_age(row[columns["age"]], label, n, "age"), extra={"grade": grade}))

    load = DatasetLoad(SPEC.name, folder, [], metadata={"label_file": label.name})
    read_rows(load, ImageMatcher(folder, label, folder / "images"), rows, listed)
    return load


class ClinicReader:
    """The same reader as an object with SPEC and read."""

    SPEC = SPEC
    read = staticmethod(read)


# 15 patients x 2 eyes; patients 0-2 are children (outside the default cohort), every third patient has DR
# in both eyes, and the last row's image file is missing.
PATIENTS = 15
MINORS = {0, 1, 2}
MISSING = "p14_OS.jpg"


def grade_of(patient: int) -> int:
    return 2 if patient % 3 == 0 else 0


def write_clinic(folder: Path) -> Path:
    (folder / "images").mkdir(parents=True)
    lines = ["image,patient,grade,age"]
    for p in range(PATIENTS):
        age = 12 if p in MINORS else 40 + p
        for eye in ("OD", "OS"):
            name = f"p{p}_{eye}.jpg"
            lines.append(f"{name},{p},{grade_of(p)},{age}")
            if name != MISSING:
                fixture_image({"dr_grade": grade_of(p), "eye": eye}, seed=2 * p, size=32).save(folder / "images" / name)
    (folder / "labels.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


@pytest.fixture
def clinic_root(tmp_path: Path) -> Path:
    write_clinic(tmp_path / "clinic")
    return tmp_path


@pytest.fixture(params=["string", "object", "reader"])
def clinic(request):
    """``clinic`` registered as a lazy "module:SPEC" target, as an object with SPEC and read, or as a Reader."""
    target = {"string": f"{__name__}:SPEC", "object": ClinicReader,
              "reader": registry.Reader(SPEC, read)}[request.param]
    registry.register_dataset("clinic", target)
    yield "clinic"
    registry.READERS.unregister("clinic")


def test_registered_reader_loads_with_cohort_splits_and_checks(clinic, clinic_root):
    load = registry.load_dataset(clinic, clinic_root)
    assert load.name == "clinic" and {r.dataset for r in load.records} == {"clinic"}
    # the default cohort drops the 6 images of the 3 children; the missing file is skipped and reported
    assert load.metadata["cohort"] == "adults" and load.metadata["cohort_excluded"] == 6
    assert len(load.records) == 23
    assert [(s.row, s.image_id) for s in load.skipped] == [(31, "p14_OS")]
    assert "not found" in load.skipped[0].reason
    assert any("counts differ" in w and "all images n 29 (documented 30)" in w for w in load.warnings)
    by_id = load.by_id()
    assert by_id["p3_OD"].dr == 1 and by_id["p4_OS"].dr == 0 and by_id["p3_OD"].patient_id == "3"
    assert by_id["p5_OS"].relpath == "images/p5_OS.jpg"
    assert by_id["p5_OS"].path == (clinic_root / "clinic" / "images" / "p5_OS.jpg").resolve()
    # grouped split: every split used, and no patient in two splits
    assert load.metadata["split_source"] == "grouped_stratified" and load.metadata["group_key"] == "patient"
    assert all(load.metadata["splits"][s] > 0 for s in ("train", "val", "test"))
    assert sum(load.metadata["splits"].values()) == len(load.records)
    splits_of = defaultdict(set)
    for r in load.records:
        splits_of[r.patient_id].add(r.split)
    assert all(len(s) == 1 for s in splits_of.values())


def test_other_cohort_and_unknown_cohort(clinic, clinic_root):
    assert len(registry.load_dataset(clinic, clinic_root, cohort="all").records) == 29
    with pytest.raises(FocusError, match="unknown cohort 'kids' for clinic; known cohorts: adults, all"):
        registry.load_dataset(clinic, clinic_root, cohort="kids")


def test_datasets_check_command_sees_the_registered_dataset(clinic, clinic_root, capsys):
    assert clinic in registry.dataset_names()
    assert main(["datasets", "check", "--data-root", str(clinic_root), "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out)["datasets"]
    assert report["name"] == "clinic" and report["usable"] and report["group_key"] == "patient"
    assert report["images"]["read"] == 29 and report["images"]["cohort"] == 23


def test_unknown_names_suggest_a_close_match(clinic, tmp_path):
    with pytest.raises(FocusError, match="unknown dataset 'clnic'; did you mean clinic"):
        registry.check_name("clnic")
    with pytest.raises(FocusError, match="did you mean idrid"):
        registry.load_dataset("idird", tmp_path)


def test_a_target_that_is_not_a_reader_is_refused(tmp_path):
    registry.register_dataset("notareader", f"{__name__}:read")
    try:
        with pytest.raises(FocusError, match="dataset 'notareader'.*is not a reader; expected .*SPEC"):
            registry.reader("notareader")
    finally:
        registry.READERS.unregister("notareader")


def test_builtin_readers_all_declare_a_spec():
    for name in registry.dataset_names():
        found = registry.reader(name)
        assert isinstance(found.spec, ReaderSpec) and callable(found.read)
        assert found.spec.default_cohort in found.spec.cohorts
    assert registry.reader("synth_desktop").spec is registry.reader("synth_mobile").spec


def test_spec_rejects_an_unknown_target_or_default_cohort():
    with pytest.raises(FocusError, match="reader spec 'x': targets must be some of"):
        ReaderSpec(name="x", targets=("cataract",), group_key="image")
    with pytest.raises(FocusError, match="default_cohort 'adults' is not one of its cohorts"):
        ReaderSpec(name="x", targets=("dr",), group_key="image", default_cohort="adults")

"""Label files and manifests as copies of copies deliver them: random bytes, byte-order marks, mixed line
endings, NUL bytes, duplicated columns, empty rows. The loaders either load or raise a DataError naming the
file (and the row where there is one): never another exception, never a hang."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from focus_eval.data.manifests import register_manifests
from focus_eval.data.registry import load_dataset
from focus_eval.data.tables import read_csv_rows
from focus_eval.errors import DataError, FocusError
from focus_eval.synth import raw_brset
from helpers.processes import deadline
from helpers.open_fixtures import CARD, clean_cards, manifest_rows, write_clinic  # noqa: F401

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                        HealthCheck.too_slow])
BRSET_COLUMNS = ["image_id", "patient_id", "patient_age", "patient_sex", "diabetic_retinopathy", "DR_ICDR",
                 "quality", "diabetes", "exam_eye", "camera"]
MANIFEST_COLUMNS = ["image", "patient", "dr_grade", "glaucoma", "age", "sex", "eye", "diabetic"]




def cells(columns: list[str]) -> st.SearchStrategy[str]:
    """Cell texts: plausible values, column names, quotes, separators, control characters and anything."""
    return st.one_of(st.sampled_from(["", "0", "1", "2", "NA", " 1 ", "M", "F", "R", "L", "yes", "img00001",
                                      "img00001.jpg", "images/CLINICIMG000_R.png", "\"", "\"\"", ",", ";", "\t",
                                      "\x00", "\ufeff", "\xa0", "99999999999999999999", "-1", "1e309", "nan"]),
                     st.sampled_from(columns), st.text(max_size=12))


def csv_texts(columns: list[str]) -> st.SearchStrategy[bytes]:
    """A CSV as bytes: a header (columns possibly duplicated or missing), rows, mixed line endings, maybe a
    BOM, maybe a different encoding; or plain random bytes."""
    header = st.lists(st.sampled_from(columns + ["", "extra"]), min_size=0, max_size=len(columns) + 2)
    row = st.lists(cells(columns), max_size=len(columns) + 2)
    end = st.sampled_from(["\n", "\r\n", "\r", "\n\n"])

    @st.composite
    def build(draw) -> bytes:
        lines = [draw(header), *draw(st.lists(row, max_size=8))]
        text = "".join(",".join(line) + draw(end) for line in lines)
        encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "latin-1"]))
        return text.encode(encoding, errors="replace")

    return st.one_of(build(), st.binary(max_size=400))


def jsonl_texts() -> st.SearchStrategy[bytes]:
    value = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=8),
                      st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(),
                                                                          max_size=2))
    row = st.one_of(st.dictionaries(st.sampled_from(MANIFEST_COLUMNS + ["x"]), value, max_size=9),
                    value, st.text(max_size=20))
    line = row.map(lambda r: json.dumps(r) if not isinstance(r, str) or r.startswith("{") else r)
    return st.one_of(st.lists(line, max_size=6).map(lambda ls: ("\n".join(ls) + "\n").encode()),
                     st.binary(max_size=300))


def assert_loads_or_names(path: Path, load) -> None:
    try:
        with deadline(what="a loader"):
            load()
    except DataError as exc:
        assert str(path) in str(exc) or (exc.file and str(path) in exc.file), exc
    except FocusError as exc:  # a usage-level message about the file (e.g. a card's coding) must name it too
        assert str(path) in str(exc) or path.name in str(exc), exc


@given(data=csv_texts(BRSET_COLUMNS))
@FUZZ
def test_csv_tables_load_or_name_the_file(data, tmp_path):
    path = tmp_path / "labels.csv"
    path.write_bytes(data)
    assert_loads_or_names(path, lambda: read_csv_rows(path))


@pytest.fixture(scope="module")
def brset_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fuzz-brset")
    raw_brset.write(root / "brset", seed=0, image=lambda labels: Image.new("RGB", (32, 32), (140, 70, 35)))
    return root


@given(data=csv_texts(BRSET_COLUMNS))
@FUZZ
def test_a_dataset_with_a_mangled_label_file_loads_or_names_it(data, brset_root):
    labels = next((brset_root / "brset").rglob("labels*.csv"))
    original = labels.read_bytes()
    labels.write_bytes(data)
    try:
        assert_loads_or_names(labels, lambda: load_dataset("brset", brset_root))
    finally:
        labels.write_bytes(original)


@pytest.fixture(scope="module")
def clinic(tmp_path_factory) -> Path:
    return write_clinic(tmp_path_factory.mktemp("fuzz-clinic") / "clinic", rows=manifest_rows(n_patients=4))


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_manifests_load_or_name_the_file(suffix, clinic, clean_cards):
    card = clinic / "dataset.yaml"
    card.write_text(CARD.format(manifest=f"fuzzed{suffix}"))
    manifest = clinic / f"fuzzed{suffix}"
    texts = csv_texts(MANIFEST_COLUMNS) if suffix == ".csv" else jsonl_texts()

    @given(data=texts)
    @FUZZ
    def check(data):
        manifest.write_bytes(data)  # the card is registered again each time (it reads the manifest's header)

        def load():
            register_manifests(None, [f"clinic={clinic}"])
            load_dataset("clinic", clinic.parent)
        assert_loads_or_names(manifest, load)

    try:
        check()
    finally:
        card.write_text(CARD.format(manifest="manifest.csv"))

"""One image file, one id: a listed path is normalised before its id is assigned, so ``images/0001.png`` and
``images/../images/0001.png`` (or ``./images//0001.png``) are one name, and a second listing of it is an error
naming the file and both rows. One file reached under two names (a symbolic link) enters once when both rows
say the same about it, and is an error naming the file and both rows when they disagree. Before, the second
listing was dropped with a warning whatever its labels said, so the first row's labels won silently."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers.open_fixtures import clean_cards, manifest_rows, write_clinic  # noqa: F401
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from focus_eval.data import registry
from focus_eval.data.files import normalised_name
from focus_eval.data.manifests import register_manifests
from focus_eval.data.records import DatasetLoad, ImageRecord
from focus_eval.data.registry import load_dataset, read_dataset
from focus_eval.data.spec import ReaderSpec
from focus_eval.errors import DataError

SPELLINGS = ("images/../images/{name}", "./images/{name}", "images//{name}", "images/./{name}",
             "images/x/../{name}")

pytestmark = pytest.mark.usefixtures("clean_cards")


def clinic_with(tmp_path: Path, extra_rows: list[dict]) -> tuple[Path, Path]:
    rows = manifest_rows(n_patients=6) + extra_rows
    clinic = write_clinic(tmp_path / "clinic", rows=rows)
    (clinic / "images" / "x").mkdir(exist_ok=True)
    register_manifests(None, [f"clinic={clinic}"])
    return clinic, clinic / "manifest.csv"


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_one_file_listed_under_two_spellings_with_other_labels_is_an_error_naming_file_and_rows(tmp_path, spelling):
    first = manifest_rows(n_patients=6)[0]
    name = Path(first["image"]).name
    other = dict(first, image=spelling.format(name=name), dr_grade=(int(first["dr_grade"]) + 2) % 5)
    clinic, manifest = clinic_with(tmp_path, [other])
    with pytest.raises(DataError) as caught:
        read_dataset("clinic", tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{manifest}, row 14: ")
    assert f"images/{name}" in message and "already listed on row 2" in message


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_the_id_of_a_listed_path_is_that_of_its_normal_form(tmp_path, spelling):
    rows = manifest_rows(n_patients=6)
    rows[3]["image"] = spelling.format(name=Path(rows[3]["image"]).name)
    clinic = write_clinic(tmp_path / "clinic", rows=manifest_rows(n_patients=6))
    (clinic / "images" / "x").mkdir()
    from helpers.open_fixtures import write_manifest

    write_manifest(clinic / "manifest.csv", rows)
    register_manifests(None, [f"clinic={clinic}"])
    load = load_dataset("clinic", tmp_path)
    ids = {r.image_id for r in load.records}
    assert Path(manifest_rows(n_patients=6)[3]["image"]).with_suffix("").as_posix() in ids
    assert len(ids) == len(rows) and not load.skipped


def test_a_symlink_to_a_listed_file_with_the_same_labels_enters_once(tmp_path):
    rows = manifest_rows(n_patients=6)
    first = rows[0]["image"]
    link = str(Path(first).with_name("link.png"))
    clinic, manifest = clinic_with(tmp_path, [dict(rows[0], image=link)])
    (clinic / link).unlink()
    (clinic / link).symlink_to(clinic / first)
    load = load_dataset("clinic", tmp_path)
    assert len(load.records) == len(rows)
    assert [s.image_id for s in load.skipped] == [link[:-4]]
    assert any(w.startswith(f"{manifest}, row {len(rows) + 2}") and "read once" in w for w in load.warnings)


@pytest.mark.parametrize("field, value", [("dr_grade", "ungradable"), ("patient", "OTHER"), ("glaucoma", None)])
def test_a_symlink_to_a_listed_file_that_says_otherwise_is_an_error_naming_both_rows(tmp_path, field, value):
    rows = manifest_rows(n_patients=6)
    first = rows[0]["image"]
    link = str(Path(first).with_name("link.png"))
    changed = dict(rows[0], image=link)
    changed[field] = value if value is not None else 1 - int(rows[0][field])
    clinic, manifest = clinic_with(tmp_path, [changed])
    (clinic / link).unlink()
    (clinic / link).symlink_to(clinic / first)
    with pytest.raises(DataError) as caught:
        read_dataset("clinic", tmp_path)
    message = str(caught.value)
    assert f"{manifest}, row {len(rows) + 2} ({first})" in message or f"{manifest}, row {len(rows) + 2}" in message
    assert f"{manifest}, row 2 ({first})" in message and str(clinic / first) in message
    assert "disagree" in message


def test_a_registered_reader_that_lists_one_file_twice_is_stopped_by_the_registry(tmp_path):
    folder = tmp_path / "own"
    (folder / "a").mkdir(parents=True)
    shutil.copy(Path(__file__), folder / "a" / "eye.png")  # any bytes: nothing decodes them here

    second_dr = [1]

    def read(root: Path) -> DatasetLoad:
        records = [ImageRecord("own", image_id, "p1", root / name, name, dr=dr)
                   for image_id, name, dr in (("eye", "a/eye.png", 0), ("eye2", "a/../a/eye.png", second_dr[0]))]
        return DatasetLoad("own", root, records)

    registry.register_dataset("own", registry.Reader(ReaderSpec(name="own", targets=("dr",), group_key="p"), read))
    try:
        with pytest.raises(DataError, match=r"a/../a/eye.png \(image 'eye2'\) and a/eye.png \(image 'eye'\) are one "
                                             r"file, .*own/a/eye.png, and disagree on dr"):
            registry.read_dataset("own", tmp_path)
        second_dr[0] = 0  # the same labels: the file enters once, with a warning
        load = registry.read_dataset("own", tmp_path)
        assert [r.image_id for r in load.records] == ["eye"]
        assert any(w.startswith("a/../a/eye.png, image 'eye2', is the same file as a/eye.png") for w in load.warnings)
    finally:
        registry.READERS.unregister("own")


PARTS = st.sampled_from(["a", "b", ".", "..", "", "c.png"])


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PARTS, min_size=1, max_size=6))
def test_normal_form_is_one_name_per_file_and_keeps_escapes_visible(parts):
    name = "/".join(parts)
    normal = normalised_name(name)
    assert normalised_name(normal) == normal  # idempotent
    assert "//" not in normal and not normal.startswith("./") and "/./" not in normal
    # the same file as the written name, read from a folder deep enough for every '..' to stay inside it
    root = Path("/r/s/t/u/v/w/x")
    import posixpath

    if not name.startswith("/"):  # (an absolute name keeps one leading '/': '//a' is '/a' on POSIX systems)
        assert posixpath.normpath(str(root / name)) == posixpath.normpath(str(root / normal))
    if normal.startswith(".."):  # an escape stays an escape (the reader refuses it, naming the row)
        assert name.count("..") >= 1

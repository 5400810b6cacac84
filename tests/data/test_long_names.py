"""File names up to the file system's limit (255 bytes): a legal image name must survive every name focus-eval
derives from it. Before, a 253-byte image name broke ``datasets prepare`` (its copy ``<name>.jpg`` and the copy's
temporary name passed the limit)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.open_fixtures import clean_cards, manifest_rows, write_clinic  # noqa: F401
from hypothesis import given, settings
from hypothesis import strategies as st

from focus_eval.cli import main
from focus_eval.data.manifests import register_manifests
from focus_eval.data.prepare import PreparedCopies, copy_relpath
from focus_eval.data.registry import read_dataset
from focus_eval.files import NAME_MAX, atomic_write_bytes

pytestmark = pytest.mark.usefixtures("clean_cards")


def long_name(n_bytes: int, char: str = "x") -> str:
    """An image file name of exactly ``n_bytes`` bytes ending in .png."""
    body = char * ((n_bytes - 4) // len(char.encode()))
    return body + "y" * (n_bytes - 4 - len(body.encode())) + ".png"


@pytest.mark.parametrize("n_bytes, char", [(253, "x"), (255, "x"), (251, "\u00e9"), (255, "\u6f22")])
def test_prepare_copies_an_image_whose_name_is_as_long_as_the_file_system_allows(tmp_path, capsys, n_bytes, char):
    rows = manifest_rows(n_patients=3)
    name = long_name(n_bytes, char)
    assert len(name.encode()) == n_bytes
    rows[0]["image"] = f"images/{name}"
    clinic = write_clinic(tmp_path / "clinic", rows=rows)
    args = ["--dataset-path", f"clinic={clinic}", "--data-root", str(tmp_path)]
    assert main(["datasets", "prepare", *args, "--size", "32", "--workers", "1", "clinic"]) == 0
    out = capsys.readouterr().out
    assert f"clinic 32px: {len(rows)} images, {len(rows)} written" in out and "0 corrupt" in out
    register_manifests(tmp_path, [f"clinic={clinic}"])
    copies = PreparedCopies(tmp_path, "clinic", 32)
    record = next(r for r in read_dataset("clinic", tmp_path).records if r.relpath.endswith(name))
    copy = copies.current(record)
    assert copy is not None and len(os.fsencode(copy.name)) <= NAME_MAX  # the run reads it
    # and a second prepare finds every copy current
    assert main(["datasets", "prepare", *args, "--size", "32", "--workers", "1", "clinic"]) == 0
    assert f"0 written, {len(rows)} already prepared" in capsys.readouterr().out


@settings(max_examples=80, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/\x00"), min_size=1,
               max_size=120))
def test_every_legal_name_has_a_copy_name_that_fits_and_is_its_own(stem):
    name = stem
    while len(os.fsencode(name + ".png")) > NAME_MAX:
        name = name[:-1]
    if not name:
        return
    name += ".png"
    copy = copy_relpath(f"images/{name}")
    assert copy.startswith("images/") and copy.endswith(".jpg")
    assert len(os.fsencode(copy.rpartition("/")[2])) <= NAME_MAX
    if len(os.fsencode(name + ".jpg")) <= NAME_MAX:
        assert copy == f"images/{name}.jpg"  # short names keep the layout the docs describe
    # two names that differ only past the point where a long name is cut still get two copies
    other = name[:-5] + ("a" if name[-5] != "a" else "b") + ".png"
    assert copy_relpath(f"images/{other}") != copy


def test_an_atomic_write_to_a_name_of_the_longest_length_succeeds(tmp_path):
    target = tmp_path / ("r" * NAME_MAX)
    atomic_write_bytes(target, b"data")
    assert target.read_bytes() == b"data"
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]  # no temporary file left behind
    target = Path(tmp_path) / ("\u00e9" * (NAME_MAX // 2))
    atomic_write_bytes(target, b"more")
    assert target.read_bytes() == b"more"

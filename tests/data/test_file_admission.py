"""One file-admission policy for every listing, reader and manifest: regular files only (a named pipe, a socket
or a symlink loop is refused with a message naming it, and never hangs a command), hidden and AppleDouble
``._*`` files skipped and counted once, file names that are not UTF-8 kept and reported once, and one file
entering a load once (a symlink to a listed file, its row saying the same, is read once)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from PIL import Image

from focus_eval.cli import main
from focus_eval.data.files import is_image_name
from focus_eval.data.manifests import register_manifests
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_brset, raw_jsiec
from helpers.processes import deadline
from helpers.open_fixtures import clean_cards, manifest_rows, write_clinic  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.usefixtures("clean_cards")


def blank(labels: dict) -> Image.Image:
    return Image.new("RGB", (64, 64), (140, 70, 35))




def brset_root(tmp_path: Path) -> Path:
    raw_brset.write(tmp_path / "brset", seed=0, image=blank)
    return tmp_path


def labels_of(root: Path) -> Path:
    return next((root / "brset").rglob("labels*.csv"))


def as_fifo(path: Path) -> Path:
    path.unlink()
    os.mkfifo(path)
    return path


# --- label files, cards and manifests that are no regular file -------------------------------------------------
def test_a_label_file_that_is_a_named_pipe_is_refused_by_every_command(tmp_path):
    root = brset_root(tmp_path)
    labels = as_fifo(labels_of(root))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for argv, status in ((["datasets", "check", "brset"], 1), (["datasets", "export", "brset", "-o", "-"], 2),
                         (["datasets", "prepare", "brset", "--size", "32", "--workers", "1"], 1)):
        done = subprocess.run([sys.executable, "-m", "focus_eval", *argv, "--data-root", str(root)], env=env,
                              capture_output=True, text=True, timeout=120)
        out = done.stdout + done.stderr
        assert done.returncode == status, out
        # a table may fold a long line: compare with runs of white space made one space
        assert f"{labels}: the label file is a named pipe (FIFO), not a regular file" in " ".join(out.split())
        assert "Traceback" not in out


def test_a_symlink_loop_as_label_file_is_refused(tmp_path):
    root = brset_root(tmp_path)
    labels = labels_of(root)
    labels.unlink()
    labels.symlink_to(labels)
    with pytest.raises(DataError, match=f"{labels}: the label file is a symbolic link loop"):
        load_dataset("brset", root)


@pytest.mark.parametrize("what", ["manifest", "card"])
def test_a_manifest_or_card_that_is_a_named_pipe_is_refused(what, tmp_path):
    clinic = write_clinic(tmp_path / "clinic")
    target = as_fifo(clinic / ("manifest.csv" if what == "manifest" else "dataset.yaml"))
    label = "manifest" if what == "manifest" else "dataset card"
    with deadline(20, "opening a named pipe"), \
            pytest.raises(DataError, match=f"{target}: the {label} is a named pipe"):
        register_manifests(None, [f"clinic={clinic}"])
        load_dataset("clinic", tmp_path)


# --- image files ------------------------------------------------------------------------------------------------
def images_dir(root: Path) -> Path:
    return next(p for p in (root / "brset").rglob("*") if p.is_dir() and p.name.lower() == "fundus_photos")


def test_images_that_are_no_regular_file_are_named_and_left_out(tmp_path):
    root = brset_root(tmp_path)
    images = images_dir(root)
    fifo = as_fifo(images / "img00001.jpg")
    loop = images / "img00002.jpg"
    loop.unlink()
    loop.symlink_to(loop)
    sock = socket.socket(socket.AF_UNIX)
    short = Path(tempfile.mkdtemp(dir=tmp_path.parent.parent))  # a socket's own path is at most 107 bytes
    sock.bind(str(short / "s"))
    os.rename(short / "s", images / "img00003.jpg.png")
    try:
        with deadline(20, "opening a socket"):
            load = load_dataset("brset", root)
    finally:
        sock.close()
    assert not {"img00001", "img00002"} & {r.image_id for r in load.records}
    text = "\n".join(load.warnings)
    assert f"{fifo}: a named pipe (FIFO), not a regular file; not read" in text
    assert f"{loop}: a symbolic link loop; not read" in text
    assert f"{images / 'img00003.jpg.png'}: a socket, not a regular file; not read" in text


def test_hidden_and_appledouble_files_are_skipped_and_counted_once(tmp_path):
    raw_jsiec.write(tmp_path / "jsiec", seed=0, image=blank)
    before = {r.image_id for r in load_dataset("jsiec", tmp_path).records}
    folder = (tmp_path / "jsiec" / raw_jsiec.ROOT / "0.0.Normal")
    some = sorted(p for p in folder.iterdir() if p.is_file() and is_image_name(p.name))[:3]
    assert len(some) >= 2
    for path in some:
        shutil.copy(path, path.with_name("._" + path.name))  # what a Mac writes on a FAT or network disk
    shutil.copy(some[0], some[0].with_name(".hidden.jpg"))
    load = load_dataset("jsiec", tmp_path)
    assert {r.image_id for r in load.records} == before
    counted = [w for w in load.warnings if "hidden or macOS AppleDouble" in w]
    assert len(counted) == 1
    assert counted[0].startswith(f"{len(some) + 1} hidden or macOS AppleDouble ('._*') file(s) skipped")


def test_file_names_that_are_not_utf8_are_read_and_reported_once(tmp_path):
    raw_jsiec.write(tmp_path / "jsiec", seed=0, image=blank)
    before = len(load_dataset("jsiec", tmp_path).records)
    source = next(p for p in (tmp_path / "jsiec").rglob("*.jpg"))
    for stem in (b"caf\xe9", b"na\xefve"):  # Latin-1 names from an old copy
        shutil.copy(source, os.fsdecode(os.fsencode(source.parent) + b"/" + stem + b".jpg"))
    load = load_dataset("jsiec", tmp_path)
    assert len(load.records) == before + 2
    ids = {r.image_id for r in load.records}
    assert any(i.endswith("caf\\xe9.jpg") for i in ids)
    for r in load.records:
        r.image_id.encode("utf-8")  # every id and path can be written as UTF-8
        r.relpath.encode("utf-8")
    assert sum("not valid UTF-8" in w for w in load.warnings) == 1
    out = tmp_path / "out.csv"
    assert main(["datasets", "export", "jsiec", "--data-root", str(tmp_path), "-o", str(out)]) == 0
    assert "caf\\xe9.jpg" in out.read_text(encoding="utf-8")


# --- one file, one record -----------------------------------------------------------------------------------------
def test_one_file_under_two_names_enters_once(tmp_path):
    """A symbolic link to a listed file, its row saying the same: read once (disagreeing rows, and two spellings
    of one path, are errors: tests/data/test_one_file_one_id.py)."""
    rows = manifest_rows(n_patients=6)
    first = rows[0]["image"]
    link = Path(first).with_name("link.png")
    rows.append(dict(rows[0], image=str(link)))
    clinic = write_clinic(tmp_path / "clinic", rows=rows)
    (clinic / link).unlink()
    (clinic / link).symlink_to(clinic / first)
    register_manifests(None, [f"clinic={clinic}"])
    load = load_dataset("clinic", tmp_path)
    assert len(load.records) == len(rows) - 1
    assert [s.image_id for s in load.skipped] == [str(link)[:-4]]  # ids drop .png
    manifest = clinic / "manifest.csv"
    warning = next(w for w in load.warnings if w.startswith(f"{manifest}, row {len(rows) + 1}"))
    assert f"is the same file as {manifest}, row 2 ({first})" in warning and f"image {str(link)[:-4]!r}" in warning


def test_a_manifest_image_that_is_a_symlink_loop_or_pipe_is_a_reported_skip(tmp_path):
    rows = manifest_rows(n_patients=4)
    clinic = write_clinic(tmp_path / "clinic", rows=rows)
    loop = clinic / rows[0]["image"]
    loop.unlink()
    loop.symlink_to(loop)
    as_fifo(clinic / rows[1]["image"])
    register_manifests(None, [f"clinic={clinic}"])
    with deadline(20, "opening a named pipe"):
        load = load_dataset("clinic", tmp_path)
    reasons = {s.image_id: s.reason for s in load.skipped}
    assert reasons[rows[0]["image"][:-4]] == f"image file {loop} is a symbolic link loop"
    assert reasons[rows[1]["image"][:-4]].endswith("is a named pipe (FIFO), not a regular file")
    assert len(load.records) == len(rows) - 2


"""Submission bundles (``results.bundle``): a bundle written from a results folder passes its check on arrival and
verifies with its submitter named; a bundle with a symbolic link, an oversized file, a missing sample file, a digest
mismatch, an extra, executable, binary or disallowed file, a device, a hard link or a path leaving the bundle is
refused with what is wrong, before anything inside is read as results."""

import json
import os
import shutil
from pathlib import Path, PurePosixPath

import pytest
from helpers.records import synthetic_root
from helpers.submissions import honest_results
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from focus_eval.errors import FocusError
from focus_eval.results.bundle import (BUNDLE_FILE, LIMITS, BundleLimits, BundleRefused, check_bundle, confined,
                                       write_bundle)
from focus_eval.results.collect import discover
from focus_eval.verification import verify


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return synthetic_root(tmp_path_factory, "data", n=40, seed=9)


@pytest.fixture(scope="module")
def results(tmp_path_factory, data_root, index):
    out = tmp_path_factory.mktemp("results")
    honest_results(out, data_root, index=index)
    return out


@pytest.fixture(scope="module")
def bundle(tmp_path_factory, results):
    out = tmp_path_factory.mktemp("bundles") / "clinic-a"
    write_bundle(discover([results]).results_files, out, "Clinic A")
    return out


def fresh(tmp_path_factory, bundle) -> Path:
    copy = tmp_path_factory.mktemp("copy") / "bundle"
    shutil.copytree(bundle, copy)
    return copy


def record(folder: Path) -> dict:
    return json.loads((folder / BUNDLE_FILE).read_text())


def relist(folder: Path, path: str, data: bytes | None = None) -> None:
    """Put ``path`` (with its current bytes, or ``data``) into the digest list as a bundler would."""
    import hashlib

    if data is not None:
        (folder / path).write_bytes(data)
    data = (folder / path).read_bytes()
    rec = record(folder)
    rec["files"] = [f for f in rec["files"] if f["path"] != path]
    rec["files"].append({"path": path, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)})
    (folder / BUNDLE_FILE).write_text(json.dumps(rec))


def problems(folder: Path, limits: BundleLimits = LIMITS) -> list[str]:
    with pytest.raises(BundleRefused) as caught:
        check_bundle(folder, limits)
    return caught.value.problems


def test_a_written_bundle_passes_and_verifies_with_its_submitter(bundle, data_root, index):
    checked = check_bundle(bundle)
    assert checked.submitter == "Clinic A"
    names = sorted(PurePosixPath(f.path).name for f in checked.files)
    assert names == sorted(["results.jsonl", *[n for n in names if n.startswith("run-")],
                            *(f"{t}.linear_probe{s}" for t in ("dr_synth_desktop", "glaucoma_synth_desktop")
                              for s in (".jsonl", ".meta.json"))])
    verdicts = verify([bundle], data_root=data_root, index=index)
    assert [(v.submitter, v.state) for v in verdicts] == [("Clinic A", "verified")] * 2
    assert all(v.source.startswith(str(bundle)) for v in verdicts)


# each defect: (what it does to the bundle, given the path of one listed file) -> a part of the problem it causes


def symlink_file(folder, path):
    (folder / path).unlink()
    (folder / path).symlink_to("/etc/hostname")
    return f"{path}: a symbolic link"


def symlink_folder(folder, path):
    (folder / "results" / "elsewhere").symlink_to(folder.parent)
    return "results/elsewhere: a symbolic link"


def oversized(folder, path):
    with open(folder / path, "ab") as handle:  # a sparse file: no disk space, one byte over the limit
        handle.truncate(LIMITS.file_bytes + 1)
    return f"{path}: {LIMITS.file_bytes + 1} bytes, above the limit of {LIMITS.file_bytes} per file"


def oversized_total(folder, path):
    with open(folder / "results" / "big.csv", "wb") as handle:
        handle.truncate(LIMITS.total_bytes)
    return f"bytes in all, above the limit of {LIMITS.total_bytes}"


def missing(folder, path):
    (folder / path).unlink()
    return f"{path}: listed in {BUNDLE_FILE} but missing (a partial bundle)"


def changed(folder, path):
    data = bytearray((folder / path).read_bytes())
    data[len(data) // 2] = ord("0") if data[len(data) // 2] != ord("0") else ord("1")
    (folder / path).write_bytes(bytes(data))
    return f"{path}: sha256 differs from {BUNDLE_FILE}'s digest list (changed after bundling)"


def extra(folder, path):
    (folder / "results" / "notes.md").write_text("added later\n")
    return f"results/notes.md: not in {BUNDLE_FILE}'s digest list"


def executable(folder, path):
    os.chmod(folder / path, 0o755)
    return f"{path}: executable (mode -rwxr-xr-x)"


def pickle_file(folder, path):
    import pickle

    relist(folder, "results/model.pkl", pickle.dumps({"a": 1}))
    return "results/model.pkl: not an allowed kind of file"


def binary_as_json(folder, path):
    relist(folder, "results/weights.json", b"\x80\x04\x95 binary")
    return "results/weights.json: not UTF-8 text"


def fifo(folder, path):
    os.mkfifo(folder / "results" / "pipe.jsonl")
    return "results/pipe.jsonl: not a regular file (a device, pipe or socket)"


def hard_link(folder, path):
    os.link(folder / path, folder / "results" / "twin.json")
    relist(folder, "results/twin.json")
    return "results/twin.json: a hard link"


def hidden(folder, path):
    (folder / "results" / ".hidden.json").write_text("{}")
    return "results/.hidden.json: name outside letters"


def escaping_path(folder, path):
    rec = record(folder)
    rec["files"].append({"path": "../outside.json", "sha256": "0" * 64, "bytes": 2})
    (folder / BUNDLE_FILE).write_text(json.dumps(rec))
    return "not a confined relative path"


def absolute_path(folder, path):
    rec = record(folder)
    rec["files"].append({"path": "/etc/passwd", "sha256": "0" * 64, "bytes": 2})
    (folder / BUNDLE_FILE).write_text(json.dumps(rec))
    return "not a confined relative path"


def deep(folder, path):
    nested = folder.joinpath(*["d"] * (LIMITS.depth + 1))
    nested.mkdir(parents=True)
    return "folders nested deeper than"


def partial(folder, path):
    """A sample file taken out and its entry too: the digest list agrees, the bundle is still partial."""
    sample = next(f["path"] for f in record(folder)["files"] if f["path"].endswith(".linear_probe.jsonl"))
    (folder / sample).unlink()
    rec = record(folder)
    rec["files"] = [f for f in rec["files"] if f["path"] != sample]
    (folder / BUNDLE_FILE).write_text(json.dumps(rec))
    return f"has no {PurePosixPath(sample).name} (a partial bundle)"


def no_manifest(folder, path):
    rec = record(folder)
    for f in rec["files"]:
        if "/run-" in f["path"]:
            (folder / f["path"]).unlink()
    rec["files"] = [f for f in rec["files"] if "/run-" not in f["path"]]
    (folder / BUNDLE_FILE).write_text(json.dumps(rec))
    return "no run manifest (run-*.json) beside results.jsonl"


DEFECTS = [symlink_file, symlink_folder, oversized, oversized_total, missing, changed, extra, executable, pickle_file,
           binary_as_json, fifo, hard_link, hidden, escaping_path, absolute_path, deep, partial, no_manifest]


@pytest.mark.parametrize("defect", DEFECTS, ids=[d.__name__ for d in DEFECTS])
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, 100))
def test_a_damaged_bundle_is_refused_with_what_is_wrong(tmp_path_factory, bundle, defect, which):
    folder = fresh(tmp_path_factory, bundle)
    listed = sorted(f["path"] for f in record(folder)["files"])
    expected = defect(folder, listed[which % len(listed)])
    found = problems(folder)
    assert any(expected in p for p in found), (expected, found)


def test_refused_bundles_stop_verify_before_any_line_is_read(tmp_path_factory, bundle, index):
    folder = fresh(tmp_path_factory, bundle)
    missing(folder, next(f["path"] for f in record(folder)["files"] if f["path"].endswith("meta.json")))
    with pytest.raises(BundleRefused, match="a partial bundle"):
        verify([folder], index=index)


def test_a_bundle_that_is_a_link_or_has_no_digest_list_is_refused(tmp_path_factory, bundle):
    folder = fresh(tmp_path_factory, bundle)
    link = folder.parent / "link"
    link.symlink_to(folder)
    assert problems(link) == ["the bundle must be a folder, not a symbolic link or a file"]
    (folder / BUNDLE_FILE).write_text("{not json")
    assert problems(folder)[0].startswith(f"{BUNDLE_FILE}: not readable JSON")
    (folder / BUNDLE_FILE).write_text(json.dumps({"format": "something else"}))
    assert problems(folder) == [f"{BUNDLE_FILE}: not a focus-eval submission (\"format\" is not "
                                "'focus-eval-submission')"]
    (folder / BUNDLE_FILE).unlink()
    assert f"no {BUNDLE_FILE} (the digest list) as a regular file" in problems(folder)


@given(path=st.text(alphabet=st.sampled_from(list("ab./\\_-@ \x00")), max_size=12))
def test_a_confined_path_never_leaves_the_bundle(path):
    if confined(path):
        root = Path("/bundle")
        assert os.path.normpath(root / path).startswith("/bundle/")
        assert not any(part in ("", ".", "..") for part in path.split("/"))


@given(name=st.one_of(st.just(""), st.text(min_size=201, max_size=210),
                      st.text(min_size=1).filter(lambda t: not t.isprintable())))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_submitter_must_be_one_printable_line(tmp_path_factory, results, name):
    out = tmp_path_factory.mktemp("named") / "b"
    with pytest.raises(FocusError, match="--submitter"):
        write_bundle(discover([results]).results_files, out, name)
    assert not out.exists()


def test_bundling_refuses_a_line_without_its_samples_and_a_used_folder(tmp_path, results):
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    (sample,) = (copy / "fake-model" / "samples").glob("dr_synth_desktop.*.jsonl")
    sample.unlink()
    with pytest.raises(FocusError, match="dr_synth_desktop.linear_probe has no dr_synth_desktop.linear_probe.jsonl"):
        write_bundle(discover([copy]).results_files, tmp_path / "b", "Clinic A")
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "x.txt").write_text("x")
    with pytest.raises(FocusError, match="not an empty folder"):
        write_bundle(discover([results]).results_files, tmp_path / "used", "Clinic A")


def test_smaller_limits_refuse_a_bundle_the_default_limits_accept(bundle):
    assert check_bundle(bundle).submitter == "Clinic A"
    assert any("above the limit of 100 per file" in p for p in problems(bundle, BundleLimits(file_bytes=100)))
    assert any("files, above the limit of 2" in p for p in problems(bundle, BundleLimits(files=2)))


def test_verification_writes_nothing_into_what_it_checks(tmp_path_factory, bundle, data_root, index):
    folder = fresh(tmp_path_factory, bundle)

    def snapshot():
        return {p.relative_to(folder): (p.read_bytes(), p.stat().st_mode) for p in sorted(folder.rglob("*"))
                if p.is_file()} | {"folders": sorted(str(p) for p in folder.rglob("*") if p.is_dir())}

    before = snapshot()
    assert {v.state for v in verify([folder], data_root=data_root, index=index)} == {"verified"}
    assert snapshot() == before
    assert check_bundle(folder).submitter == "Clinic A"

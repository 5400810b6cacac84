"""The command line's one error boundary: every file system error (read-only, full, not a folder, is a folder,
permission, name too long, symlink loop) is one line ``focus-eval: error: PATH: WHAT; WHAT TO DO``, exit
status 1, no traceback (unless --debug), and no partial file left behind. The conditions are real: a tmpfs
mounted read-only or filled up, a file where a folder is expected, a symlink loop, an unprivileged user."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from focus_eval.cli import main, split_debug
from focus_eval.errors import OS_ERRORS, os_error_line
from focus_eval.synth import raw_brset

NOBODY = 65534  # the owner of "another user's" files
REPO = Path(__file__).resolve().parents[2]


def blank(labels: dict) -> Image.Image:
    """A flat picture, its own colour per image (datasets check reports byte-identical images filed apart)."""
    seed = labels["seed"]
    return Image.new("RGB", (64, 64), (seed % 251, (seed >> 8) % 251, 35))


def write_brset(root: Path) -> Path:
    raw_brset.write(root / "brset", seed=0, image=blank)
    return root


@contextlib.contextmanager
def tmpfs(where: Path, size: str = "4M"):
    """A tmpfs mounted at ``where`` (skips the test where this process may not mount), unmounted after."""
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or 'mount failed'})")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def remount_read_only(where: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)


def fill(where: Path) -> None:
    """Write zeros under ``where`` until the file system is full."""
    with open(where / "filler", "wb") as handle:
        with contextlib.suppress(OSError):
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
                os.fsync(handle.fileno())


def files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")} if folder.is_dir() else set()


def assert_one_line(capsys, status: int, *phrases: str) -> str:
    err = capsys.readouterr().err
    # progress lines ("[focus-eval] HH:MM:SS stage ...") may come first; the error itself is one line
    lines = [line for line in err.strip().splitlines() if not line.startswith("[focus-eval] ")]
    assert status == 1, err
    assert "Traceback" not in err
    assert len(lines) == 1 and lines[0].startswith("focus-eval: error: "), err
    for phrase in phrases:
        assert phrase in lines[0], err
    return lines[0]


# --- the message ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("code", [errno.EROFS, errno.ENOSPC, errno.ENOTDIR, errno.EISDIR, errno.EACCES,
                                  errno.EPERM, errno.ENAMETOOLONG, errno.ELOOP])
def test_every_kind_has_what_happened_and_what_to_do(code):
    line = os_error_line(OSError(code, os.strerror(code), "/data/x.csv"))
    what, todo = OS_ERRORS[code]
    assert line == f"/data/x.csv: {what}; {todo}"


def test_debug_flag_is_taken_out_anywhere_before_a_double_dash(monkeypatch):
    monkeypatch.delenv("FOCUS_EVAL_DEBUG", raising=False)
    assert split_debug(["--debug", "datasets", "check"]) == (["datasets", "check"], True)
    assert split_debug(["datasets", "check", "--debug"]) == (["datasets", "check"], True)
    assert split_debug(["datasets", "--", "--debug"]) == (["datasets", "--", "--debug"], False)
    monkeypatch.setenv("FOCUS_EVAL_DEBUG", "1")
    assert split_debug(["tasks"]) == (["tasks"], True)


# --- real conditions, through the command line --------------------------------------------------------------
def export(root: Path, output: Path | str) -> int:
    return main(["datasets", "export", "brset", "--data-root", str(root), "-o", str(output)])


def bad_output(kind: str, tmp_path: Path) -> tuple[Path, str]:
    """An output path that fails with ``kind``, and the phrase the error line must carry."""
    if kind == "ENOTDIR":
        (tmp_path / "a_file").write_text("x")
        return tmp_path / "a_file" / "sub" / "out.csv", "a_file/sub: a part of the path is a file"
    if kind == "EISDIR":
        (tmp_path / "a_folder").mkdir()
        return tmp_path / "a_folder", "a_folder: is a folder"
    if kind == "ENAMETOOLONG":
        return tmp_path / ("x" * 300 + ".csv"), "x" * 300 + ".csv: the file name is too long"
    if kind == "ELOOP":
        (tmp_path / "loop").symlink_to(tmp_path / "loop")
        return tmp_path / "loop" / "sub" / "out.csv", "loop/sub: too many levels of symbolic links"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["ENOTDIR", "EISDIR", "ENAMETOOLONG", "ELOOP"])
def test_export_to_an_impossible_path_is_one_line(kind, tmp_path, capsys):
    root = write_brset(tmp_path / "data")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    output, phrase = bad_output(kind, out_dir)
    before = files_under(out_dir)
    assert_one_line(capsys, export(root, output), phrase)
    assert files_under(out_dir) == before  # no partial or temporary file


def test_export_to_a_read_only_file_system(tmp_path, capsys):
    root = write_brset(tmp_path / "data")
    with tmpfs(tmp_path / "ro") as ro:
        remount_read_only(ro)
        assert_one_line(capsys, export(root, ro / "out.csv"), str(ro / "out.csv"), "read-only")
        assert files_under(ro) == set()


def test_export_to_a_full_file_system_leaves_no_partial_file(tmp_path, capsys):
    root = write_brset(tmp_path / "data")
    with tmpfs(tmp_path / "full", size="256k") as full:
        fill(full)
        assert_one_line(capsys, export(root, full / "out.csv"), str(full / "out.csv"), "no space")
        assert files_under(full) == {"filler"}


def test_debug_shows_the_traceback(tmp_path, capsys):
    root = write_brset(tmp_path / "data")
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(NotADirectoryError):
        main(["--debug", "datasets", "export", "brset", "--data-root", str(root),
              "-o", str(tmp_path / "a_file" / "sub" / "out.csv")])


def test_check_and_prepare_on_a_read_only_data_root(tmp_path, capsys):
    with tmpfs(tmp_path / "ro") as ro:
        write_brset(ro)
        remount_read_only(ro)
        assert main(["datasets", "check", "brset", "--data-root", str(ro)]) == 0  # reading needs no writes
        capsys.readouterr()
        status = main(["datasets", "prepare", "brset", "--data-root", str(ro), "--size", "32", "--workers", "1"])
        assert_one_line(capsys, status, str(ro / ".prepared"), "read-only")


def test_prepare_on_a_full_data_root_leaves_no_partial_image(tmp_path, capsys):
    with tmpfs(tmp_path / "full", size="2M") as full:
        write_brset(full)
        before = files_under(full)
        fill(full)
        status = main(["datasets", "prepare", "brset", "--data-root", str(full), "--size", "32", "--workers", "1"])
        assert_one_line(capsys, status, "no space")
        partial = [p for p in files_under(full) - before - {"filler"} if p.endswith((".tmp", ".jpg"))]
        assert partial == []


def test_leaderboard_into_a_read_only_folder(tmp_path, capsys):
    from helpers.leaderboard_data import line, write_lines

    results = write_lines(tmp_path / "results" / "m" / "results.jsonl", [line()])
    with tmpfs(tmp_path / "ro") as ro:
        remount_read_only(ro)
        status = main(["leaderboard", str(results.parent.parent), "-o", str(ro / "site")])
        assert_one_line(capsys, status, str(ro / "site"), "read-only")
        assert files_under(ro) == set()


@pytest.mark.slow
def test_a_run_into_a_read_only_output_folder(tmp_path, capsys):
    from focus_eval.synth.datasets import write_synthetic

    write_synthetic(tmp_path / "data", n=40, seed=3)
    with tmpfs(tmp_path / "ro") as ro:
        remount_read_only(ro)
        status = main(["--model", "tiny-vit", "--tasks", "dr_synth_desktop", "--data-root", str(tmp_path / "data"),
                       "--output-path", str(ro / "results"), "--cache-dir", str(tmp_path / "cache"),
                       "--no-progress", "--num-workers", "0", "--n-boot", "50"])
        # the run's checks before anything is loaded find it: a problem of the command (exit 2), one line
        err = capsys.readouterr().err
        assert status == 2 and "Traceback" not in err and err.count("\n") == 1, err
        assert err.startswith("focus-eval: error: ") and "read-only file system" in err and str(ro) in err
        assert files_under(ro) == set()


# --- permission errors: root passes every mode check, so the command runs without the capabilities that do so --
DROPPED = "-dac_override,-dac_read_search,-fowner"


def without_override(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to drop the capabilities that bypass file modes")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("FOCUS_EVAL_DEBUG", None)
    return subprocess.run([setpriv, f"--bounding-set={DROPPED}", f"--inh-caps={DROPPED}", sys.executable, "-m",
                           "focus_eval", *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("kind", ["EACCES", "EPERM"])
def test_permission_errors_are_one_line(kind, tmp_path):
    root = write_brset(tmp_path / "data")
    folder = tmp_path / "out"
    folder.mkdir()
    if kind == "EACCES":
        folder.chmod(0o555)
        output, phrase = folder / "out.csv", "permission denied"
    else:
        # another user's file in another user's sticky folder: renaming over it is not permitted
        folder.chmod(0o1777)
        os.chown(folder, NOBODY, NOBODY)
        output, phrase = folder / "out.csv", "operation not permitted"
        output.write_text("another user's file\n")
        os.chown(output, NOBODY, NOBODY)
    done = without_override("datasets", "export", "brset", "--data-root", str(root), "-o", str(output),
                            cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert lines == [lines[0]] and lines[0].startswith(f"focus-eval: error: {output}: {phrase}"), done.stderr
    assert sorted(p.name for p in folder.iterdir()) == (["out.csv"] if kind == "EPERM" else [])
    if kind == "EPERM":
        assert output.read_text() == "another user's file\n"


# --- secrets never reach the console through the error boundary ---------------------------------------------------
@pytest.mark.parametrize("error", ["focus", "os"])
def test_a_registered_secret_inside_an_error_is_masked_on_the_console(monkeypatch, capsys, error):
    from focus_eval.commands import models
    from focus_eval.errors import FocusError
    from focus_eval.redact import forget_secret, register_secret

    key = "sk-boundary-7f3e9a1c0ffee42"
    register_secret(key)

    def fail(args):
        if error == "focus":
            raise FocusError(f"the endpoint answered 401: invalid key {key}")
        raise PermissionError(errno.EACCES, "Permission denied", f"/tmp/{key}/out.json")

    monkeypatch.setattr(models, "run", fail)
    try:
        status = main(["models"])
    finally:
        forget_secret(key)
    captured = capsys.readouterr()
    assert status == (2 if error == "focus" else 1)
    assert key not in captured.err + captured.out and "***" in captured.err

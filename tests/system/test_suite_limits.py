"""The test suite's own limits: every test has a timeout (a longer one when marked slow), a hung test fails with
its stack while the run goes on, and a process a test left running is stopped at the end of the run."""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]

HUNG = textwrap.dedent("""\
    import subprocess, sys, threading, time

    import pytest


    def test_waits_for_a_lock_nobody_releases():
        lock = threading.Lock()
        lock.acquire()
        lock.acquire()


    def test_waits_for_a_child_that_never_ends(tmp_path_factory):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({pid_file!r}, "w").write(str(child.pid))
        child.wait()


    @pytest.mark.slow
    def test_slow_and_longer_than_the_plain_limit():
        time.sleep(3)


    @pytest.mark.slow
    def test_slow_and_hung():
        threading.Event().wait()


    def test_after_the_hung_ones():
        assert True
""")


def pytest_options() -> configparser.SectionProxy:
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    return parser["tool:pytest"]


def test_the_configuration_bounds_every_test():
    options = pytest_options()
    assert options["timeout_method"] == "signal"  # a hung test fails alone; the thread method ends the whole run
    plain, slow = float(options["timeout"]), float(options["slow_timeout"])
    assert 0 < plain < slow <= 1800
    conftest = (ROOT / "tests" / "conftest.py").read_text()
    assert 'pytest_plugins = ["helpers.timeouts"]' in conftest


@pytest.mark.slow
def test_a_hung_test_fails_with_its_stack_and_the_run_goes_on(tmp_path):
    pid_file = tmp_path / "child.pid"
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text('pytest_plugins = ["helpers.timeouts"]\n')
    (suite / "test_hung.py").write_text(HUNG.format(pid_file=str(pid_file)))
    # the project's limits, scaled down: the plain limit shorter than the slow test, the slow limit longer
    (suite / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\ntimeout = 2\ntimeout_method = signal\n"
                                      "slow_timeout = 8\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "tests"), COLUMNS="400")  # summary lines unshortened
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", str(suite)],
                          cwd=suite, env=env, capture_output=True, text=True, timeout=180)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "3 failed, 2 passed" in out, out
    for name, limit in (("waits_for_a_lock_nobody_releases", 2), ("waits_for_a_child_that_never_ends", 2),
                        ("slow_and_hung", 8)):
        assert f"FAILED test_hung.py::test_{name} - Failed: Timeout (>{limit}.0s)" in out, out
    assert "lock.acquire()" in out and "child.wait()" in out  # the stack of each hung test
    # the child the hung test started was stopped when the run ended, and named
    assert "stopped 1 process(es) the tests left running" in out, out
    pid = int(pid_file.read_text())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE

"""Per-test time limits for the whole suite (a pytest plugin, loaded by tests/conftest.py).

pytest-timeout's ``timeout`` (setup.cfg) bounds every test, its fixtures included; a test marked ``slow`` gets
``slow_timeout`` instead, unless it carries its own ``@pytest.mark.timeout``. A test past its limit fails with
the stacks of its threads, and the run goes on with the next test. At the end of the run, any process the tests
started and left running is stopped and named, so that nothing outlives the suite (a leftover holding the
terminal or a pipe would keep ``make test`` from ending)."""

from __future__ import annotations

import os

import pytest

SLOW_INI = "slow_timeout"


def pytest_addoption(parser):
    parser.addini(SLOW_INI, "per-test timeout, in seconds, of tests marked slow (pytest-timeout's `timeout` "
                            "bounds the others)", default="1200")


def pytest_configure(config):
    if not config.pluginmanager.hasplugin("timeout"):
        raise pytest.UsageError("the test suite needs pytest-timeout (pip install -e '.[test]')")


def pytest_collection_modifyitems(config, items):
    slow_limit = float(config.getini(SLOW_INI))
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(slow_limit))


# helper processes of the interpreter itself, which end with it
_INTERPRETER_HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


def _leftovers() -> list:
    import psutil

    left = []
    for proc in psutil.Process(os.getpid()).children(recursive=True):
        try:
            if not any(name in " ".join(proc.cmdline()) for name in _INTERPRETER_HELPERS):
                left.append(proc)
        except psutil.Error:  # ended meanwhile
            continue
    return left


def _stop_services() -> None:
    """Libraries that keep a service process for the interpreter's life stop it themselves (W&B's, which would
    otherwise complain at exit about the process stopped below)."""
    import sys

    wandb = sys.modules.get("wandb")
    if wandb is not None and hasattr(wandb, "teardown"):
        wandb.teardown()


def pytest_sessionfinish(session, exitstatus):
    import psutil

    if session.config.pluginmanager.hasplugin("dsession"):
        return  # pytest-xdist's controller: its children are the workers, and each worker reaps its own
    _stop_services()
    left = _leftovers()
    if not left:
        return
    names = []
    for proc in left:
        try:
            names.append(f"{proc.pid} {' '.join(proc.cmdline())[:200]}")
            proc.terminate()
        except psutil.Error:  # ended meanwhile
            continue
    _, alive = psutil.wait_procs(left, timeout=10)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"stopped {len(names)} process(es) the tests left running:", yellow=True)
        for name in names:
            reporter.write_line(f"  {name}")

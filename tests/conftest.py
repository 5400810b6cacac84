"""Test-wide settings: never reach a model hub; keep thread counts small on 2-core machines."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if "PYTEST_XDIST_WORKER" in os.environ:  # tests run in parallel (make test): the cores are shared among the workers
    _workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    os.environ["OMP_NUM_THREADS"] = str(max(1, min(2, (os.cpu_count() or 2) // _workers)))
    # a worker starts with COLUMNS=80 set for it; the tests see the width the suite was started with
    _columns = os.environ.get("FOCUS_TEST_COLUMNS", "")
    if _columns:
        os.environ["COLUMNS"] = _columns
    else:
        os.environ.pop("COLUMNS", None)
else:
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    os.environ["FOCUS_TEST_COLUMNS"] = os.environ.get("COLUMNS", "")

# Console scripts of this environment (focus-eval, torchrun, hadolint) come first on PATH, also when pytest
# runs as `.venv/bin/python -m pytest` without an activated environment.
import sys  # noqa: E402

_bin = os.path.dirname(sys.executable)
if _bin not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = _bin + os.pathsep + os.environ.get("PATH", "")

import pytest  # noqa: E402
from helpers.browser_support import browser  # noqa: E402,F401  (a fixture: headless Chromium for page tests)

# per-test timeouts (a longer one for tests marked slow) and the stop of processes the tests left running
pytest_plugins = ["helpers.timeouts"]


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """FOCUS_CACHE in the test's own temporary folder (``tmp_path / "cache"``), so nothing built there is shared."""
    monkeypatch.setenv("FOCUS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def index():
    """The shipped tasks, read once per test module."""
    from focus_eval.task import TaskIndex

    return TaskIndex()


def pytest_configure(config):
    # Registered here so `-m "not slow"` (make test-fast) selects by a known marker, not a typo-prone string.
    config.addinivalue_line("markers", "slow: takes more than about 3 s (demo, runner end to end, torchrun, "
                                       "browser, miniature benchmark, sft training); make test-fast skips these")


@pytest.fixture(autouse=True)
def default_interrupt_handling():
    """Every test starts with Python's own SIGINT and SIGTERM handling, whatever a test or library run before it
    in the same process left behind (an ignored SIGINT would also be inherited by every process a test starts)."""
    import signal

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield

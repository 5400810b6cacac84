"""The package as it is distributed: setup.cfg lists every focus_eval subpackage; the sdist and the wheel built
from it (the wheel from the sdist, as pip builds it) carry the licence, the sdist the docs and tests; torch and
torchvision are ranges with the tested versions pinned in constraints.txt, which make, CI and the Dockerfile
install with; a wheel installed elsewhere finds its tasks, models and leaderboard."""

import configparser
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from helpers.dists import (constraints, copy_source, install_requires, main as check_dists, sdist_problems,
                           wheel_problems)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    """(sdist, wheel) built by `python -m build` from a copy of the source (so that a stale build/ folder of the
    checkout cannot leak in); the wheel is built from the sdist, so a file the sdist lacks fails here."""
    tmp = tmp_path_factory.mktemp("dist")
    source = copy_source(tmp / "src")
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp / "dist"),
                           str(source)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [sdist], [wheel] = (tmp / "dist").glob("*.tar.gz"), (tmp / "dist").glob("*.whl")
    return sdist, wheel


def test_every_subpackage_is_listed_in_setup_cfg():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    listed = {p.strip() for p in cfg["options"]["packages"].split() if p.strip()}
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "focus_eval").rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    missing = on_disk - listed
    assert not missing, f"add these packages to setup.cfg [options] packages: {sorted(missing)}"


def test_shipped_folders_resolve_from_checkout():
    from focus_eval.resources import resource_dir

    for name in ("tasks", "models", "leaderboard"):
        assert resource_dir(name) == ROOT / name


def test_a_wheel_carries_tasks_models_and_leaderboard(tmp_path, dists):
    """A non-editable install finds the shipped folders inside the package."""
    wheel = dists[1]
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = ("import focus_eval, focus_eval.resources as r\n"
            "from focus_eval.task import TaskIndex\n"
            "from focus_eval.presets import list_presets\n"
            "print(focus_eval.__file__)\n"
            "print(r.resource_dir('tasks'))\n"
            "print(len(TaskIndex().names), len(list_presets()))\n"
            "print((r.resource_dir('leaderboard') / 'static' / 'leaderboard.js').is_file())\n"
            "print(sorted(p.parent.name for p in r.resource_dir('tasks').glob('*/README.md')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}, check=True).stdout.split("\n")
    assert out[0].startswith(str(site)) and out[1] == str(site / "focus_eval" / "_tasks")
    tasks, presets = map(int, out[2].split())
    shipped_tasks = [p for p in (ROOT / "tasks").rglob("*.yaml") if not p.name.startswith("_")]
    assert tasks == len(shipped_tasks) and presets == len(list((ROOT / "models").glob("*.yaml")))
    assert any(p.parent != ROOT / "tasks" for p in shipped_tasks)  # the wheel must carry the task subfolders
    assert out[3] == "True"
    assert out[4] == str(sorted(p.parent.name for p in (ROOT / "tasks").glob("*/README.md")))


def test_the_wheel_and_sdist_carry_the_licence_docs_and_tests(dists):
    sdist, wheel = dists
    assert sdist_problems(sdist) == [] and wheel_problems(wheel) == []
    with zipfile.ZipFile(wheel) as whl:
        assert any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith(".dist-info/LICENSE")
                   for n in whl.namelist())
    with tarfile.open(sdist) as tar:
        names = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
    assert {"docs/OUTPUTS.md", "tests/conftest.py", "tests/system/test_packaging.py", "LICENSE"} <= names
    assert not any("__pycache__" in n for n in names)
    assert check_dists(["check", str(sdist), str(wheel)]) == 0  # what scripts/ci-wheel.sh runs


def test_the_checks_name_a_wheel_without_licence_and_an_exact_torch(dists, tmp_path):
    """The checks above can fail: a wheel rebuilt without its licence file and with torch pinned exactly."""
    wheel = dists[1]
    bad = tmp_path / wheel.name
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.infolist():
            if item.filename.rsplit("/", 1)[-1] == "LICENSE":
                continue
            data = src.read(item)
            if item.filename.endswith(".dist-info/METADATA"):
                data = re.sub(rb"Requires-Dist: torch[<>=!~,.0-9 ]*\n", b"Requires-Dist: torch==2.14.1\n", data)
            dst.writestr(item, data)
    problems = wheel_problems(bad)
    assert "the wheel does not carry the LICENSE file" in problems
    assert any("torch==2.14.1" in p for p in problems)


def test_torch_is_a_range_and_the_tested_versions_are_pinned_where_installs_happen():
    from packaging.requirements import Requirement

    requirements = {Requirement(r).name.lower(): Requirement(r) for r in install_requires()}
    pins = constraints()
    for name in ("torch", "torchvision"):
        spec = requirements[name].specifier
        assert not any(s.operator in ("==", "===") for s in spec), f"setup.cfg pins {name} exactly: {spec}"
        assert name in pins and spec.contains(pins[name]), f"constraints.txt pins {name} outside {spec}"
    # make, CI and the container install with the pins
    assert "-c constraints.txt" in (ROOT / "Makefile").read_text()
    assert 'PIP_CONSTRAINT="$PWD/constraints.txt"' in (ROOT / ".ci" / "run").read_text()
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    assert "constraints.txt" in dockerfile and "pip install -c /tmp/constraints.txt -r" in dockerfile
    assert "!constraints.txt" in (ROOT / ".dockerignore").read_text().split()

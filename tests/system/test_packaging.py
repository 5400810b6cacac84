"""The explicit package list in setup.cfg must cover every focus_eval subpackage on disk."""

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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


def test_a_wheel_carries_tasks_models_and_leaderboard(tmp_path):
    """A non-editable install finds the shipped folders inside the package."""
    import shutil
    import subprocess
    import sys
    import zipfile

    source = tmp_path / "src"  # a copy, so that a stale build/ folder of the checkout cannot leak into the wheel
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, source / name)
    for name in ("focus_eval", "tasks", "models", "leaderboard"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(tmp_path), str(source)], check=True, capture_output=True)
    [wheel] = tmp_path.glob("focus_eval-*.whl")
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

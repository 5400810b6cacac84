"""The explicit package list in setup.cfg must cover every focus_eval subpackage on disk."""

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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

"""The README's quick start as a newcomer follows it: a fresh clone's ``make demo``, then the next commands the README
lists (and the demo prints at its end), each typed as written."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from focus_eval.commands.demo import next_commands

REPO = Path(__file__).resolve().parents[2]


def quick_start_blocks() -> list[list[str]]:
    """The code blocks (indented four spaces) of the README's "Quick start" section, as lists of lines."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    blocks, current = [], []
    for line in section.splitlines():
        if line.startswith("    "):
            current.append(line[4:])
        elif current and line.strip() == "":
            continue
        elif current:
            blocks.append(current)
            current = []
    return blocks + ([current] if current else [])


def test_the_quick_start_has_two_commands_then_the_three_the_demo_prints():
    first, following = quick_start_blocks()[:2]
    assert first == ["make demo", "make test"]
    assert sum(line.startswith("make ") for block in quick_start_blocks() for line in block) == 2
    activate, *commands = following
    assert activate.startswith(". .venv/bin/activate") and ".venv/bin/focus-eval" in activate
    assert commands == next_commands(Path("demo-out"), Path.cwd())
    assert commands[-1].startswith("focus-eval --model medgemma-27b --tasks 'glaucoma_*' --data-root DIR")


def shell(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """``command`` typed into a shell in ``cwd`` after the README's activation line."""
    activate = quick_start_blocks()[1][0].split("#")[0].strip()
    return subprocess.run(["bash", "-c", f"{activate} && {command}"], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


@pytest.mark.slow  # a clone, the demo through make, then each next command
def test_a_fresh_clones_make_demo_then_the_readmes_next_commands_work_as_written(tmp_path, private_cache):
    if sys.prefix == sys.base_prefix or not shutil.which("make") or not shutil.which("git"):
        pytest.skip("needs the tests to run in a virtual environment, make and git")
    if subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True).returncode != 0:
        pytest.skip(f"{REPO} is not a git checkout to clone")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=300)
    # the environment these tests run in stands for the one `make` would create (-o: it is not rebuilt)
    (clone / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    # MAKELEVEL and MAKEFLAGS: a suite started by `make test` would make this a sub-make, which adds its own lines
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "FOCUS_DATA", "FOCUS_OUTPUT", "MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    made = subprocess.run(["make", "-o", ".venv/bin/focus-eval", "demo",
                           "DEMO_ARGS=--models efficientnet-lite0,tiny-vit,tiny-clip --n-boot 50"],
                          cwd=clone, env=env, capture_output=True, text=True, timeout=900)
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    printed = made.stdout.splitlines()
    activate, *commands = quick_start_blocks()[1]
    start = next(i for i, line in enumerate(printed) if line.startswith("[demo] next:"))
    shown = [line.strip() for line in printed[start + 1:]]
    assert re.match(r"\. \S*bin/activate +# or type \S*bin/focus-eval for focus-eval$", shown[0])
    assert shown[1:] == commands  # what the demo prints is what the README lists

    ranked = shell(commands[0], clone, env)
    assert ranked.returncode == 0, ranked.stderr
    assert "Rank intervals" in ranked.stdout and "untrained:overall" in ranked.stdout
    evaluated = shell(commands[1], clone, env)
    assert evaluated.returncode == 0, evaluated.stderr
    assert (clone / "my-results" / "efficientnet-lite0" / "results.jsonl").is_file()
    # the headline command on real data: here with an empty folder for DIR and no GPU, it says what is missing
    empty = tmp_path / "datasets"
    empty.mkdir()
    headline = shell(commands[2].replace(" DIR ", f" {empty} "), clone, env)
    assert headline.returncode == 2 and "usage:" not in headline.stderr
    assert "nothing was run or written" in headline.stderr
    assert f"dataset papila: folder {empty / 'papila'} not found" in headline.stderr

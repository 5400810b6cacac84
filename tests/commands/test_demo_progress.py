"""`focus-eval demo` shows progress from its first seconds: off a terminal, one flushed, timestamped line per
stage (no carriage-return bars); the stage lines' format is `focus_eval.progress`'s."""

import io
import re
import subprocess
import sys
import time

import pytest

from focus_eval.progress import StageLine, bar, factory
from helpers.processes import reaped

LINE = re.compile(r"^\[focus-eval\] \d\d:\d\d:\d\d ")


@pytest.mark.slow
def test_demo_prints_its_first_line_early_and_one_line_per_stage_off_a_terminal(tmp_path):
    started = time.monotonic()
    lines = []  # (seconds since start, raw line)
    with reaped() as procs:
        procs.append(subprocess.Popen([sys.executable, "-m", "focus_eval", "demo", "--out", str(tmp_path / "demo"),
                                       "--models", "tiny-vit", "--n", "40", "--n-boot", "10"],
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp_path))
        for raw in iter(procs[0].stdout.readline, b""):
            lines.append((time.monotonic() - started, raw))
        assert procs[0].wait(timeout=600) == 0, b"".join(r for _, r in lines).decode()
    total = time.monotonic() - started
    text = [raw.decode() for _, raw in lines]
    # the first line comes before the heavy work (a share of the whole run, so a busy machine does not flake it)
    assert lines[0][0] < 0.25 * total, f"first line after {lines[0][0]:.1f} s of {total:.1f} s: {text[0]!r}"
    assert LINE.match(text[0]) and "demo: 1 model(s)" in text[0]
    assert not any(b"\r" in raw for _, raw in lines)  # no bars redrawn in a log
    stages = [t for t in text if LINE.match(t)]
    for dataset in ("synth_desktop", "synth_mobile"):
        assert sum(f"load {dataset} 40 images" in t for t in stages) == 1
        (embed,) = [t for t in stages if f"embed {dataset} " in t]
        assert re.search(rf"embed {dataset} \d+ images [\d.]+ img/s \([\d.]+ s\)$", embed.strip())
        assert sum(f"scored dr_synth_{dataset[6:]} linear_probe" in t for t in stages) == 1
    assert any("model tiny-vit loaded on cpu" in t for t in stages)
    done = next(i for i, t in enumerate(text) if t.startswith("[demo] done in"))
    assert text[done + 1].startswith("[demo] next:")  # then only the next commands, indented
    assert all(t.startswith("    ") for t in text[done + 2:]) and len(text[done + 2:]) >= 3


def test_a_stage_off_a_terminal_is_one_line_with_its_count_rate_and_time():
    out = io.StringIO()
    progress = factory(True, out)
    stage = progress(total=300, desc="embed synth_desktop")
    assert isinstance(stage, StageLine)
    for _ in range(3):
        stage.update(100)
    assert out.getvalue() == ""  # nothing until the stage ends
    stage.close()
    stage.close()
    (line,) = out.getvalue().splitlines()
    assert re.fullmatch(r"\[focus-eval\] \d\d:\d\d:\d\d embed synth_desktop 300 images [\d.]+ img/s \([\d.]+ s\)", line)
    assert factory(False, out) is None


def test_a_long_stage_off_a_terminal_says_how_far_it_is_at_intervals():
    out = io.StringIO()
    stage = StageLine(total=10, desc="prepare brset 448px", stream=out, every=0)
    stage.update(4)
    stage.close()
    first, last = out.getvalue().splitlines()
    assert "prepare brset 448px 4/10 images" in first and "left" in first
    assert "prepare brset 448px 4 images" in last


def test_on_a_terminal_the_stage_is_a_tqdm_bar_with_rate_and_time_left():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    out = Terminal()
    stage = bar(total=10, desc="embed synth_mobile", stream=out)
    stage.update(10)
    stage.close()
    assert "\r" in out.getvalue() and "embed synth_mobile" in out.getvalue() and "img/s" in out.getvalue()

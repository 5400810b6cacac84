"""The command line: instant help without heavy imports, and the data commands chained as a user would."""

import json
import subprocess
import sys
import time

from focus_eval.cli import COMMANDS, main
from focus_eval.data.registry import REAL_DATASETS

HEAVY = ("torch", "transformers", "timm", "open_clip", "sklearn", "pandas", "PIL")


def test_help_is_fast_and_imports_nothing_heavy():
    code = ("import sys, focus_eval.cli as c\n"
            "for name in c.COMMANDS: c.build_parser(name)\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "focus_eval", "--help"], capture_output=True, check=True)
    subprocess.run([sys.executable, "-m", "focus_eval", "run", "--help"], capture_output=True, check=True)
    assert time.perf_counter() - start < 4  # two interpreter starts, each well under 2 s


def test_every_command_has_help(capsys):
    for name in COMMANDS:
        try:
            main([name, "--help"])
        except SystemExit as exc:
            assert exc.code == 0
    assert "usage: focus-eval" in capsys.readouterr().out


def test_synth_then_check_succeeds_for_synthetic_and_real_layouts(tmp_path, capsys):
    synthetic, real = tmp_path / "s", tmp_path / "r"
    assert main(["synth", "--out", str(synthetic), "--n", "40"]) == 0
    assert main(["datasets", "check", "--data-root", str(synthetic), "synth_desktop", "synth_mobile"]) == 0
    assert main(["synth", "--out", str(real), "--layout", "real"]) == 0
    capsys.readouterr()
    assert main(["datasets", "check", "--data-root", str(real), "--json"]) == 0

    report = json.loads(capsys.readouterr().out)["datasets"]
    assert {e["name"] for e in report if e["usable"]} == set(REAL_DATASETS)  # every real layout, all usable
    # the 18 clinical and FunBench datasets, MMC-AMD, OCTID, NEH, RETOUCH and TOP
    assert len(REAL_DATASETS) == 23 and {"mmc_amd", "octid", "neh", "retouch", "top"} <= set(REAL_DATASETS)
    assert all(e["split_check"] == "ok" for e in report)


def test_unknown_model_and_task_suggest_close_names(tmp_path, capsys):
    assert main(["--model", "medgema-4b", "--tasks", "dr_brset", "--data-root", str(tmp_path)]) == 2
    assert "medgemma-4b" in capsys.readouterr().err
    assert main(["--model", "tiny-vit", "--tasks", "glaucoma_mbrset", "--data-root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "glaucoma_" in err and "did you mean" in err.lower()

"""A misspelled report name, a bad report option, a missing RESULTS folder and a misspelled command are refused
with exit status 2 and the name meant, before anything heavy is imported: what the refusal imported is counted in
a fresh interpreter (no analysis module, numpy, pandas, scipy or torch)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers.paired_data import write_paired

HEAVY = ("torch", "pandas", "numpy", "scipy", "sklearn", "jinja2", "focus_eval.analysis.ranks")
PROBE = ("import json, sys\nfrom focus_eval.cli import main\n"
         "try:\n    code = main(sys.argv[1:])\nexcept SystemExit as exit_:\n    code = exit_.code\n"
         f"print(json.dumps([code, sorted(m for m in {HEAVY!r} if m in sys.modules)]))")


def refused(argv: list[str], cwd) -> tuple[int, list[str], str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120, cwd=cwd)
    code, imported = json.loads(done.stdout.strip().splitlines()[-1])
    return code, imported, done.stderr


@pytest.fixture
def results(tmp_path):
    folder = tmp_path / "results" / "m"
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text("")
    return tmp_path / "results"


@pytest.mark.parametrize("argv,expected", [
    (["report", "rnaks"], "unknown analysis 'rnaks'; did you mean ranks?"),
    (["report", "operating-point"], "unknown analysis 'operating-point'; did you mean operating-points"),
    (["report", "pairwise", "--n-boot", "-1"], "argument --n-boot: expected 1 to 100000 resamples, got '-1'"),
    (["report", "pairwise", "--seed", "-3"], "argument --seed: expected a seed"),
    (["report", "ranks", "missing-folder"], "RESULTS missing-folder does not exist"),
    (["report", "operating-points", "--endpoints", "nowhere.yaml"], "--endpoints nowhere.yaml: no such file"),
    (["reprot", "ranks"], "unknown command 'reprot'; did you mean report?"),
    (["leaderbord", "results"], "unknown command 'leaderbord'; did you mean leaderboard?"),
])
def test_refused_with_the_name_meant_before_anything_heavy_is_imported(argv, expected, results, tmp_path):
    argv = [*argv, str(results)] if "missing-folder" not in argv else argv
    code, imported, err = refused(argv, tmp_path)
    assert code == 2, err
    assert expected in err and "Traceback" not in err
    assert imported == []


def test_a_good_report_name_still_runs_and_help_still_lists_the_analyses(results, tmp_path):
    done = subprocess.run([sys.executable, "-m", "focus_eval", "report", "--help"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0 and "operating-points" in done.stdout and "thresholds" in done.stdout
    paired = write_paired(tmp_path / "paired")
    code, imported, err = refused(["report", "ranks", str(paired), "--n-boot", "20"], tmp_path)
    assert code == 0, err
    assert "focus_eval.analysis.ranks" in imported

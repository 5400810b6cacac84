"""FunBench's random-guess row from the datasets' documented test counts (``report funbench --random-guess
documented``): each code's value worked out here from the counts the sources publish (transcribed independently of
the shipped file), the paper's Table 3 row and the difference beside it, the codes within 0.02 of the paper, and
every other code explained in docs/COMPARABILITY.md; a malformed counts file is refused with its name."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from statistics import fmean

import pytest

from focus_eval.cli import main
from focus_eval.errors import FocusError
from focus_eval.metrics.chance import expected_run, form_chances
from focus_eval.results.schema import dumps

ROOT = Path(__file__).resolve().parents[2]
PAPER = {"L1a": 0.250, "L1b": 0.375, "L2a": 0.500, "L2b": 0.500, "L3a": 0.468, "L3b": 0.458, "L3c": 0.250,
         "L3d": 0.269, "L4a": 0.500, "L4b": 0.398, "L4c": 0.319, "L4d": 0.372}


def run(counts, options):
    return expected_run(form_chances(counts, options)).value


# The published test counts (docs/COMPARABILITY.md gives the sources): OCT2017 250 per class, OIA-ODIR's 1,000
# on-site patients with both eyes, IDRiD's grading test set 34 / 5 / 32 / 19 / 13, IDRiD's 27 segmentation test
# images all with microaneurysms and hard exudates, MMC-AMD's 80 photographs and 131 B-scans.
EXPECTED = {
    "L1a": 0.25,
    "L1b": run([2000 + 103 + 80, 1000 + 131], 4),
    "L2b": run([1000, 1000], 2),
    "L3a": fmean([run([0, 27], 2), run([0, 27], 2)]),
    "L4a": run([250, 750], 2),
    "L4b": run([250, 250, 250, 250], 4),
    "L4c": run([34, 5, 32, 19, 13], 5),
}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("documented")
    line = {"model": "m", "method": "multiple_choice", "task": "funbench_l4c_dr_grading_idrid", "dataset": "idrid",
            "output_type": "multiclass", "metrics": {"funbench_f1": 0.4}}
    (root / "out" / "m").mkdir(parents=True)
    (root / "out" / "m" / "results.jsonl").write_text(dumps(line) + "\n")
    out, printed = root / "r.json", io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["report", "funbench", str(root / "out"), "--random-guess", "documented", "--json", str(out),
                     "--n-boot", "0"]) == 0
    plain = root / "plain.json"
    assert main(["report", "funbench", str(root / "out"), "--json", str(plain), "--n-boot", "0"]) == 0
    return json.loads(out.read_text()), json.loads(plain.read_text()), printed.getvalue()


def test_codes_from_documented_counts_beside_the_papers_row(report, capsys):
    documented = report[0]["random_guess"]["documented"]
    assert documented["codes"] == pytest.approx(EXPECTED, abs=1e-12)
    assert documented["paper"]["codes"] == PAPER and documented["paper"]["mean"] == 0.393
    assert documented["difference"] == pytest.approx({c: v - PAPER[c] for c, v in EXPECTED.items()}, abs=1e-12)
    assert all(s["how"] == "exact" for s in documented["sets"])
    assert {c for c, d in documented["difference"].items() if abs(d) <= 0.02} == {"L1a", "L1b", "L2b", "L4a", "L4c"}
    assert set(documented["unpublished"]) >= {"L2a", "L3b", "L3c", "L3d", "L4d"}
    assert "random_guess" in report[1] and "documented" not in report[1]["random_guess"]  # only when asked


def test_printed_beside_the_paper(report):
    text = report[2]
    assert re.search(r"^L4c +0\.304 +0\.319 +-0\.015 +idrid$", text, re.M)
    assert re.search(r"^L2a +- +0\.500 +- +none published$", text, re.M)
    assert "5 of 12 codes within 0.02" in text


def test_every_code_off_or_unpublished_is_explained_code_by_code(report):
    """docs/COMPARABILITY.md's documented-count table has a row per code with the value, and every code not within
    0.02 says why with the numbers that decide it."""
    documented = report[0]["random_guess"]["documented"]
    text = (ROOT / "docs" / "COMPARABILITY.md").read_text(encoding="utf-8")
    section = text.split("#### The random guess from documented test counts")[1].split("\n#")[0]
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| (L[1-4][a-d]) \|.*$", section, re.M)}
    assert set(rows) == set(PAPER)
    for code, row in rows.items():
        value = documented["codes"].get(code)
        assert (f"{value:.3f}" if value is not None else "not published") in row, code
        if value is None or abs(value - PAPER[code]) > 0.02:
            assert re.search(r"\d\.\d{3}", row.split("|")[-2]), f"{code}: the closing note needs its numbers"


def test_a_malformed_counts_file_names_itself(tmp_path):
    from focus_eval.analysis.funbench_guess import documented_counts

    bad = tmp_path / "counts.yaml"
    bad.write_text("citations: {a: x}\nsubtasks:\n  - {code: L4c, subtask: g, form: {options: 5}, classes: [a, b],\n"
                   "     sets: {idrid: {counts: [3], cite: a}}}\n")
    with pytest.raises(FocusError, match="counts.yaml: L4c g idrid: counts must be 2 whole numbers"):
        documented_counts(bad)
    bad.write_text("citations: {}\nsubtasks:\n  - {code: L4c, subtask: g, form: {options: 5}, classes: [a, b],\n"
                   "     sets: {idrid: {counts: [3, 4], cite: nowhere}}}\n")
    with pytest.raises(FocusError, match="unknown citation"):
        documented_counts(bad)
    bad.write_text("subtasks: [{code: L9z}]\n")
    with pytest.raises(FocusError, match="each subtask needs a code"):
        documented_counts(bad)


def test_an_unknown_random_guess_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["report", "funbench", str(tmp_path), "--random-guess", "guessed"])
    assert stop.value.code == 2 and "invalid choice: 'guessed'" in capsys.readouterr().err

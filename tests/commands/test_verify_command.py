"""``focus-eval verify`` and ``focus-eval report bundle`` on the command line: exit 0 only when every line is
verified, 1 when one is not or a bundle is refused (its problems on stderr), 2 for bad input; the table, the
reasons and ``--json``; a bundle written and checked as its receiver checks it."""

import json
import os
import shutil

import pytest
from helpers.records import synthetic_root
from helpers.submissions import honest_results, rewrite_jsonl

from focus_eval.cli import main

pytestmark = pytest.mark.slow  # each command reads every task file (seconds on a loaded machine)


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return synthetic_root(tmp_path_factory, "data", n=40, seed=17)


@pytest.fixture(scope="module")
def results(tmp_path_factory, data_root, index):
    out = tmp_path_factory.mktemp("results")
    honest_results(out, data_root, index=index)
    return out


def test_exit_status_table_reasons_and_json(tmp_path, results, data_root, capsys, monkeypatch):
    monkeypatch.setenv("FOCUS_DATA", str(data_root))  # the data root when --data-root is not given
    assert main(["verify", str(results)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["model", "task", "method", "state", "reason"]
    assert "2 line(s): 2 verified, 0 mismatch, 0 unverifiable" in out
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    rewrite_jsonl(copy / "fake-model" / "results.jsonl", lambda rows: rows[1]["ci"]["auroc"].reverse())
    assert main(["verify", str(copy), "--json", str(tmp_path / "v.json")]) == 1
    out = capsys.readouterr().out
    assert "glaucoma_synth_desktop (fake-model, linear_probe): mismatch" in out
    assert "  - ci.auroc[0]: reported " in out
    record = json.loads((tmp_path / "v.json").read_text())
    assert record["summary"] == {"verified": 1, "mismatch": 1, "unverifiable": 0}
    (bad,) = [line for line in record["lines"] if line["state"] == "mismatch"]
    assert (bad["task"], bad["row"], [f["figure"] for f in bad["findings"]]) == (
        "glaucoma_synth_desktop", 2, ["ci.auroc[0]", "ci.auroc[1]"])


def test_bad_input_exits_2(tmp_path, capsys):
    assert main(["verify"]) == 2
    assert main(["verify", str(tmp_path / "absent")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert main(["verify", str(tmp_path), "--write-digests", "--data-root", str(tmp_path)]) == 2
    assert main(["report", "bundle", str(tmp_path), "-o", str(tmp_path / "b")]) == 2
    assert "--submitter NAME" in capsys.readouterr().err


def test_a_bundle_is_written_checked_and_refused_once_tampered(tmp_path, results, data_root, capsys):
    bundle = tmp_path / "bundle"
    assert main(["report", "bundle", str(results), "-o", str(bundle), "--submitter", "Clinic B"]) == 0
    printed = capsys.readouterr().out
    digest = printed.split("to send beside the bundle): ")[1].split()[0]
    assert main(["verify", str(bundle), "--data-root", str(data_root)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:2] == ["submitter", "model"]
    assert "Clinic B" in out and f"bundle digest {digest}" in out
    os.chmod(bundle / "results" / "fake-model" / "results.jsonl", 0o744)
    (bundle / "results" / "fake-model" / "run.py").write_text("import os\n")
    assert main(["verify", str(bundle)]) == 1
    err = capsys.readouterr().err
    assert f"{bundle}: bundle refused (3 problem(s)):" in err
    assert "  - results/fake-model/results.jsonl: executable (mode -rwxr--r--); a bundle holds data only" in err
    assert "  - results/fake-model/run.py: not an allowed kind of file" in err

"""grid plan checks the data root as 'datasets check' does (missing datasets named; an empty or missing data
root is an error unless --allow-missing); grid status reports a corrupt unit file as corrupt and goes on."""

from __future__ import annotations

import shutil

import pytest

from focus_eval.cli import main
from focus_eval.grid.status import unit_state
from focus_eval.results.layout import OutputLayout
from focus_eval.synth.datasets import write_synthetic

EXPECTED = {"task_hash": "t1", "preset_hash": "p1", "method": "prompt", "seed": 0, "n_boot": 1000}
PLAN = ["grid", "plan", "--models", "tiny-vit", "--tasks", "synth", "--no-count"]


def test_plan_without_a_data_root_is_an_error_unless_allowed(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("FOCUS_DATA", raising=False)
    out = tmp_path / "plan.yaml"
    assert main([*PLAN, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no data root" in err and "synth_desktop (expected synth_desktop/)" in err and not out.exists()
    assert main([*PLAN, "--data-root", str(tmp_path / "nowhere"), "-o", str(out)]) == 2
    assert f"the data root {tmp_path / 'nowhere'} does not exist" in capsys.readouterr().err
    assert main([*PLAN, "--allow-missing", "-o", str(out)]) == 0
    assert "warning: no data root" in capsys.readouterr().err and out.is_file()


def test_plan_names_the_missing_datasets(tmp_path, capsys):
    root = tmp_path / "data"
    root.mkdir()
    out = tmp_path / "plan.yaml"
    assert main([*PLAN, "--data-root", str(root), "-o", str(out)]) == 2  # an empty data root
    assert "2 of the plan's 2 datasets are missing" in capsys.readouterr().err
    write_synthetic(root, n=20, seed=0)
    assert main([*PLAN, "--data-root", str(root), "-o", str(tmp_path / "ok.yaml")]) == 0
    shutil.rmtree(root / "synth_mobile")
    assert main([*PLAN, "--data-root", str(root), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "1 of the plan's 2 datasets are missing" in err and "synth_mobile (expected synth_mobile/)" in err


@pytest.mark.parametrize("content,phrase", [
    ("[1, 2]", "not a JSON object"),
    ('{"n_expected": "many"}', "corrupt"),
    ("{\"task_hash\": ", "corrupt meta file"),
    (b"\xff\xfe\x00garbage", "corrupt meta file"),
])
def test_a_corrupt_unit_file_is_reported_and_status_goes_on(content, phrase, tmp_path):
    layout = OutputLayout(tmp_path / "m")
    samples = layout.samples("dr_x", "prompt")
    samples.parent.mkdir(parents=True)
    samples.write_text('{"image_id": "a"}\n')
    meta = layout.meta("dr_x", "prompt")
    meta.write_bytes(content if isinstance(content, bytes) else content.encode())
    state = unit_state(layout.root, "dr_x", "prompt", EXPECTED)
    assert state.state == "partial" and phrase in state.reason


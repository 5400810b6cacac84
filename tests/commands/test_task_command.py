"""``focus-eval tasks``: listing by pattern, suggestions for unknown names, counts from --data-root."""

from pathlib import Path

from focus_eval.cli import main
from focus_eval.data.records import DatasetLoad, ImageRecord
from focus_eval.errors import DataError


def listed_names(out: str) -> list[str]:
    lines = out.strip().splitlines()
    assert lines[0].split()[:6] == ["task", "dataset", "target", "cohort", "proxy", "version"]
    return [line.split()[0] for line in lines[1:] if line and not line.startswith(" ")]


def test_pattern_lists_exactly_the_glaucoma_tasks(capsys):
    assert main(["tasks", "glaucoma_*"]) == 0
    out = capsys.readouterr().out
    assert listed_names(out) == ["glaucoma_brset", "glaucoma_g1020", "glaucoma_papila", "glaucoma_refuge"]
    assert "cup/disc finding" in out


def test_listing_shows_proxy_tasks_marked(capsys):
    assert main(["tasks", "rfmid"]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[1:]}
    assert rows["referable_dr_rfmid"][3:5] == ["-", "yes"] and rows["dr_rfmid"][3:5] == ["-", "no"]


def test_unknown_task_fails_with_a_suggestion(capsys):
    assert main(["tasks", "glaucoma_mbrset"]) == 2
    err = capsys.readouterr().err
    assert "glaucoma_mbrset" in err and "did you mean glaucoma_brset" in err


def test_data_root_counts_test_split_and_marks_missing_datasets(tmp_path, monkeypatch, capsys):
    import focus_eval.data.registry as registry

    def fake_load(name, data_root, cohort=None, split_file=None):
        if name != "papila":
            raise DataError("dataset folder not found", file=str(Path(data_root) / name))
        labels = [("test", 1), ("test", 0), ("test", None), ("test", 1), ("train", 1)]
        records = [ImageRecord("papila", f"i{k}", f"p{k}", Path("x"), "x", split=s, glaucoma=g)
                   for k, (s, g) in enumerate(labels)]
        return DatasetLoad(name="papila", root=Path(data_root), records=records)

    monkeypatch.setattr(registry, "load_dataset", fake_load)
    assert main(["tasks", "glaucoma_papila,glaucoma_refuge", "--data-root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:] if line.startswith("glaucoma_")}
    assert rows["glaucoma_papila"][6:8] == ["3", "2"]
    assert rows["glaucoma_refuge"][6:8] == ["missing", "missing"]
    assert "refuge: missing" in out


def test_groups_flag_lists_groups(capsys):
    assert main(["tasks", "dr_idrid", "--groups"]) == 0
    out = capsys.readouterr().out
    assert any(line.split()[:2] == ["synth", "macro_mean"] for line in out.splitlines())

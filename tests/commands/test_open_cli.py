"""lm-eval's vocabulary on the focus-eval command line: each spelling works, or fails with a message naming the
focus-eval way; a missing data root is said once and leaves no folder; a GPU asked for must be visible; the
Python API takes the same arguments as the command line."""

import math

import pytest

import focus_eval
from focus_eval.cli import build_parser, main
from focus_eval.commands.run import LM_EVAL_ONLY, task_files
from focus_eval.results.schema import read_jsonl
from focus_eval.task import TaskIndex
from helpers.open_fixtures import clean_cards, save_tiny_vit, write_clinic  # noqa: F401

BASE = ["--model", "tiny-vit", "--tasks", "dr_synth_desktop"]


def parse(*args):
    return build_parser("run").parse_args([*BASE, *args])


@pytest.fixture(autouse=True)
def no_data_root_in_environment(monkeypatch):
    monkeypatch.delenv("FOCUS_DATA", raising=False)


@pytest.mark.parametrize("lm_eval, focus, value, expected", [
    ("--model_args", "--model-args", "pretrained=org/name", "pretrained=org/name"),
    ("--batch_size", "--batch-size", "8", 8),
    ("--include_path", "--include-path", "tasks-dir", ["tasks-dir"]),
    ("--trust_remote_code", "--trust-remote-code", None, True),
])
def test_lm_eval_spellings_mean_the_focus_eval_options(lm_eval, focus, value, expected):
    extra = [value] if value is not None else []
    dest = focus.lstrip("-").replace("-", "_")
    assert getattr(parse(lm_eval, *extra), dest) == expected == getattr(parse(focus, *extra), dest)


def test_output_path_spellings(tmp_path):
    for flag in ("--output_path", "--output-path", "-o"):
        assert parse(flag, str(tmp_path)).output_path == tmp_path


def test_limit_takes_a_count_or_a_fraction(capsys):
    assert parse("--limit", "0.1").limit == 0.1 and parse("--limit", "25").limit == 25
    for bad in ("0", "1.5", "-3", "all"):
        with pytest.raises(SystemExit):
            parse("--limit", bad)
    assert "expected a number of images (1, 2, ...) or a fraction (0 < f < 1), got 'all'" in capsys.readouterr().err


def test_num_fewshot_zero_is_accepted_and_anything_else_is_an_error(tmp_path, capsys):
    assert parse("--num_fewshot", "0").num_fewshot == 0
    assert main([*BASE, "--num_fewshot", "5", "--data-root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--num_fewshot 5: focus-eval has no few-shot prompting" in err and "pass --num_fewshot 0" in err


def test_log_samples_says_samples_are_always_written(tmp_path, capsys):
    main([*BASE, "--log_samples", "-o", str(tmp_path / "out")])
    assert "--log_samples: per-image samples are always written (<output>/<model>/samples/)" in \
        capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--gen_kwargs", "--max_batch_size", "--use_cache", "--apply_chat_template",
                                  "--wandb_args", "--verbosity"])
def test_lm_eval_flags_without_a_counterpart_name_the_focus_eval_way(flag, capsys):
    with pytest.raises(SystemExit):
        parse(flag, "x")
    err = capsys.readouterr().err
    assert f"argument {flag}: is an lm-eval option focus-eval does not have: {LM_EVAL_ONLY[flag]}" in err


def test_tasks_list_needs_no_model(capsys):
    assert main(["--tasks", "list"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:3] == ["task", "dataset", "target"]
    assert "dr_brset" in out and "\ngroup " in out
    assert main(["--tasks", "dr_brset"]) == 2
    assert "--model is required" in capsys.readouterr().err


def test_tasks_given_as_yaml_files(tmp_path):
    path = tmp_path / "mine" / "dr_brset_mine.yaml"
    path.parent.mkdir()
    path.write_text("task: dr_brset_mine\ninclude: _base_dr.yaml\ndataset: brset\nmetadata:\n  version: 1\n"
                    "  label_rule: as dr_brset\n")
    (tmp_path / "mine" / "notes.yaml").write_text("not: a task\n")  # a neighbour that is not a task
    spec, include = task_files(f"dr_idrid,{path}", ["extra"])
    assert spec == "dr_idrid,dr_brset_mine" and include == ["extra", str(path)]
    index = TaskIndex([path])
    assert index.get("dr_brset_mine").path == path and index.expand(spec) == ["dr_idrid", "dr_brset_mine"]
    with pytest.raises(Exception, match="task file not found"):
        task_files(str(tmp_path / "missing.yaml"), [])


def test_no_data_root_is_said_once_and_leaves_no_folder(tmp_path, capsys):
    out = tmp_path / "out"
    assert main([*BASE, "-o", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("no data root") == 1 and "--data-root DIR (or set FOCUS_DATA)" in err
    assert not out.exists()


def test_device_cuda_without_a_visible_gpu_is_an_error(tmp_path, monkeypatch, capsys):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "out"
    assert main([*BASE, "--device", "cuda", "--data-root", str(tmp_path), "-o", str(out)]) == 2
    assert "--device cuda: 0 GPU(s) visible to torch; pass --device cpu" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.slow
def test_an_lm_eval_style_command_runs_end_to_end(tmp_path, capsys, clean_cards):  # noqa: F811
    clinic = write_clinic(tmp_path / "clinic")
    vit = save_tiny_vit(tmp_path / "vit")
    task = tmp_path / "my_tasks" / "dr_clinic_mine.yaml"
    task.parent.mkdir()
    task.write_text("task: dr_clinic_mine\ninclude: _base_dr.yaml\ndataset: clinic\ntag: []\nmetadata:\n"
                    "  version: 1\n  label_rule: grade >= 1\n")
    folder = tmp_path / "more_tasks"
    folder.mkdir()
    (folder / "glaucoma_clinic_mine.yaml").write_text(task.read_text().replace("dr", "glaucoma"))
    out = tmp_path / "out"
    rc = main(["--model", "hf_vision", "--model_args", f"pretrained={vit}", "--tasks",
               f"{task},glaucoma_clinic_mine", "--include_path", str(folder), "--dataset-path", f"clinic={clinic}",
               "--data-root", str(tmp_path), "--batch_size", "8", "--output_path", str(out), "--num_fewshot", "0",
               "--log_samples", "--limit", "0.5", "--n-boot", "50", "--num-workers", "0", "--no-progress",
               "--cache-dir", str(tmp_path / "cache")])
    assert rc == 0, capsys.readouterr().err
    # a limited run writes where a full run's results cannot be mistaken for it (below the model folder)
    rows = {r["task"]: r for r in read_jsonl(next((out / "hf_vision-vit").rglob("results.jsonl")))}
    assert set(rows) == {"dr_clinic_mine", "glaucoma_clinic_mine"}
    assert rows["dr_clinic_mine"]["n"] == math.ceil(0.5 * 12)  # --limit 0.5: half of each 12-image test split
    assert all(r["dataset"] == "clinic" and r["model"] == "hf_vision-vit" for r in rows.values())


@pytest.mark.slow
def test_the_python_api_takes_the_same_arguments(tmp_path, clean_cards):  # noqa: F811
    clinic = write_clinic(tmp_path / "clinic")
    vit = save_tiny_vit(tmp_path / "vit")
    rows = focus_eval.evaluate(model="hf_vision", model_args={"pretrained": str(vit), "name": "api-vit"},
                               tasks=["dr_clinic"], data_root=tmp_path, dataset_path=[f"clinic={clinic}"],
                               output_path=tmp_path / "out", n_boot=50, num_workers=0, progress=False,
                               cache_dir=tmp_path / "cache")
    assert [(r["model"], r["task"], r["method"]) for r in rows] == [("api-vit", "dr_clinic", "linear_probe")]
    assert rows[0]["n"] == 12 and (tmp_path / "out" / "api-vit" / "results.jsonl").is_file()

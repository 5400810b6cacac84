"""The run options, declared once: every field has a flag, help and the parser's default; a --config file (or a
run manifest) gives a run, the command line wins over it, unknown keys are named with their file; the grid's
jobs and 'focus-eval sft' read the same declaration."""

import json
from dataclasses import MISSING, fields
from pathlib import Path

import pytest
import yaml

from focus_eval.cli import build_parser, main
from focus_eval.errors import FocusError
from focus_eval.options import DECLARED, RunOptions, config_values, from_namespace, to_argv
from focus_eval.results.schema import read_jsonl

TASK = "dr_synth_desktop"


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    from focus_eval.synth.datasets import write_synthetic

    root = tmp_path_factory.mktemp("data")
    write_synthetic(root, n=40, seed=3)
    return root


def parsed(argv: list[str]):
    """The run command's namespace as the command line makes it (with the arguments it was given)."""
    args = build_parser("run").parse_args(argv)
    args._argv = argv
    return args


def test_every_field_has_a_flag_and_help_and_the_parsers_defaults_are_the_fields(monkeypatch):
    monkeypatch.delenv("FOCUS_DATA", raising=False)
    monkeypatch.delenv("FOCUS_OUTPUT", raising=False)
    actions = {a.dest: a for a in build_parser("run")._actions}
    values = from_namespace(parsed([]))
    for f in fields(RunOptions):
        if f.name == "argv":  # recorded by the run, not given
            continue
        assert actions[f.name].option_strings and actions[f.name].help, f.name
        default = None if f.default is MISSING and f.default_factory is MISSING else (
            f.default_factory() if f.default_factory is not MISSING else f.default)
        assert values[f.name] == default, f.name
    assert set(values) == {f.name for f in fields(RunOptions)} - {"argv"}
    # lm-eval's spellings reach the same fields
    lm = from_namespace(parsed(["--model_args", "a=1", "--batch_size", "4", "--output_path", "o",
                                "--include_path", "t", "--trust_remote_code"]))
    assert (lm["model_args"], lm["batch_size"], lm["output_path"], lm["include_path"], lm["trust_remote_code"]) == \
        ("a=1", 4, Path("o"), ["t"], True)


def test_values_travel_through_a_command_line_and_back():
    values = {"seed": 3, "limit": 0.25, "probe_select": "auroc", "use_prepared": False, "resume": False,
              "split_files": {"synth_desktop": "/s.csv"}, "methods": ["zero_shot", "linear_probe"],
              "include_path": ["/a", "/b"], "zs_scale": 1.5, "batch_size": 8}
    again = from_namespace(parsed(["--tasks", "x", *to_argv(values)]))
    assert {k: again[k] for k in values} == values


def test_config_values_use_the_command_lines_parsers_and_name_file_and_key(tmp_path):
    assert config_values({"no-prepared": True, "--batch-size": 8, "split-file": ["d=/x.csv"], "limit": "0.5"},
                         "run.yaml") == {"use_prepared": False, "batch_size": 8, "split_files": {"d": "/x.csv"},
                                         "limit": 0.5}
    with pytest.raises(FocusError, match=r"run.yaml: unknown option 'prob_select'; did you mean probe_select"):
        config_values({"prob_select": "auroc"}, "run.yaml")
    with pytest.raises(FocusError, match=r"run.yaml: limit: expected a number of images"):
        config_values({"limit": 0}, "run.yaml")
    with pytest.raises(FocusError, match=r"run.yaml: probe_select: expected one of log_loss, auroc"):
        config_values({"probe_select": "brier"}, "run.yaml")
    with pytest.raises(FocusError, match=r"run.yaml: overwrite: expected true or false"):
        config_values({"overwrite": "yes"}, "run.yaml")
    with pytest.raises(FocusError, match="both set batch_size"):
        config_values({"batch_size": 8, "batch-size": 4}, "run.yaml")


def test_the_command_line_wins_over_the_file_even_when_it_gives_a_default(tmp_path):
    from focus_eval.commands.run import run_values

    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"model": "tiny-vit", "tasks": TASK, "seed": 3, "n_boot": 50,
                                      "no-prepared": True}))
    values = run_values(parsed(["--config", str(config), "--seed", "0", "--tasks", "glaucoma_synth_desktop"]))
    assert (values["model"], values["tasks"], values["seed"], values["n_boot"], values["use_prepared"]) == \
        ("tiny-vit", "glaucoma_synth_desktop", 0, 50, False)
    assert run_values(parsed(["--config", str(config)]))["seed"] == 3


def test_unknown_key_in_a_config_file_stops_the_run_naming_file_and_key(tmp_path, capsys):
    config = tmp_path / "bad.yaml"
    config.write_text("model: tiny-vit\ntasks: dr_synth_desktop\nnboot: 10\n")
    assert main(["run", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert f"{config}: unknown option 'nboot'" in err and "n_boot" in err
    config.write_text("[1, 2]\n")
    assert main(["--config", str(config)]) == 2
    assert "expected a mapping" in capsys.readouterr().err


def test_a_config_file_runs_and_its_manifest_runs_the_same_units_again(tmp_path, data_root, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({
        "model": "tiny-vit", "tasks": [TASK], "data-root": str(data_root), "output_path": "results",
        "cache_dir": str(tmp_path / "cache"), "n_boot": 40, "num-workers": 0, "no-progress": True, "seed": 5}))
    assert main(["--config", str(config), "--seed", "2"]) == 0
    assert "finished 1, already done 0" in capsys.readouterr().out
    model_dir = tmp_path / "results" / "tiny-vit"
    (manifest,) = model_dir.glob("run-*.json")
    options = json.loads(manifest.read_text())["options"]
    assert options["seed"] == 2 and options["n_boot"] == 40 and options["progress"] is False  # the line wins
    assert options["output_path"] == str(model_dir.parent) and "argv" not in options
    assert set(options) == set(DECLARED) - {"argv"}
    first = (model_dir / "results.jsonl").read_text()
    assert json.loads(first)["extra"]["seed"] == 2 and json.loads(first)["n_boot"] == 40

    monkeypatch.chdir(data_root)  # paths in the manifest are absolute: it runs from anywhere
    assert main(["run", "--config", str(manifest)]) == 0
    assert "finished 0, already done 1" in capsys.readouterr().out
    assert (model_dir / "results.jsonl").read_text() == first
    assert read_jsonl(model_dir / "results.jsonl")[0]["task"] == TASK


def test_the_grids_eval_jobs_pass_every_run_option_of_the_plan(tmp_path):
    from focus_eval.grid.jobs import job_argv
    from focus_eval.grid.plan import read_plan

    plan_file = tmp_path / "plan.yaml"
    assert main(["grid", "plan", "--models", "tiny-vit,tiny-medgemma", "--tasks", TASK, "--no-count",
                 "--finetune", "--finetune-cells", "synth_desktop:dr", "--probe-select", "auroc", "--no-prepared",
                 "--limit", "0.5", "--allow-missing", "--output-path", str(tmp_path / "r"), "-o", str(plan_file)]) == 0
    plan = read_plan(plan_file)
    evals = [j for j in plan.jobs if j.kind == "eval"]
    assert evals
    for job in evals:
        argv = job_argv(plan.settings, job)
        assert argv[argv.index("--probe-select") + 1] == "auroc" and "--no-prepared" in argv
        values = from_namespace(parsed(argv))
        assert (values["probe_select"], values["use_prepared"], values["limit"]) == ("auroc", False, 0.5)
    (training,) = [j for j in plan.jobs if j.kind == "sft"]
    sft = build_parser("sft").parse_args(job_argv(plan.settings, training)[1:])
    assert sft.use_prepared is False and sft.seed == 42  # sft's own seed, not the evaluation's

    # a plan written before these options existed is read with their defaults
    raw = yaml.safe_load(plan_file.read_text())
    for key in ("probe_select", "use_prepared", "verify_images", "split_files", "models_path", "dataset_path"):
        raw["settings"].pop(key)
    raw["settings"]["batch_size"] = "8"
    plan_file.write_text(yaml.safe_dump(raw))
    old = read_plan(plan_file)
    assert (old.settings.probe_select, old.settings.use_prepared, old.settings.batch_size) == ("log_loss", True, 8)
    assert "--probe-select" in job_argv(old.settings, evals[0]) and "--no-prepared" not in job_argv(old.settings,
                                                                                                    evals[0])


def test_the_api_checks_keywords_against_the_declaration():
    from focus_eval.api import run_options

    with pytest.raises(FocusError, match="unknown option 'probe_selct'; did you mean probe_select"):
        run_options("tiny-vit", TASK, probe_selct="auroc")
    with pytest.raises(FocusError, match="option batch_size: expected a positive number or 'auto'"):
        run_options("tiny-vit", TASK, batch_size=0)


def test_sft_shares_the_run_options_it_means_the_same_by():
    from focus_eval.finetune.sft import SFTConfig
    from focus_eval.options import declared

    shared = declared(SFTConfig)
    assert set(shared) == {"data_root", "model_args", "include_path", "seed", "device", "num_workers",
                           "use_prepared", "trust_remote_code", "progress"}
    for name, d in shared.items():
        assert d.spec.flags == DECLARED[name].spec.flags, name
    args = build_parser("sft").parse_args(["--model", "m", "--dataset", "d", "--target", "t", "--no-prepared"])
    assert (args.seed, args.use_prepared, args.device, args.model_args) == (42, False, None, "")
    with pytest.raises(SystemExit):  # sft keeps its own flags: no lm-eval spellings
        build_parser("sft").parse_args(["--model", "m", "--dataset", "d", "--target", "t", "--model_args", "a=1"])


def test_every_option_declared_as_changing_numbers_is_in_the_units_fingerprint(data_root):
    from focus_eval.runner.run import Runner

    runner = Runner(RunOptions(model="tiny-vit", tasks=TASK, data_root=data_root, device="cpu", progress=False))
    fingerprint = runner.fingerprint(runner.units[0])
    numbers = {d.spec.fingerprint or name for name, d in DECLARED.items() if d.spec.numbers}
    assert numbers and numbers <= set(fingerprint)
    from focus_eval.runner.provenance import EXPLAIN

    assert {EXPLAIN[name] for name in ("seed", "probe_select", "use_prepared")} == \
        {"--seed", "--probe-select", "--no-prepared"}

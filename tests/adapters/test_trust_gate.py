"""One trust gate before any import of code focus-eval does not ship: a preset's ``adapter: module:Class`` and its
``source: package:pkg.sub/file`` (finding ``pkg.sub`` imports ``pkg``) both stop without --trust-remote-code
before the user package's ``__init__`` runs; entry points of installed packages pass, and one that fails to
import is skipped with one warning while every other command works."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from helpers.open_fixtures import broken_distribution

from focus_eval import registry
from focus_eval.errors import FocusError


def _package(root: Path, name: str) -> Path:
    """A package ``name`` (with a subpackage ``sub`` holding a file) whose ``__init__`` writes a marker file."""
    marker = root / f"{name}.imported"
    (root / name / "sub").mkdir(parents=True)
    (root / name / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n"
                                             "from focus_eval.errors import FocusError\n"
                                             "class Adapter:\n    def __init__(self, *args, **kwargs):\n"
                                             "        raise FocusError('the user adapter ran')\n")
    (root / name / "sub" / "__init__.py").write_text("")
    (root / name / "sub" / "weights.pth").write_bytes(b"not a checkpoint")
    return marker


def _preset(folder: Path, name: str, **fields) -> Path:
    raw = {"name": name, "family": "vm", "domain": "general", "adapter": "timm_vision",
           "methods": ["linear_probe"], "settings": {"timm_model": "tf_efficientnet_lite0", "pooling": "pooled"},
           "preprocessing": {"size": 32, "resize": "squash", "mean": [0.5] * 3, "std": [0.5] * 3}, **fields}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.parametrize("field, value, named", [
    ("source", "package:{pkg}.sub/weights.pth", "field 'source'"),
    ("adapter", "{pkg}:Adapter", "field 'adapter'"),
])
def test_a_preset_field_naming_user_code_stops_before_the_package_runs(tmp_path, monkeypatch, field, value, named):
    from focus_eval.adapters import load_adapter
    from focus_eval.presets import load_preset

    pkg = f"gate_{field}_pkg"
    marker = _package(tmp_path, pkg)
    monkeypatch.syspath_prepend(str(tmp_path))
    preset = load_preset(str(_preset(tmp_path, "side-door", **{field: value.format(pkg=pkg)})))
    with pytest.raises(FocusError) as refused:
        load_adapter(preset, trust_remote_code=False)
    message = str(refused.value)
    assert named in message and pkg in message and "--trust-remote-code" in message
    assert not marker.exists()  # the package's __init__ never ran
    with pytest.raises(FocusError) as later:  # with the flag the import proceeds (the file is then no checkpoint)
        load_adapter(preset, trust_remote_code=True)
    assert marker.exists() and "not part of focus-eval" not in str(later.value)


def test_a_preset_that_unpickles_any_object_needs_the_flag_before_the_file_is_read(tmp_path):
    import torch

    from focus_eval.adapters import load_adapter
    from focus_eval.presets import load_preset

    marker = tmp_path / "unpickled"
    weights = tmp_path / "weights.pth"  # unpickling it runs code: it writes the marker
    torch.save({"state": {}, "recipe": _Writes(str(marker))}, weights)
    preset = load_preset(str(_preset(tmp_path, "pickled", weights=str(weights), settings={
        "timm_model": "tf_efficientnet_lite0", "pooling": "pooled", "trust_pickle": True})))
    with pytest.raises(FocusError, match=r"settings.trust_pickle\) lets its weights file unpickle .*--trust-remote"):
        load_adapter(preset, trust_remote_code=False)
    assert not marker.exists()


class _Writes:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_top_level_packaged_file_is_found_without_importing_the_package(tmp_path, monkeypatch):
    from focus_eval.adapters import check_code
    from focus_eval.adapters.checkpoints import resolve_weights
    from focus_eval.presets import load_preset

    marker = _package(tmp_path, "gate_top_pkg")
    (tmp_path / "gate_top_pkg" / "weights.pth").write_bytes(b"x")
    monkeypatch.syspath_prepend(str(tmp_path))
    preset = load_preset(str(_preset(tmp_path, "top", source="package:gate_top_pkg/weights.pth")))
    check_code(preset, trust_remote_code=False)  # the shipped efficientnet-lite0 preset is of this kind
    assert resolve_weights(preset).name == "weights.pth" and not marker.exists()


def test_require_trust_names_the_field_the_module_and_the_flag():
    registry.require_trust("preset 'p' (field 'source')", "pkg.sub", True, noun="package")
    with pytest.raises(FocusError, match=r"preset 'p' \(field 'source'\) names the Python package pkg.sub, .*"
                                         r"module 'pkg.sub' .* pass --trust-remote-code"):
        registry.require_trust("preset 'p' (field 'source')", "pkg.sub", False, noun="package")


# ----- plugins of other packages


@pytest.fixture
def broken_plugin(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "_WARNED", set())
    groups = {"focus_eval.models": "broken_models", "focus_eval.tasks": "broken_tasks",
              "focus_eval.gate_test_things": "broken_thing"}
    monkeypatch.syspath_prepend(str(broken_distribution(tmp_path, "brokenplug", "brokenplug_mod", groups)))
    return groups


@pytest.mark.slow
def test_a_plugin_that_fails_to_import_is_skipped_with_one_warning(broken_plugin, capsys):
    from focus_eval.cli import main

    assert main(["models"]) == 0 and main(["models"]) == 0
    assert main(["tasks", "dr_synth_*"]) == 0
    captured = capsys.readouterr()
    assert "dr_synth_desktop" in captured.out and "efficientnet-lite0" in captured.out
    warnings = [line for line in captured.err.splitlines() if "skipped entry point" in line]
    assert len(warnings) == 2, captured.err  # one per entry point, however often it is read
    for line, name in zip(sorted(warnings), ["broken_models", "broken_tasks"]):
        assert name in line and "distribution brokenplug 0.1" in line and "this plugin is broken" in line
    # and every listing names the plugin beneath itself, the second listing of a process too
    notes = [line for line in captured.err.splitlines() if "not listed: entry point" in line]
    assert [n.split("not listed: entry point ")[1].split(" ")[0] for n in notes] == \
        ["broken_models", "broken_models", "broken_tasks"], captured.err
    assert all("distribution brokenplug 0.1" in n and "this plugin is broken" in n for n in notes)


@pytest.fixture
def broken_registry_plugin(tmp_path, monkeypatch):
    """A broken plugin in the registries that listings import: analyses, datasets, methods, tiny models."""
    from focus_eval.analysis import ANALYSES
    from focus_eval.data.registry import READERS
    from focus_eval.runner.methods import METHODS
    from focus_eval.tiny import TINY_MODELS

    monkeypatch.setattr(registry, "_WARNED", set())
    monkeypatch.setattr(registry, "_BROKEN", {}, raising=False)
    groups = {"focus_eval.analyses": "broken_analysis", "focus_eval.datasets": "broken_dataset",
              "focus_eval.methods": "broken_method", "focus_eval.tiny": "broken_tiny"}
    monkeypatch.syspath_prepend(str(broken_distribution(tmp_path, "brokenreg", "brokenreg_mod", groups)))
    for found in (ANALYSES, READERS, METHODS, TINY_MODELS):  # read the entry points again, with the plugin
        monkeypatch.setattr(found, "_entry_points_read", False)
    yield groups
    for found, name in ((ANALYSES, "broken_analysis"), (READERS, "broken_dataset"), (METHODS, "broken_method"),
                        (TINY_MODELS, "broken_tiny")):
        found.unregister(name)


def test_a_broken_registry_plugin_is_named_in_every_listing_that_would_hold_it(broken_registry_plugin, tmp_path,
                                                                               capsys):
    from focus_eval.cli import main
    from focus_eval.commands.report import listing
    from focus_eval.synth.datasets import write_synthetic
    from focus_eval.tiny import tiny_names

    text = listing()  # report's help and 'focus-eval report' alone
    assert "funbench" in text and "not listed: entry point broken_analysis" in text and "brokenreg 0.1" in text
    assert main(["report"]) == 0 and "not listed: entry point broken_analysis" in capsys.readouterr().out
    write_synthetic(tmp_path / "data", n=10, seed=1)
    assert main(["datasets", "check", "--data-root", str(tmp_path / "data")]) == 0
    captured = capsys.readouterr()
    assert "synth_desktop" in captured.out and "this plugin is broken" in captured.err
    assert "not listed: entry point broken_dataset = brokenreg_mod:THING" in captured.err
    assert "tiny-llava" in tiny_names() and "broken_tiny" not in tiny_names()
    from focus_eval.runner.methods import METHODS  # the runner looks for a method to stand in among these

    assert "prompt" in dict(METHODS.loaded()) and "broken_method" not in dict(METHODS.loaded())
    assert registry.unlisted("focus_eval.methods")[0].startswith("not listed: entry point broken_method")


def test_a_registry_entry_of_a_broken_plugin_fails_only_when_used(broken_plugin, capsys):
    things = registry.Registry("thing", entry_point_group="focus_eval.gate_test_things")
    things.register("fine", "focus_eval.errors:FocusError")
    assert sorted(things.names()) == ["broken_thing", "fine"] and things.get("fine") is FocusError
    with pytest.raises(FocusError, match="thing 'broken_thing': entry point broken_thing .* brokenplug 0.1"):
        things.get("broken_thing")
    assert capsys.readouterr().err.count("skipped entry point broken_thing") == 1


def test_an_entry_point_without_an_installed_distribution_needs_the_flag(capsys, monkeypatch):
    from importlib.metadata import EntryPoint

    monkeypatch.setattr(registry, "_WARNED", set())
    loose = EntryPoint("loose", "gate_loose_mod:THING", "focus_eval.models")
    assert registry.load_entry_point(loose) is None
    assert "--trust-remote-code" in capsys.readouterr().err


def test_a_run_check_stops_at_the_gate_before_locating_a_packaged_source(tmp_path, monkeypatch, capsys):
    """``--check`` (and every run, which checks first) locates a preset's weights before loading anything; for
    ``package:pkg.sub/file`` that lookup imports ``pkg``, so the gate comes first there too."""
    from focus_eval.cli import main
    from focus_eval.synth.datasets import write_synthetic

    marker = _package(tmp_path, "gate_check_pkg")
    monkeypatch.syspath_prepend(str(tmp_path))
    preset = _preset(tmp_path, "checked", source="package:gate_check_pkg.sub/weights.pth")
    write_synthetic(tmp_path / "data", n=10, seed=1)
    argv = ["--model", str(preset), "--tasks", "dr_synth_desktop", "--data-root", str(tmp_path / "data"),
            "--output-path", str(tmp_path / "out"), "--check"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "field 'source'" in err and "gate_check_pkg" in err and "--trust-remote-code" in err
    assert not marker.exists()  # the package's __init__ never ran
    assert main([*argv, "--trust-remote-code"]) == 0 and marker.exists()

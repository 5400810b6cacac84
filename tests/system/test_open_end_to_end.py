"""Bring your own model and data, end to end: three user models (a family adapter on a local folder, a preset
file, and a plugin package installed from a wheel) evaluated on a manifest dataset the test writes, then one
leaderboard that shows all three with where each came from.

The plugin wheel is built with ``pip wheel`` and installed with ``pip install --no-index --target`` into a
temporary folder on the commands' PYTHONPATH: its entry points are found exactly as from site-packages, while
test runs sharing this environment never see it; the folder is removed at the end."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from focus_eval.results.schema import read_jsonl
from helpers.open_fixtures import IMAGE_PREFIX, PATIENT_PREFIX, PRESET, save_tiny_vit, write_clinic, write_plugin_project

PLUGIN = "focus-plugin-demo"


def pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args, "--no-index", "--no-deps", "--quiet",
                    "--disable-pip-version-check"], check=True, capture_output=True, timeout=300)


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory):
    """Environment for subprocesses in which the plugin package is installed."""
    root = write_plugin_project(tmp_path_factory.mktemp("plugin-src"))
    wheels = root / "dist"
    pip("wheel", "--no-build-isolation", "-w", str(wheels), str(root))
    (wheel,) = wheels.glob("focus_plugin_demo-0.1.0-*.whl")
    target = tmp_path_factory.mktemp("plugin-site")
    pip("install", "--target", str(target), str(wheel))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")]),
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.pop("FOCUS_DATA", None)
    yield env
    shutil.rmtree(target)


def focus_eval(env, *args: str) -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).parent / "focus-eval"), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


def test_the_plugin_registers_an_adapter_a_preset_and_a_task(plugin_env):
    listed = focus_eval(plugin_env, "models", "plugin-*")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[1].split()[:4] == ["plugin-stats", "vm", "general", "channel_stats"]
    tasks = focus_eval(plugin_env, "tasks", "dr_synth_desktop_plugin")
    assert tasks.returncode == 0, tasks.stderr
    assert tasks.stdout.splitlines()[1].split()[:3] == ["dr_synth_desktop_plugin", "synth_desktop", "dr"]
    assert focus_eval({k: v for k, v in plugin_env.items() if k != "PYTHONPATH"},
                      "models", "plugin-*").returncode == 2  # without the package, no such preset


@pytest.mark.slow
def test_three_user_models_on_a_manifest_dataset_and_their_leaderboard(tmp_path, plugin_env):
    clinic = write_clinic(tmp_path / "clinic")
    data_root = tmp_path / "data"
    data_root.mkdir()
    vit = save_tiny_vit(tmp_path / "vit-folder", seed=1)
    other = save_tiny_vit(tmp_path / "other-vit", seed=2)
    preset = tmp_path / "presets" / "lab-vit.yaml"
    preset.parent.mkdir()
    preset.write_text(PRESET.format(name="lab-vit", adapter="hf_vision").replace("source: null", f"source: {other}")
                      .replace("size: 32", "size: 224"))
    out = tmp_path / "results"
    common = ["--tasks", "clinic", "--data-root", str(data_root), "--dataset-path", f"clinic={clinic}",
              "--output-path", str(out), "--n-boot", "50", "--num-workers", "0", "--no-progress",
              "--cache-dir", str(tmp_path / "cache")]
    for model in (["--model", "hf_vision", "--model-args", f"pretrained={vit}"], ["--model", str(preset)],
                  ["--model", "plugin-stats"]):
        done = focus_eval(plugin_env, *model, *common)
        assert done.returncode == 0, done.stderr[-3000:]
    written = {m: read_jsonl(out / m / "results.jsonl") for m in ("hf_vision-vit-folder", "lab-vit", "plugin-stats")}
    lines = {m: [r for r in rows if r.get("kind") != "group"] for m, rows in written.items()}
    for model, rows in lines.items():
        assert sorted(r["task"] for r in rows) == ["dr_clinic", "glaucoma_clinic", "referable_dr_clinic"]
        assert [(r["group"], r["model"]) for r in written[model] if r.get("kind") == "group"] == [("clinic", model)]
        assert all(r["n"] == 12 and r["metrics"]["auroc"] is not None for r in rows)

    site = tmp_path / "site"
    built = focus_eval(plugin_env, "leaderboard", str(out), "-o", str(site))
    assert built.returncode == 0, built.stderr
    pages = {m: (site / "models" / f"{m}.html").read_text() for m in lines}
    assert all("dr_clinic" in page for page in pages.values())
    # a run over a group (the dataset's generated group) writes group lines; the overview shows them
    assert '<section id="groups">' in (site / "index.html").read_text()
    # every results line records where its model came from (extra.provenance)
    provenance = {m: rows[0]["extra"]["provenance"] for m, rows in lines.items()}
    assert provenance["hf_vision-vit-folder"]["local"] is True and provenance["lab-vit"]["local"] is True
    assert provenance["plugin-stats"]["adapter_package"] == f"{PLUGIN} 0.1.0"
    assert "local files vit-folder (digest" in pages["hf_vision-vit-folder"]
    assert "family adapter hf_vision" in pages["hf_vision-vit-folder"]
    assert "local files other-vit" in pages["lab-vit"] and "user preset lab-vit.yaml" in pages["lab-vit"]
    assert f"adapter focus_plugin_demo.adapter:ChannelStats from {PLUGIN} 0.1.0" in pages["plugin-stats"]
    assert "badge-local" in (site / "index.html").read_text()

    private = tmp_path / "private-site"
    built = focus_eval(plugin_env, "leaderboard", str(out), "-o", str(private), "--no-samples")
    assert built.returncode == 0 and "no sample files (--no-samples: metrics only)" in built.stdout
    for path in private.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert IMAGE_PREFIX not in text and PATIENT_PREFIX not in text, path

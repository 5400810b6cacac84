"""Builders for the bring-your-own-model-and-data tests: a clinic's manifest dataset with its card, a user
adapter module, and a tiny plugin package laid out for ``pip wheel``."""

from __future__ import annotations

import csv
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

# Distinctive ids, so a test can search a whole site for them.
IMAGE_PREFIX = "CLINICIMG"
PATIENT_PREFIX = "CLINICPAT"

CARD = """\
description: Fundus photographs of a small clinic (synthetic, for tests).
manifest: {manifest}
columns: {{patient_id: patient, laterality: eye}}
targets:
  dr: {{column: dr_grade, positive: [1, 2, 3, 4], negative: [0], exclude: [ungradable]}}
  referable_dr: {{column: dr_grade, positive: [2, 3, 4], negative: [0, 1], exclude: [ungradable]}}
  glaucoma: {{column: glaucoma, positive: [1], negative: [0]}}
sex: {{male: [M], female: [F]}}
laterality: {{OD: [R], OS: [L]}}
"""


def manifest_rows(n_patients: int = 30, seed: int = 0) -> list[dict]:
    """Two eyes per patient; the DR grade shows in the image brightness, so a probe can learn it."""
    rng = np.random.RandomState(seed)
    rows = []
    for p in range(n_patients):
        for eye in ("R", "L"):
            grade = int(rng.randint(0, 5))
            rows.append({"image": f"images/{IMAGE_PREFIX}{p:03d}_{eye}.png", "patient": f"{PATIENT_PREFIX}{p:03d}",
                         "dr_grade": grade, "glaucoma": int(rng.randint(0, 2)), "age": 40 + p % 30,
                         "sex": "M" if p % 2 else "F", "eye": eye, "diabetic": "yes" if p % 3 else "no"})
    return rows


def write_images(folder: Path, rows: list[dict], seed: int = 0) -> None:
    rng = np.random.RandomState(seed)
    for row in rows:
        path = folder / row["image"]
        path.parent.mkdir(parents=True, exist_ok=True)
        grade = int(row["dr_grade"]) if str(row["dr_grade"]).isdigit() else 0
        pixels = rng.rand(48, 48, 3) * 80 + grade * 35
        Image.fromarray(pixels.clip(0, 255).astype("uint8"), "RGB").save(path)


def write_manifest(path: Path, rows: list[dict]) -> Path:
    """``rows`` as CSV or JSONL, by the file's suffix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return path
    columns = list(dict.fromkeys(k for r in rows for k in r))
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return path


def write_clinic(folder: Path, rows: list[dict] | None = None, manifest: str = "manifest.csv",
                 card: str | None = None) -> Path:
    """A manifest dataset folder: images, the manifest and ``dataset.yaml``; returns the folder."""
    rows = manifest_rows() if rows is None else rows
    write_images(folder, rows)
    write_manifest(folder / manifest, rows)
    (folder / "dataset.yaml").write_text(card if card is not None else CARD.format(manifest=manifest),
                                         encoding="utf-8")
    return folder


def save_tiny_vit(folder: Path, seed: int = 1) -> Path:
    from focus_eval.tiny.encoders import build_vit

    build_vit(folder, seed=seed)
    return folder


# A complete adapter outside focus-eval: image statistics per channel (mean, std, and a coarse 2x2 grid of means).
ADAPTER_SOURCE = '''\
"""An adapter written outside focus-eval: per-channel image statistics as the embedding."""

from focus_eval.adapters.base import EncoderAdapter


class ChannelStats(EncoderAdapter):
    """Mean and standard deviation of each channel, and the channel means of a 2 x 2 grid (18 numbers)."""

    settings_keys = frozenset({"scale"})

    def load(self):
        import torch

        self.model = torch.nn.Identity()
        self.embed_dim = 18
        self.weights_sha256 = None

    def embed_images(self, pixels):
        import torch

        x = pixels.to(self.device).float() * float(self.settings.get("scale", 1.0))
        grid = torch.nn.functional.adaptive_avg_pool2d(x, 2).flatten(1)
        return torch.cat([x.mean((2, 3)), x.std((2, 3)), grid], dim=1)
'''

PRESET = """\
name: {name}
family: vm
domain: general
adapter: {adapter}
source: null
dtype: float32
methods: [linear_probe]
description: Channel statistics ({name}).
preprocessing: {{size: 32, resize: squash, interpolation: bilinear, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5]}}
"""


def write_plugin_project(root: Path, package: str = "focus_plugin_demo") -> Path:
    """A tiny installable package: an adapter, a preset folder and a task folder, all through entry points."""
    pkg = root / package
    (pkg / "models").mkdir(parents=True)
    (pkg / "tasks").mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent('''\
        """A focus-eval plugin for tests: folders only here, so listing presets imports no model code."""
        from pathlib import Path

        MODELS_DIR = Path(__file__).parent / "models"
        TASKS_DIR = Path(__file__).parent / "tasks"
        '''))
    (pkg / "adapter.py").write_text(ADAPTER_SOURCE)
    (pkg / "models" / "plugin-stats.yaml").write_text(PRESET.format(name="plugin-stats", adapter="channel_stats"))
    (pkg / "tasks" / "dr_synth_desktop_plugin.yaml").write_text(textwrap.dedent("""\
        task: dr_synth_desktop_plugin
        include: _base_dr.yaml
        dataset: synth_desktop
        tag: []
        metadata:
          version: 1
          label_rule: icdr >= 1 -> 1 (as dr_synth_desktop)
          description: A task shipped by a plugin package.
        """))
    (root / "pyproject.toml").write_text(textwrap.dedent(f"""\
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "{package.replace('_', '-')}"
        version = "0.1.0"

        [project.entry-points."focus_eval.adapters"]
        channel_stats = "{package}.adapter:ChannelStats"

        [project.entry-points."focus_eval.models"]
        demo = "{package}:MODELS_DIR"

        [project.entry-points."focus_eval.tasks"]
        demo = "{package}:TASKS_DIR"

        [tool.setuptools]
        packages = ["{package}"]

        [tool.setuptools.package-data]
        {package} = ["models/*.yaml", "tasks/*.yaml"]
        """))
    return root


@pytest.fixture
def clean_cards(monkeypatch):
    """Dataset cards registered inside a test are forgotten after it (the dataset registry is process-wide)."""
    from focus_eval.data import manifests, registry

    registry.READERS.names()  # the built-in and entry-point readers are in place before the copy
    monkeypatch.setattr(registry.READERS, "_targets", dict(registry.READERS._targets))
    monkeypatch.setattr(registry.READERS, "_loaded", dict(registry.READERS._loaded))
    monkeypatch.setattr(registry, "_FOLDERS", dict(registry._FOLDERS))
    monkeypatch.setattr(manifests, "_CARDS", {})


def broken_distribution(root: Path, dist: str, module: str, groups: dict[str, str]) -> Path:
    """An installed distribution ``dist`` (a .dist-info folder in ``root``, to put on sys.path) whose entry points
    (group -> name) name ``module``, which raises when imported."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text("raise RuntimeError('this plugin is broken')\n")
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("".join(f"[{group}]\n{name} = {module}:THING\n\n"
                                                   for group, name in groups.items()))
    return root

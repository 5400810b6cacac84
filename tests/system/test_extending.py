"""Extending focus-eval without touching the package: a dataset reader, a scoring method and a model adapter,
each defined and registered in this test module (one class or function plus one registry call), a task file
and a preset file of the user's own, run end to end through the command line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from focus_eval.adapters import ADAPTERS, register
from focus_eval.adapters.base import EncoderAdapter
from focus_eval.cli import main
from focus_eval.data import registry
from focus_eval.data.cells import clean_id, dr_present, parse_grade
from focus_eval.data.matching import ImageMatcher, Listed, read_rows
from focus_eval.data.records import DatasetLoad
from focus_eval.data.spec import ReaderSpec
from focus_eval.data.tables import read_csv_rows, resolve_columns
from focus_eval.results.schema import read_jsonl, validate_result_dict
from focus_eval.runner.methods import METHODS, register_method
from focus_eval.runner.methods.base import EmbeddingMethod
from focus_eval.synth.render import fixture_image

pytestmark = pytest.mark.slow

# ---- an eleventh dataset: a clinic's labels.csv + images/ ----------------------------------------------

SPEC = ReaderSpec(name="eyeclinic", targets=("dr",), group_key="patient")


def read(folder: Path) -> DatasetLoad:
    label = folder / "labels.csv"
    headers, rows = read_csv_rows(label)
    columns = resolve_columns(headers, {"image": ("image",), "patient": ("patient",), "grade": ("grade",)}, label)

    def listed(row: dict) -> Listed:
        n = row["__row__"]
        name = clean_id(row[columns["image"]], label, n, "image")
        grade = parse_grade(row[columns["grade"]], range(5), label, n, "grade")
        return Listed(name, Path(name).stem, n, dict(
            patient_id=clean_id(row[columns["patient"]], label, n, "patient"), dr=dr_present(grade)))

    load = DatasetLoad(SPEC.name, folder, [])
    read_rows(load, ImageMatcher(folder, label, folder / "images"), rows, listed)
    return load


class EyeClinic:
    SPEC = SPEC
    read = staticmethod(read)


def write_clinic(folder: Path, patients: int = 40) -> None:
    (folder / "images").mkdir(parents=True)
    lines = ["image,patient,grade"]
    for p in range(patients):
        grade = 3 if p % 2 else 0
        for eye in ("OD", "OS"):
            name = f"c{p:03d}_{eye}.jpg"
            lines.append(f"{name},{p},{grade}")
            fixture_image({"dr_grade": grade, "eye": eye}, seed=p, size=96).save(folder / "images" / name)
    (folder / "labels.csv").write_text("\n".join(lines) + "\n")


# ---- a fourth method: nearest class centroid over the cached embeddings --------------------------------


class NearestCentroid(EmbeddingMethod):
    name = "centroid"
    families = ("vm", "vlm")
    splits = ("train", "test")
    hard_label = "pred = the nearer class centroid"

    def predict(self, context, unit, x_test, memo):
        rows, x = context.embeddings.matrix(context.records(unit, "train"))
        y = np.array([r.label(unit.task.target) for r in rows])
        distance = [np.linalg.norm(x_test - x[y == c].mean(axis=0), axis=1) for c in (0, 1)]
        logits = -np.stack(distance, axis=1)
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        score = p[:, 1] / p.sum(axis=1)
        return score, (score >= 0.5).astype(int), {"n_train": len(rows)}


# ---- a new model family: colour statistics on a grid -------------------------------------------------


class ColourGridAdapter(EncoderAdapter):
    """Mean colour of each cell of a grid over the image: a (weak) encoder with no weights."""

    settings_keys = frozenset({"grid"})

    def load(self) -> None:
        import torch

        self.model = torch.nn.AdaptiveAvgPool2d(int(self.settings.get("grid", 4)))
        self.embed_dim = 3 * int(self.settings.get("grid", 4)) ** 2

    def embed_images(self, pixels):
        return self.model(pixels.to(self.device).float()).flatten(1)


PRESET = """name: colour-grid
family: vm
domain: general
adapter: colour_grid
source: none
dtype: float32
methods: [linear_probe, centroid]
untrained: true
preprocessing: {size: 64, resize: squash, interpolation: bilinear, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5]}
settings: {grid: 4}
"""

TASK = """task: dr_eyeclinic
include: _base_dr.yaml
dataset: eyeclinic
metadata:
  version: 1.0
  label_rule: grade >= 1 -> 1, grade 0 -> 0
"""


@pytest.fixture
def extensions():
    registry.register_dataset("eyeclinic", EyeClinic)
    register_method("centroid", NearestCentroid)
    register("colour_grid", ColourGridAdapter)
    yield
    registry.READERS.unregister("eyeclinic")
    METHODS.unregister("centroid")
    ADAPTERS.unregister("colour_grid")


def test_a_reader_a_method_and_an_adapter_from_outside_run_end_to_end(tmp_path, extensions):
    write_clinic(tmp_path / "data" / "eyeclinic")
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "dr_eyeclinic.yaml").write_text(TASK)
    (tmp_path / "colour-grid.yaml").write_text(PRESET)
    assert main(["--model", str(tmp_path / "colour-grid.yaml"), "--tasks", "dr_eyeclinic", "--include-path",
                 str(tmp_path / "tasks"), "--data-root", str(tmp_path / "data"), "--output-path",
                 str(tmp_path / "out"), "--no-progress", "--num-workers", "0", "--n-boot", "50",
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    rows = {r["method"]: r for r in read_jsonl(tmp_path / "out" / "colour-grid" / "results.jsonl")}
    assert set(rows) == {"linear_probe", "centroid"}
    for row in rows.values():
        validate_result_dict(row)
        assert row["dataset"] == "eyeclinic" and row["n"] == 16  # 20% of 40 patients x 2 eyes
    centroid = rows["centroid"]
    assert centroid["extra"]["threshold_rule"] == "pred = the nearer class centroid"
    # the synthetic lesions change the colour statistics: both methods separate the classes
    assert centroid["metrics"]["auroc"] > 0.7 and rows["linear_probe"]["metrics"]["auroc"] > 0.7


def test_a_method_for_another_family_is_refused(tmp_path, extensions, capsys):
    preset = tmp_path / "colour-grid.yaml"
    preset.write_text(PRESET)
    register_method("only_mllm", type("OnlyMLLM", (NearestCentroid,), {"name": "only_mllm", "families": ("mllm",)}))
    try:
        assert main(["--model", str(preset), "--model-args", "methods=only_mllm", "--tasks", "dr_synth_desktop",
                     "--data-root", str(tmp_path)]) == 2
    finally:
        METHODS.unregister("only_mllm")
    err = capsys.readouterr().err
    assert "method(s) ['only_mllm'] serve mllm models" in err

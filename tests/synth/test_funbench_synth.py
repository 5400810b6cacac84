"""Synthetic data that discriminates: lesion counts and contrast drawn per grade and written to labels.csv, the
FunBench fields read back from them, screening prevalence, the renderer drawing exactly the lesions the labels
name, and, on the demo's data, efficientnet-lite0 well above chance and well below perfect on every yes/no
synthetic task."""

import csv
import json

import numpy as np
import pytest

from focus_eval.data.readers import synth
from focus_eval.synth.datasets import LESION_CONTRAST, LESION_RANGES, sample_images, write_dataset
from focus_eval.synth.render import FundusSpec, render_fundus


@pytest.mark.parametrize("name", ["synth_desktop", "synth_mobile"])
def test_lesion_counts_follow_the_grade_and_prevalence_is_that_of_screening(name):
    rows = sample_images(name, 300, seed=0)
    for r in rows:
        for kind, column in synth.LESION_COLUMNS.items():
            low, high = LESION_RANGES[r.icdr].get(kind, (0, 0))
            assert low <= getattr(r, column) <= high, (r.image, kind)
        low, high = (1.0, 1.0) if r.icdr == 0 else LESION_CONTRAST
        assert low <= r.lesion_contrast <= high
    dr = np.mean([r.icdr >= 1 for r in rows])
    referable = np.mean([r.icdr >= 2 or r.dme for r in rows])
    assert 0.22 <= dr <= 0.4 and 0.1 <= referable <= 0.25  # a third with any DR, fewer referable
    # counts overlap between neighbouring grades: counting does not grade
    for grade in (1, 2, 3):
        assert max(r.microaneurysms for r in rows if r.icdr == grade) > min(
            r.microaneurysms for r in rows if r.icdr == grade + 1), grade


def test_findings_and_conditions_are_read_from_the_drawn_lesions(tmp_path):
    folder = write_dataset(tmp_path / "synth_desktop", "synth_desktop", n=40, seed=3)
    assert json.loads((folder / "synth.json").read_text())["version"] == 2
    with open(folder / "labels.csv", newline="") as handle:
        table = {row["image"][:-4]: row for row in csv.DictReader(handle)}
    for record in synth.read(folder).records:
        row = table[record.image_id]
        bleeds = sum(int(row[c]) for c in ("dot_haemorrhages", "blot_haemorrhages", "flame_haemorrhages",
                                           "preretinal_haemorrhages"))
        assert record.findings["haemorrhage"] == int(bleeds > 0)
        assert record.findings["hard_exudate"] == int(int(row["exudates"]) > 0 or row["dme"] == "1")
        assert record.findings["microaneurysm"] == int(int(row["microaneurysms"]) > 0)
        assert record.laterality == {"OD": "right", "OS": "left"}[row["eye"]] and record.dr_grade == int(row["icdr"])
        flags = (("diabetic_retinopathy", row["icdr"] != "0"), ("macular_edema", row["dme"] == "1"),
                 ("glaucoma", row["glaucoma"] == "1"))
        expected = tuple(c for c, on in flags if on) or ("normal",)
        assert record.conditions == expected and record.abnormal == int(expected != ("normal",))
        assert record.extra["lesion_contrast"] == float(row["lesion_contrast"])


def test_the_renderer_draws_the_counts_it_is_given_at_the_contrast_it_is_given():
    def pixels(**kw):
        return np.asarray(render_fundus(FundusSpec(**kw), 5), np.float32)

    healthy = pixels(dr_grade=0)
    assert np.array_equal(pixels(dr_grade=3, lesions=()), healthy)  # no lesion named, none drawn
    bold = np.abs(pixels(dr_grade=2, lesions=(("blot_haemorrhage", 4),)) - healthy).sum()
    faint = np.abs(pixels(dr_grade=2, lesions=(("blot_haemorrhage", 4),), lesion_contrast=0.3) - healthy).sum()
    assert bold > 0 and 0 < faint < 0.5 * bold
    with pytest.raises(ValueError, match="unknown lesion kind"):
        pixels(dr_grade=2, lesions=(("drusen", 1),))
    with pytest.raises(ValueError, match="lesion_contrast"):
        FundusSpec(lesion_contrast=0)


@pytest.mark.slow
def test_efficientnet_lite0_is_neither_at_chance_nor_perfect_on_the_demo_data(tmp_path):
    """The demo's data (300 images per dataset, seed 0): every yes/no task between AUROC 0.70 and 0.97."""
    from focus_eval.cli import main
    from focus_eval.commands.demo import DEMO_TASKS
    from focus_eval.results.schema import read_jsonl
    from focus_eval.synth.datasets import write_synthetic

    write_synthetic(tmp_path / "data", n=300, seed=0)
    assert main(["--model", "efficientnet-lite0", "--tasks", DEMO_TASKS, "--data-root", str(tmp_path / "data"),
                 "--output-path", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), "--n-boot", "20",
                 "--no-progress"]) == 0
    rows = read_jsonl(tmp_path / "out" / "efficientnet-lite0" / "results.jsonl")
    aurocs = {r["task"]: r["metrics"]["auroc"] for r in rows}
    assert len(aurocs) == 6
    assert all(0.70 <= a <= 0.97 for a in aurocs.values()), aurocs

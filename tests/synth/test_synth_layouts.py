"""Miniature raw layouts of the ten real datasets, written with synthetic fundus pictures and read back
through the dataset registry."""

import pytest

from focus_eval.cli import main
from focus_eval.data.registry import load_dataset
from focus_eval.errors import FocusError
from focus_eval.synth import layouts

TARGETS = {"brset": ("dr", "referable_dr", "glaucoma"), "mbrset": ("dr", "referable_dr"), "papila": ("glaucoma",),
           "rfmid": ("dr",), "rfmid2": ("dr",), "idrid": ("dr", "referable_dr"), "messidor2": ("dr", "referable_dr"),
           "refuge": ("glaucoma",), "g1020": ("glaucoma",), "jsiec": ("dr", "referable_dr")}
TARGETS.update({"ddr": ("dr",), "retinal_lesions": ("dr",), "idrid_seg": (),
                "idrid_loc": ()})
TARGETS.update({"oia_odir": ("dr", "glaucoma"), "deepdrid": ("dr",), "octdl": (), "oct2017": ()})
TARGETS.update({"mmc_amd": (), "octid": (), "neh": (), "retouch": (), "top": ("dr", "glaucoma")})


@pytest.fixture(scope="module")
def real_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("real")
    assert main(["synth", "--out", str(root), "--layout", "real", "--seed", "3"]) == 0
    return root


@pytest.mark.parametrize("name", layouts.REAL_DATASETS)
def test_every_layout_loads_through_the_registry(real_root, name):
    load = load_dataset(name, real_root)
    assert load.records and {r.split for r in load.records} <= {"train", "val", "test"}
    for target in TARGETS[name]:
        assert {r.label(target) for r in load.records} >= {0, 1}, target
    first = load.records[0].path
    from PIL import Image
    with Image.open(first) as image:
        assert image.size[0] >= 32  # a rendered picture, not a placeholder


def test_layouts_are_deterministic_for_a_seed(tmp_path):
    a = layouts.write_layout("g1020", tmp_path / "a", seed=1)
    b = layouts.write_layout("g1020", tmp_path / "b", seed=1)
    c = layouts.write_layout("g1020", tmp_path / "c", seed=2)
    image = "G1020/G1020/Images/image_18.jpg"
    assert (a / image).read_bytes() == (b / image).read_bytes()
    assert (a / image).read_bytes() != (c / image).read_bytes()


def test_pictures_show_the_labels():
    import numpy as np

    image = layouts.picture_source(0)
    healthy = np.asarray(image({"dr_grade": 0, "seed": 5}), np.float32)
    severe = np.asarray(image({"dr_grade": 3, "seed": 5}), np.float32)
    assert np.abs(severe - healthy).max() > 40
    assert np.array_equal(np.asarray(image({"x": 1})), np.asarray(image({"x": 1})))


def test_unknown_dataset_is_a_clear_error(tmp_path):
    with pytest.raises(FocusError, match="no miniature raw layout for 'eyepacs'"):
        layouts.write_layout("eyepacs", tmp_path, 0)


def test_missing_writer_module_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(layouts, "REAL_DATASETS", layouts.REAL_DATASETS + ("nowhere",))
    with pytest.raises(FocusError, match=r"writer for 'nowhere' is missing \(module focus_eval.synth.raw_nowhere\)"):
        layouts.write_layout("nowhere", tmp_path, 0)

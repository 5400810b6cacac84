"""Lesion and optic disc masks that lie: a mask must have its image's size (the optic disc mask too: its centre
places every lesion), a binary mask is read as it is (any non-zero level is lesion, so a 0/1 mask is not read as
empty), and a mask with grey levels (a JPEG or resized copy) is read with the documented threshold and a warning
naming it. Before, a disc mask at another size moved every lesion sector silently, a 0/1 mask read as no lesion,
and a mask re-saved as RGB JPEG changed lesion edges and size bins without a word."""

from __future__ import annotations

import io
from functools import partial

import numpy as np
import pytest
from helpers import raw_layouts
from helpers.raw_layouts import raw_copy
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from focus_eval.data import lesion_geometry as geo
from focus_eval.data.files import admission
from focus_eval.data.registry import read_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_idrid_seg

solid = partial(raw_layouts.solid, green_blue=(0, 0))
TRUTHS = "A. Segmentation/2. All Segmentation Groundtruths/a. Training Set"


@pytest.fixture
def root(tmp_path):
    raw_copy(raw_idrid_seg, tmp_path / "idrid", seed=7, image=solid)
    return tmp_path


def test_an_optic_disc_mask_of_another_size_than_its_image_stops_the_load_naming_it(root):
    disc = root / "idrid" / TRUTHS / "5. Optic Disc" / "IDRiD_01_OD.tif"
    raw_idrid_seg.draw_mask([(31, 11, 39, 19)], size=(45, 30)).save(disc)  # half size: centre (34.5, 14.5)
    with pytest.raises(DataError) as caught:
        read_dataset("idrid_seg", root)
    assert caught.value.file == str(disc)
    assert "45 x 30 pixels, its image 90 x 60" in str(caught.value)


def test_a_lesion_mask_resaved_as_rgb_jpeg_is_thresholded_with_a_warning_naming_it(root):
    folder = root / "idrid" / TRUTHS / "2. Haemorrhages"
    tif = folder / "IDRiD_02_HE.tif"
    jpeg = tif.with_suffix(".jpg")
    Image.open(tif).convert("RGB").save(jpeg, quality=70)
    tif.unlink()
    load = read_dataset("idrid_seg", root)
    warning = next(w for w in load.warnings if "not binary" in w)
    assert warning.startswith("1 lesion mask(s) are not binary") and str(jpeg) in warning
    assert f"at least {geo.MASK_LEVEL} of 255" in warning
    record = load.by_id()["train/IDRiD_02"]
    assert record.findings["hemorrhage"] == 1 and record.lesion_quadrants["hemorrhage"] == ("temporal",)


def test_release_masks_give_no_warning(root):
    assert not any("not binary" in w for w in read_dataset("idrid_seg", root).warnings)


@pytest.mark.parametrize("levels", [(1,), (255,), (127, 255), (1, 2)])
def test_a_binary_mask_reads_every_non_zero_level_as_lesion(tmp_path, levels):
    array = np.zeros((6, 9), dtype=np.uint8)
    array[1, 2] = levels[0]
    array[4, 7] = levels[-1]
    Image.fromarray(array).save(tmp_path / "m.png")
    with admission() as tally:
        read = geo.read_mask(tmp_path / "m.png")
    assert read.sum() == 2 and read[1, 2] and read[4, 7]
    assert tally.warnings() == []


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 255), st.sampled_from(["L", "RGB", "I;16"]))
def test_any_binary_mask_reads_back_exactly_and_quietly(seed, level, mode):
    rng = np.random.default_rng(seed)
    truth = rng.random((12, 16)) < 0.3
    if mode == "I;16":
        image = Image.fromarray((truth * level * 257).astype(np.uint16))
    else:
        image = Image.fromarray((truth * level).astype(np.uint8), "L").convert(mode)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    with admission() as tally:
        read = geo.read_mask(buffer.getvalue())
    assert np.array_equal(read, truth) and tally.warnings() == []


def test_a_mask_with_grey_levels_is_thresholded_at_the_documented_level(tmp_path):
    array = np.zeros((6, 9), dtype=np.uint8)
    array[0, :] = np.arange(9) * 20  # 0, 20, ..., 160: a ramp, as a resized mask's edges
    Image.fromarray(array).save(tmp_path / "ramp.png")
    with admission() as tally:
        read = geo.read_mask(tmp_path / "ramp.png")
    assert list(read[0]) == [v >= geo.MASK_LEVEL for v in array[0]]
    (warning,) = tally.warnings()
    assert str(tmp_path / "ramp.png") in warning and "8 grey levels" in warning

"""Derived labels are not silently guessed: OIA-ODIR diagnostic keywords that match no keyword rule are counted
and reported (with their counts), not folded into 'other' without a word; lesion masks are binarised by one
level that survives JPEG copies, and a mask must match its image's size."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from focus_eval.data.lesion_geometry import MASK_LEVEL, components, read_mask
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_ddr, raw_oia_odir


def test_unmatched_oia_odir_keywords_are_reported_with_their_counts(tmp_path):
    raw_oia_odir.write(tmp_path / "oia_odir", seed=4, image=lambda labels: Image.new("RGB", (32, 32), (120, 60, 30)))
    load = load_dataset("oia_odir", tmp_path)
    (warning,) = [w for w in load.warnings if "match no rule" in w]
    assert warning.startswith("3 diagnostic keyword(s) match no rule and count as 'other' (3 eye(s)): ")
    for keyword in ("'laser spot' (1)", "'drusen' (1)", "'epiretinal membrane' (1)"):
        assert keyword in warning
    assert load.metadata["unmatched_keywords"] == {"laser spot": 1, "drusen": 1, "epiretinal membrane": 1}
    assert "normal fundus" not in warning and "lens dust" not in warning  # rules and quality remarks match


# --- lesion masks ----------------------------------------------------------------------------------------------
def mask_image(size=(120, 80)) -> Image.Image:
    """Five lesions: four bright boxes and one grey (127) one, as Retinal-Lesions marks some."""
    from PIL import ImageDraw

    image = Image.new("L", size, 0)
    draw = ImageDraw.Draw(image)
    for x in (10, 40, 70, 100):
        draw.rectangle((x, 20, x + 6, 30), fill=255)
    draw.rectangle((10, 50, 14, 54), fill=127)
    return image


@pytest.mark.parametrize("quality", [30, 60, 90])
def test_masks_copied_as_jpeg_keep_their_lesions(quality, tmp_path):
    truth = np.asarray(mask_image()) > 0
    path = tmp_path / "mask.jpg"
    mask_image().save(path, quality=quality)  # JPEG noise around every edge
    mask = read_mask(path)
    assert components(mask)[1] == components(truth)[1] == 5
    assert abs(int(mask.sum()) - int(truth.sum())) <= truth.sum() * 0.1


def _png(array: np.ndarray, mode: str) -> io.BytesIO:
    image = Image.fromarray(array, "L").convert(mode) if mode != "I;16" else \
        Image.fromarray(array.astype(np.uint16) * 257)  # a 16-bit mask
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    buffer.seek(0)
    return buffer


@given(st.integers(1, 255), st.sampled_from(["L", "RGB", "RGBA", "P", "I;16"]))
def test_the_mask_rule_is_one_rule_for_every_mode(level, mode):
    """A binary mask (one marking level, whatever it is) reads every marked pixel as lesion; a mask with grey
    levels is cut at MASK_LEVEL (of 255, or the same share of a 16-bit scale), in every mode."""
    binary = np.zeros((4, 4), dtype=np.uint8)
    binary[1:3, 1:3] = level
    assert np.array_equal(read_mask(_png(binary, mode)), binary > 0)
    grey = np.arange(256, dtype=np.uint8).reshape(16, 16)
    assert np.array_equal(read_mask(_png(grey, mode)), grey >= MASK_LEVEL)


def test_a_mask_of_another_size_than_its_image_is_refused(tmp_path):
    raw_ddr.write(tmp_path / "ddr", seed=0, image=lambda labels: Image.new("RGB", (32, 32), (120, 60, 30)))
    mask = next(p for p in (tmp_path / "ddr").rglob("*.tif") if "EX" in p.parts)
    Image.new("L", (40, 30), 0).save(mask)
    with pytest.raises(DataError, match=rf"{mask}: the \w+ mask is 40 x 30 pixels, its image 80 x 60"):
        load_dataset("ddr", tmp_path)

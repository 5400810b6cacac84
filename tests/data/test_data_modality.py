"""Imaging modality: a reader spec's default modality fills every record that sets none (existing readers give
"cfp"), readers of OCT and ultra-wide-field data set theirs, and the miniature OCT and UWF pictures look like
what they are."""

import numpy as np
import pytest

from focus_eval.data.registry import load_dataset, reader
from focus_eval.data.spec import ReaderSpec
from focus_eval.errors import FocusError
from focus_eval.synth.layouts import write_layout
from focus_eval.synth.modalities import oct_bscan, uwf_image
from focus_eval.synth.render import fixture_image


def test_spec_modality_defaults_to_colour_fundus_and_is_checked():
    assert ReaderSpec(name="x", targets=("dr",), group_key="image").modality == "cfp"
    assert reader("octdl").spec.modality == "oct" and reader("oct2017").spec.modality == "oct"
    with pytest.raises(FocusError, match="modality must be one of cfp, oct, uwf; got 'fundus'"):
        ReaderSpec(name="x", targets=("dr",), group_key="image", modality="fundus")


@pytest.mark.parametrize("name, modalities", [
    ("jsiec", {"cfp"}),  # builds its records itself
    ("idrid", {"cfp"}),  # through the shared row loop
    ("octdl", {"oct"}), ("oct2017", {"oct"}), ("deepdrid", {"cfp", "uwf"}),
])
def test_records_carry_their_modality(tmp_path, name, modalities):
    write_layout(name, tmp_path / name, seed=1)
    load = load_dataset(name, tmp_path)
    assert {r.modality for r in load.records} == modalities


def test_oct_bscan_is_a_speckled_greyscale_layered_band():
    picture = oct_bscan(3)
    assert picture.mode == "L" and picture.size == (128, 64)
    values = np.asarray(picture, dtype=float)
    rows = values.mean(axis=1)
    assert rows[:8].mean() < 30  # dark vitreous above the retina
    assert rows.max() > 3 * rows[:8].mean()  # a bright band
    centre = values[:, 40:90]
    assert centre.std() > 30  # speckle and layers, not a flat fill
    assert np.array_equal(values, np.asarray(oct_bscan(3), dtype=float))
    assert not np.array_equal(values, np.asarray(oct_bscan(4), dtype=float))


def test_uwf_image_is_wide_pseudo_colour_with_lashes_at_the_edges():
    picture = uwf_image(3)
    width, height = picture.size
    assert width > 1.3 * height
    rgb = np.asarray(picture, dtype=float)
    middle = rgb[height // 3: 2 * height // 3, width // 4: 3 * width // 4]
    assert middle[..., 0].mean() > middle[..., 2].mean() + 60  # red-green, little blue
    assert middle[..., 1].mean() > middle[..., 2].mean() + 40
    # the retina reaches the left and right edges, unlike a fundus photograph's dark surround
    edges = rgb[height // 2 - 4: height // 2 + 4, [2, width - 3]].mean()
    fundus = np.asarray(fixture_image({"seed": 3}), dtype=float)
    assert edges > 80 and edges > 2 * fundus[48, [1, 94]].mean()

"""Lesion geometry rules on hand-built masks: components, disc centre, fovea side and laterality, the nasal
side, sectors around the disc, size and count bins, and mask files in the formats the releases use."""

import numpy as np
import pytest
from PIL import Image

from focus_eval.data import lesion_geometry as geo
from focus_eval.errors import DataError


def mask(shape=(60, 90), boxes=()):
    """A boolean mask (rows, columns) with the given (x0, y0, x1, y1) boxes set, ends exclusive."""
    out = np.zeros(shape, dtype=bool)
    for x0, y0, x1, y1 in boxes:
        out[y0:y1, x0:x1] = True
    return out


def test_components_join_diagonal_neighbours_and_separate_gaps():
    m = mask(boxes=[(1, 1, 2, 2), (2, 2, 3, 3), (10, 10, 12, 12), (14, 10, 15, 11)])
    assert geo.components(m)[1] == 3  # the two diagonal pixels are one lesion
    assert geo.components(mask())[1] == 0


def test_centroid_is_the_disc_centre_of_an_od_mask():
    assert geo.centroid(mask(boxes=[(70, 20, 80, 30)])) == (74.5, 24.5)
    assert geo.centroid(mask()) is None


@pytest.mark.parametrize("disc, fovea, side, eye", [
    ((70, 30), (40, 32), "left", "right"),   # disc right of the fovea: a right eye
    ((20, 30), (50, 28), "right", "left"),
    ((20, 30), (20, 40), None, None),        # same column: undecided
    (None, (20, 40), None, None), ((20, 30), None, None, None)])
def test_fovea_side_and_laterality(disc, fovea, side, eye):
    assert geo.fovea_side(disc, fovea) == side
    assert geo.laterality(disc, fovea) == eye


@pytest.mark.parametrize("disc, fovea, width, nasal", [
    ((70, 30), (40, 30), None, "right"),  # away from the fovea
    ((20, 30), (50, 30), 90, "left"),     # the fovea wins over the image centre
    ((70, 30), None, 90, "right"),        # no fovea: away from the image centre (45)
    ((20, 30), None, 90, "left"),
    ((45, 30), None, 90, None),           # disc on the centre line
    ((70, 30), None, None, None), (None, (40, 30), 90, None)])
def test_nasal_side(disc, fovea, width, nasal):
    assert geo.nasal_side(disc, fovea, width) == nasal


@pytest.mark.parametrize("point, nasal, expected", [
    ((80, 31), "right", "nasal"), ((60, 29), "right", "temporal"),
    ((80, 31), "left", "temporal"), ((60, 29), "left", "nasal"),
    ((71, 10), "right", "superior"), ((69, 50), "right", "inferior"),
    ((80, 20), "right", "nasal"),   # |dx| == |dy|: the horizontal sector
    ((70, 30), "right", None)])     # on the disc centre
def test_sector_by_dominant_axis(point, nasal, expected):
    assert geo.sector(point, (70, 30), nasal) == expected


def test_sectors_place_each_component_by_its_centroid():
    disc = (70.0, 30.0)
    m = mask(boxes=[(10, 28, 14, 32), (68, 2, 72, 5), (20, 25, 23, 27)])  # temporal twice, superior once
    assert geo.sectors(m, disc, "right") == ("temporal", "superior")
    assert geo.sectors(m, disc, "left") == ("nasal", "superior")
    # a lesion spanning the disc's row is placed by its centroid only (here below the disc: inferior)
    assert geo.sectors(mask(boxes=[(66, 28, 74, 60)]), disc, "right") == ("inferior",)
    assert geo.sectors(mask(), disc, "right") == (geo.NOT_OBSERVED,)
    assert geo.sectors(m, None, "right") is None and geo.sectors(m, disc, None) is None


@pytest.mark.parametrize("pixels, expected", [(0, "none"), (1, "small"), (5, "small"), (6, "medium"),
                                              (53, "medium"), (54, "large"), (400, "large")])
def test_size_bins_by_area_fraction(pixels, expected):
    m = np.zeros(5400, dtype=bool)  # 0.1 % = 5.4 pixels, 1 % = 54 pixels
    m[:pixels] = True
    assert geo.size_bin(m.reshape(60, 90)) == expected


@pytest.mark.parametrize("count, expected", [(0, "none"), (1, "1-5"), (5, "1-5"), (6, "6-20"), (20, "6-20"),
                                             (21, "over_20"), (300, "over_20")])
def test_count_bins(count, expected):
    assert geo.count_bin(count) == expected


def test_count_bin_of_separate_dots():
    dots = mask(boxes=[(x, y, x + 1, y + 1) for x in range(0, 70, 3) for y in (0, 10)])  # 24 + 24 dots
    assert geo.components(dots)[1] == 48 and geo.count_bin(geo.components(dots)[1]) == "over_20"


def test_lesion_fields_of_one_image():
    masks = {"hemorrhage": mask(boxes=[(10, 28, 14, 32), (68, 50, 72, 54)]), "cotton_wool_spot": mask()}
    fields = geo.lesion_fields(masks, disc=(70.0, 30.0), fovea=(40.0, 30.0))
    assert fields == {
        "findings": {"hemorrhage": 1, "cotton_wool_spot": 0},
        "lesion_quadrants": {"hemorrhage": ("temporal", "inferior"), "cotton_wool_spot": ("not_observed",)},
        "lesion_size": {"hemorrhage": "medium", "cotton_wool_spot": "none"},  # 16 + 16 of 5400 pixels
        "lesion_count": {"hemorrhage": "1-5", "cotton_wool_spot": "none"}}
    no_disc = geo.lesion_fields(masks)
    assert no_disc["lesion_quadrants"] == {} and no_disc["findings"] == fields["findings"]
    # without a fovea the nasal side comes from the mask width (disc at x 70 of 90: nasal is the right)
    assert geo.lesion_fields(masks, disc=(70.0, 30.0))["lesion_quadrants"]["hemorrhage"] == ("temporal", "inferior")


@pytest.mark.parametrize("mode, value", [("L", 255), ("L", 127), ("1", 1), ("RGB", (255, 0, 0)), ("P", 1)])
def test_mask_files_in_release_formats(tmp_path, mode, value):
    image = Image.new(mode, (9, 6), 0)
    if mode == "P":
        image.putpalette([0, 0, 0, 200, 10, 10] + [0] * 762)
    image.putpixel((4, 2), value)
    path = tmp_path / "m.tif"
    image.save(path)
    read = geo.read_mask(path)
    assert read.shape == (6, 9) and read.sum() == 1 and read[2, 4]


def test_rgba_mask_ignores_alpha_and_unreadable_mask_names_the_file(tmp_path):
    image = Image.new("RGBA", (4, 4), (0, 0, 0, 255))
    image.save(tmp_path / "a.png")
    assert not geo.read_mask(tmp_path / "a.png").any()
    (tmp_path / "bad.tif").write_bytes(b"not an image")
    with pytest.raises(DataError) as info:
        geo.read_mask(tmp_path / "bad.tif")
    assert info.value.file == str(tmp_path / "bad.tif")

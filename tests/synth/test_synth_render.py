"""The procedural fundus renderer: deterministic per seed, and each label changes the picture where it should."""

import numpy as np
import pytest

from focus_eval.synth.render import FundusSpec, fixture_image, render_fundus, spec_from_labels


def pixels(spec, seed=7):
    return np.asarray(render_fundus(spec, seed), np.float32)


def test_same_seed_same_pixels_different_seed_different_pixels():
    spec = FundusSpec(dr_grade=3, dme=True, cdr=0.6)
    assert np.array_equal(pixels(spec, 1), pixels(spec, 1))
    assert np.abs(pixels(spec, 1) - pixels(spec, 2)).mean() > 2


def test_image_is_a_round_fundus_on_black_of_the_requested_size():
    image = render_fundus(FundusSpec(size=128), 0)
    assert image.size == (128, 128) and image.mode == "RGB"
    a = np.asarray(image, np.float32)
    assert a[:4, :4].max() < 10 and a[-4:, -4:].max() < 10  # corners outside the field
    centre = a[48:80, 48:80].mean(axis=(0, 1))
    assert centre[0] > centre[1] > centre[2] and centre[0] > 60  # orange-red retina


def test_lesions_darken_and_brighten_the_posterior_pole_only_with_dr():
    healthy, severe = pixels(FundusSpec(dr_grade=0)), pixels(FundusSpec(dr_grade=3))
    changed = np.abs(severe - healthy).max(axis=2) > 40
    assert changed.sum() > 300
    assert not changed[:20].any() and not changed[-20:].any()  # the periphery is untouched
    grades = [np.abs(pixels(FundusSpec(dr_grade=g)) - healthy).max(axis=2).__gt__(40).sum() for g in range(5)]
    assert grades[0] == 0 and grades[1] > 0 and grades[1] < grades[2] < grades[3]


def test_macular_edema_adds_yellow_exudates_near_the_fovea():
    plain, edema = pixels(FundusSpec(dr_grade=2)), pixels(FundusSpec(dr_grade=2, dme=True))
    diff = edema - plain
    yellow = (diff[..., 0] > 20) & (diff[..., 1] > 30)
    ys, xs = np.nonzero(yellow)
    assert len(ys) > 30
    assert np.hypot(ys.mean() - 128, xs.mean() - 128) < 40  # centred on the macula


def test_a_larger_cup_brightens_the_disc_and_nothing_else():
    small, large = pixels(FundusSpec(cdr=0.25)), pixels(FundusSpec(cdr=0.8))
    brighter = large.sum(axis=2) - small.sum(axis=2)
    ys, xs = np.nonzero(np.abs(brighter) > 30)
    assert len(ys) > 50 and brighter[ys, xs].mean() > 0
    assert xs.min() > 180  # the disc of a right eye sits on the image's right


def test_left_eye_mirrors_the_disc_side():
    small, large = pixels(FundusSpec(cdr=0.25, laterality="OS")), pixels(FundusSpec(cdr=0.8, laterality="OS"))
    xs = np.nonzero(np.abs(large.sum(axis=2) - small.sum(axis=2)) > 30)[1]
    assert xs.max() < 76


def test_inadequate_quality_blurs_or_darkens():
    sharpness = lambda a: np.abs(np.diff(a[64:192, 64:192, 1], axis=1)).mean()  # noqa: E731
    brightness = lambda a: a[64:192, 64:192].mean()  # noqa: E731
    for seed in range(6):
        good, bad = pixels(FundusSpec(), seed), pixels(FundusSpec(quality="inadequate"), seed)
        assert sharpness(bad) < 0.75 * sharpness(good) or brightness(bad) < 0.8 * brightness(good)


def test_device_shift_changes_field_colour_and_detail():
    desktop = pixels(FundusSpec(device="desktop"))
    mobile = pixels(FundusSpec(device="mobile"))
    # a narrower visible circle
    assert (mobile.max(axis=2) > 20).sum() < 0.95 * (desktop.max(axis=2) > 20).sum()
    # a yellow-green cast: less red relative to green
    red_to_green = lambda a: a[96:160, 96:160, 0].mean() / a[96:160, 96:160, 1].mean()  # noqa: E731
    assert red_to_green(mobile) < 0.8 * red_to_green(desktop)
    # lower native resolution: microaneurysms are smeared into fainter, wider spots
    def sharp_share(device):
        d = np.abs(pixels(FundusSpec(device=device, dr_grade=1), 0) - pixels(FundusSpec(device=device), 0)).max(axis=2)
        return (d > 40).sum() / (d > 15).sum()
    assert sharp_share("mobile") < 0.5 * sharp_share("desktop")


def test_spec_rejects_values_out_of_range():
    for bad in (dict(dr_grade=5), dict(cdr=1.2), dict(laterality="R"), dict(quality="good"), dict(device="phone")):
        with pytest.raises(ValueError):
            FundusSpec(**bad)


def test_fixture_image_maps_raw_label_keys():
    assert spec_from_labels({"icdr": "3", "edema": 1, "glaucoma": 1, "eye": "left", "quality": "no"}) == FundusSpec(
        dr_grade=3, dme=True, cdr=0.78, laterality="OS", quality="inadequate", size=96)
    assert spec_from_labels({"dr": 1, "cdr": 0.5}).dr_grade == 2
    assert spec_from_labels({"dr_grade": None, "referable_dr": 1}).dr_grade == 3
    assert spec_from_labels({"dataset": "x", "split": "train", "diagnosis": 2}) == FundusSpec(size=96)
    with pytest.raises(ValueError, match="glaucoma"):
        spec_from_labels({"glaucoma": "maybe"})


def test_fixture_image_seed_comes_from_the_labels():
    a = fixture_image({"dr_grade": 2, "seed": 11})
    assert a.size == (96, 96)
    assert np.array_equal(np.asarray(a), np.asarray(fixture_image({"dr_grade": 2}, seed=11)))
    assert not np.array_equal(np.asarray(a), np.asarray(fixture_image({"dr_grade": 2, "seed": 12})))
    assert np.array_equal(np.asarray(fixture_image({"dr": 1, "image_id": "x"})),
                          np.asarray(fixture_image({"image_id": "x", "dr": 1})))

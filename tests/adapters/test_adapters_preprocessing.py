"""Preset preprocessing: resize policies, normalisation, picklability, and the check against HF processors."""

import pickle

import numpy as np
import pytest
from PIL import Image

from focus_eval.adapters.preprocessing import ImageTransform, check_against_processor, transform_from_preset
from focus_eval.errors import FocusError
from focus_eval.presets import load_preset


def _flat(value: int, size=(300, 200)) -> Image.Image:
    return Image.new("RGB", size, (value, value, value))


def test_squash_output_shape_and_normalisation():
    t = ImageTransform(size=224, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), resize="squash")
    out = t(_flat(255))
    assert tuple(out.shape) == (3, 224, 224) and str(out.dtype) == "torch.float32"
    assert np.allclose(out.numpy(), 1.0)  # (1 - 0.5) / 0.5
    assert np.allclose(t(_flat(0)).numpy(), -1.0)


def test_imagenet_statistics_are_per_channel():
    t = transform_from_preset(load_preset("retfound-mae-cfp"))
    out = t(_flat(128)).numpy()
    expected = (128 / 255 - np.array([0.485, 0.456, 0.406])) / np.array([0.229, 0.224, 0.225])
    assert np.allclose(out.reshape(3, -1).mean(axis=1), expected, atol=1e-5)


def test_shorter_side_then_center_crop_keeps_the_middle():
    # A 512 x 256 image: left half black, right half white, with a red column in the exact centre.
    array = np.zeros((256, 512, 3), np.uint8)
    array[:, 256:] = 255
    array[:, 254:258] = (255, 0, 0)
    t = ImageTransform(size=224, mean=(0, 0, 0), std=(1, 1, 1), resize="shorter_side_then_center_crop",
                       interpolation="bilinear", resize_to=256)
    out = t(Image.fromarray(array)).numpy()
    assert out.shape == (3, 224, 224)
    # The crop is centred: the red column lands in the middle, black on the left edge, white on the right.
    assert out[0, 112, 111] > 0.9 and out[1, 112, 111] < 0.1
    assert out[:, 112, 0].max() < 0.05 and out[:, 112, -1].min() > 0.95
    assert t.source_size == 256


def test_longest_side_then_pad_anchors_top_left_with_black_canvas():
    t = ImageTransform(size=512, mean=(0, 0, 0), std=(1, 1, 1), resize="longest_side_then_pad",
                       interpolation="bilinear")
    out = t(_flat(255, size=(400, 200))).numpy()  # width 400, height 200 -> 512 x 256, padded below
    assert out.shape == (3, 512, 512)
    assert np.allclose(out[:, :256, :], 1.0)
    assert np.allclose(out[:, 256:, :], 0.0)


def test_center_padding_is_symmetric():
    t = ImageTransform(size=100, mean=(0, 0, 0), std=(1, 1, 1), resize="longest_side_then_pad",
                       pad_anchor="center")
    out = t(_flat(255, size=(100, 50))).numpy()
    assert np.allclose(out[:, :25], 0) and np.allclose(out[:, 25:75], 1) and np.allclose(out[:, 75:], 0)


def test_transform_pickles_for_dataloader_workers():
    t = transform_from_preset(load_preset("flair"))
    clone = pickle.loads(pickle.dumps(t))
    assert clone == t
    assert np.allclose(clone(_flat(100)).numpy(), t(_flat(100)).numpy())


def test_bad_preprocessing_is_an_error():
    preset = load_preset("vit-l16", {"preprocessing.resize": "stretch"})
    with pytest.raises(FocusError, match="resize must be one of"):
        transform_from_preset(preset)
    preset = load_preset("vit-l16", {"preprocessing.colour": "rgb"})
    with pytest.raises(FocusError, match="unknown keys"):
        transform_from_preset(preset)


def test_processor_mismatch_names_the_fields():
    from transformers import CLIPImageProcessor, ViTImageProcessor

    t = transform_from_preset(load_preset("vit-l16"))
    check_against_processor(t, ViTImageProcessor(size={"height": 224, "width": 224}, resample=2), "vit")
    with pytest.raises(FocusError, match=r"mean: preset .*interpolation|interpolation.*mean"):
        check_against_processor(t, CLIPImageProcessor(), "vit")
    clip = transform_from_preset(load_preset("clip-vit-b32"))
    check_against_processor(clip, CLIPImageProcessor(), "clip")
    with pytest.raises(FocusError, match="size: preset 224, checkpoint 448"):
        check_against_processor(t, ViTImageProcessor(size={"height": 448, "width": 448}, resample=2), "vit")

"""Every decode path applies the EXIF orientation tag: a file stored turned or mirrored, with the tag saying so,
decodes to the upright picture, as every image viewer shows it.

The stored pixels of each orientation are written here with numpy, from the EXIF definition of the tag (where
the stored first row and column are to be shown), not from Pillow's table, and saved losslessly (PNG with an
eXIf chunk), so the comparisons are exact."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image

from focus_eval.data.images import image_size, open_fundus, open_image

ORIENTATION = 0x0112
# orientation -> the stored pixels of an upright picture (rows are y, columns x)
STORED = {
    1: lambda a: a,
    2: lambda a: a[:, ::-1],  # mirrored left-right
    3: lambda a: a[::-1, ::-1],  # turned half a circle
    4: lambda a: a[::-1, :],  # mirrored top-bottom
    5: lambda a: a.transpose(1, 0, 2),  # mirrored along the main diagonal
    6: lambda a: np.rot90(a, 1),  # shown after a quarter turn clockwise
    7: lambda a: np.rot90(a, 2).transpose(1, 0, 2),  # mirrored along the other diagonal
    8: lambda a: np.rot90(a, -1),  # shown after a quarter turn anticlockwise
}


def upright(height: int = 24, width: int = 40) -> np.ndarray:
    """A picture with no symmetry: any turn or mirror changes it."""
    return np.random.default_rng(0).integers(0, 256, (height, width, 3), dtype=np.uint8)


def tagged(pixels: np.ndarray, orientation: int, fmt: str = "PNG", **save) -> bytes:
    exif = Image.Exif()
    exif[ORIENTATION] = orientation
    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(STORED[orientation](pixels))).save(buffer, format=fmt, exif=exif, **save)
    return buffer.getvalue()


@pytest.mark.parametrize("orientation", sorted(STORED))
def test_each_orientation_decodes_to_the_upright_picture(tmp_path, orientation):
    pixels = upright()
    path = tmp_path / f"o{orientation}.png"
    path.write_bytes(tagged(pixels, orientation))
    with Image.open(path) as stored:  # the file really holds other pixels (but for orientation 1)
        assert (np.asarray(stored.convert("RGB")).shape == pixels.shape) == (orientation < 5)
    np.testing.assert_array_equal(np.asarray(open_image(path)), pixels)
    np.testing.assert_array_equal(np.asarray(open_image(path.read_bytes())), pixels)
    assert image_size(path) == (pixels.shape[1], pixels.shape[0])
    assert open_image(path).mode == "RGB"


@pytest.mark.parametrize("orientation", [2, 6, 7])
def test_the_fundus_crop_sees_the_upright_picture(tmp_path, orientation):
    square = np.zeros((48, 64, 3), dtype=np.uint8)
    square[8:40, 10:42] = upright(32, 32)  # a "fundus" off-centre on a black border
    (tmp_path / "up.png").write_bytes(tagged(square, 1))
    (tmp_path / "turned.png").write_bytes(tagged(square, orientation))
    for size in (None, 16):
        np.testing.assert_array_equal(np.asarray(open_fundus(tmp_path / "turned.png", size)),
                                      np.asarray(open_fundus(tmp_path / "up.png", size)))


def test_a_draft_decoded_jpeg_is_turned_after_the_draft(tmp_path):
    """JPEG draft decoding reduces the stored picture first; the turn applies to the reduced picture, which
    is the same as the reduced upright picture's pixels turned (the same decoded bytes both ways)."""
    pixels = np.repeat(np.repeat(upright(30, 50), 8, axis=0), 8, axis=1)  # 240 x 400
    path = tmp_path / "o6.jpg"
    path.write_bytes(tagged(pixels, 6, "JPEG", quality=95))
    with Image.open(path) as plain:
        plain.draft("RGB", (60, 60))
        stored = np.asarray(plain.convert("RGB"))
    decoded = np.asarray(open_image(path, draft=60))
    assert decoded.shape[:2] == (60, 100)  # drafted to an eighth, then turned upright (wider than high)
    np.testing.assert_array_equal(decoded, np.rot90(stored, -1))


def test_lesion_masks_follow_their_orientation_tag_and_keep_their_mode(tmp_path):
    from focus_eval.data.lesion_geometry import image_shape, read_mask

    mask = np.zeros((6, 10), dtype=np.uint8)
    mask[1, 7] = 255
    exif = Image.Exif()
    exif[ORIENTATION] = 8
    Image.fromarray(np.ascontiguousarray(STORED[8](mask[..., None])[..., 0]), mode="L").save(
        tmp_path / "mask.png", exif=exif)
    read = read_mask(tmp_path / "mask.png")
    assert read.shape == (6, 10) and read.sum() == 1 and read[1, 7]
    assert image_shape(tmp_path / "mask.png") == (6, 10)
    assert open_image(tmp_path / "mask.png", keep_mode=True).mode == "L"


def test_the_server_decodes_a_data_url_upright():
    from focus_eval.adapters.openai_server import decode_image

    pixels = upright()
    url = "data:image/png;base64," + base64.b64encode(tagged(pixels, 5)).decode()
    np.testing.assert_array_equal(np.asarray(decode_image(url)), pixels)

"""Fundus decoding (draft decoding, black-border crop, corrupt files) and the prepared image cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, JpegImagePlugin

from focus_eval.data.images import fundus_box, open_fundus
from focus_eval.data.prepare import prepare_records, prepared_path, read_corrupt
from focus_eval.data.records import ImageRecord
from focus_eval.errors import DataError


def fundus_photo(path: Path, size=(800, 600), box=(50, -50, 750, 650)) -> Path:
    """A bright disc on black, cut off at top and bottom like a real 4:3 fundus photo, with burnt-in text."""
    image = Image.new("RGB", size, (0, 0, 0))
    draw = ImageDraw.Draw(image)
    draw.ellipse(box, fill=(190, 95, 45))
    draw.rectangle((5, 5, 12, 9), fill=(255, 255, 255))  # a small label in the border must not widen the crop
    image.save(path, quality=92)
    return path


def test_crop_is_a_square_around_the_fundus(tmp_path):
    path = fundus_photo(tmp_path / "f.jpg")
    with Image.open(path) as image:
        left, top, right, bottom = fundus_box(image.convert("RGB"))
    assert right - left == bottom - top
    assert abs(left - 50) <= 12 and abs(right - 750) <= 12 and abs(top + 50) <= 12
    out = np.asarray(open_fundus(path, 100))
    assert out.shape == (100, 100, 3)
    assert out[50, 50, 0] > 150  # fundus in the centre
    assert out[50, 2, 0] > 100 and out[50, 97, 0] > 100  # the disc fills the width
    assert out[0, 50].max() < 30 and out[99, 50].max() < 30  # padded with black where the disc is cut off


def test_draft_decoding_is_used_for_jpeg_with_a_target_size(tmp_path, monkeypatch):
    path = fundus_photo(tmp_path / "f.jpg")
    requests = []
    original = JpegImagePlugin.JpegImageFile.draft

    def spy(self, mode, size):
        requests.append(size)
        return original(self, mode, size)

    monkeypatch.setattr(JpegImagePlugin.JpegImageFile, "draft", spy)
    assert open_fundus(path, 64).size == (64, 64)
    assert requests == [(64, 64)]
    open_fundus(path)
    assert requests == [(64, 64)]


def test_no_size_keeps_resolution_and_png_alpha_is_black(tmp_path):
    path = tmp_path / "f.png"
    image = Image.new("RGBA", (300, 200), (0, 0, 0, 0))
    ImageDraw.Draw(image).ellipse((50, 0, 250, 200), fill=(200, 100, 50, 255))
    image.save(path)
    out = open_fundus(path)
    assert out.mode == "RGB" and abs(out.size[0] - 200) <= 6 and out.size[0] == out.size[1]


def test_truncated_and_garbage_files_name_the_file(tmp_path):
    good = fundus_photo(tmp_path / "good.jpg")
    truncated = tmp_path / "truncated.jpg"
    truncated.write_bytes(good.read_bytes()[:1500])
    garbage = tmp_path / "garbage.jpg"
    garbage.write_bytes(b"this is not an image")
    for path in (truncated, garbage):
        with pytest.raises(DataError, match="cannot decode image") as info:
            open_fundus(path, 64)
        assert str(path) in str(info.value)


def _records(root: Path, names: list[str]) -> list[ImageRecord]:
    return [ImageRecord(dataset="demo", image_id=n, patient_id=n, path=root / "demo" / "img" / n,
                        relpath=f"img/{n}") for n in names]


def test_prepare_writes_skips_and_reports_corrupt_files(tmp_path):
    folder = tmp_path / "demo" / "img"
    folder.mkdir(parents=True)
    for name in ("a.jpg", "b.jpg", "c.JPG"):
        fundus_photo(folder / name)
    (folder / "bad.jpg").write_bytes(b"broken")
    records = _records(tmp_path, ["a.jpg", "b.jpg", "c.JPG", "bad.jpg"])

    report = prepare_records(records, tmp_path, "demo", 32, workers=2, progress=False)
    assert (report.total, report.written, report.already_prepared) == (4, 3, 0)
    assert list(report.corrupt) == ["img/bad.jpg"]
    target = prepared_path(tmp_path, "demo", 32, records[0])
    assert target == tmp_path / ".prepared" / "v1" / "demo" / "32" / "img" / "a.jpg.jpg"
    with Image.open(target) as image:
        assert image.size == (32, 32) and image.format == "JPEG"
    assert read_corrupt(tmp_path, "demo", 32) == report.corrupt

    again = prepare_records(records, tmp_path, "demo", 32, workers=1, progress=False)
    assert (again.written, again.already_prepared, list(again.corrupt)) == (0, 3, ["img/bad.jpg"])

    fundus_photo(folder / "bad.jpg")  # the user replaces the damaged file
    fixed = prepare_records(records, tmp_path, "demo", 32, workers=1, progress=False)
    assert (fixed.written, fixed.corrupt) == (1, {})
    assert read_corrupt(tmp_path, "demo", 32) == {}

"""RETOUCH reader on a miniature copy of its training and test releases: MetaImage headers read as text and raw
volumes with numpy (8-bit and big-endian 16-bit), one record per B-scan with its slice written as PNG once, the
findings, size and count bins of IRF, SRF and PED from the reference slice, volumes as patients, and the
header checks."""

import numpy as np
import pytest
from PIL import Image

from focus_eval.data.readers import retouch
from focus_eval.data.registry import load_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_retouch

# per B-scan of every volume: (findings irf, srf, ped), (size bins), (count bins), stated by hand from the writer
SLICES = [((0, 0, 0), ("none", "none", "none"), ("none", "none", "none")),
          ((1, 0, 0), ("medium", "none", "none"), ("1-5", "none", "none")),
          ((0, 1, 0), ("none", "medium", "none"), ("none", "1-5", "none")),
          ((0, 0, 1), ("none", "none", "large"), ("none", "none", "1-5"))]
VOLUMES = [("Cirrus", "TRAIN001"), ("Cirrus", "TRAIN002"), ("Cirrus", "TRAIN003"), ("Spectralis", "TRAIN025"),
           ("Spectralis", "TRAIN026"), ("Spectralis", "TRAIN027"), ("Topcon", "TRAIN049"), ("Topcon", "TRAIN050"),
           ("Topcon", "TRAIN051")]


@pytest.fixture
def folder(tmp_path):
    raw_retouch.write(tmp_path / "retouch", seed=2, image=None)
    return tmp_path / "retouch"


def test_row_by_row(folder):
    load = retouch.read(folder)
    expected = [(f"{v}/{c}/{z:03d}", f"{v}/{c}", *row) for v, c in VOLUMES for z, row in enumerate(SLICES)]
    got = [(r.image_id, r.patient_id, tuple(r.findings[k] for k in ("irf", "srf", "ped")),
            tuple(r.lesion_size[k] for k in ("irf", "srf", "ped")),
            tuple(r.lesion_count[k] for k in ("irf", "srf", "ped"))) for r in load.records]
    assert got == expected
    assert all(r.modality == "oct" and not r.lesion_quadrants for r in load.records)
    assert load.warnings == ["1 test-set volume(s) without a reference are not read"]
    assert load.metadata["vendors"] == ["Cirrus", "Spectralis", "Topcon"]


def test_bscans_are_the_volume_slices_scaled_to_8_bit(folder):
    load = retouch.read(folder)
    record = next(r for r in load.records if r.image_id == "Spectralis/TRAIN025/002")
    volume = retouch.read_volume(folder / "RETOUCH" / "RETOUCH-TrainingSet-Spectralis" / "TRAIN025" / "oct.mhd")
    assert volume.dtype.byteorder == ">" and volume.shape == raw_retouch.SHAPE
    picture = np.asarray(Image.open(folder / record.relpath))
    scaled = np.round((volume[2].astype(float) - volume.min()) / (volume.max() - volume.min()) * 255)
    assert picture.shape == (32, 48) and np.array_equal(picture, scaled.astype(np.uint8))
    before = (folder / record.relpath).stat().st_mtime_ns
    retouch.read(folder)  # a second read reuses the written slices
    assert (folder / record.relpath).stat().st_mtime_ns == before


def test_loader_splits_by_volume(folder):
    load = load_dataset("retouch", folder.parent)
    by_volume = {}
    for r in load.records:
        by_volume.setdefault(r.patient_id, set()).add(r.split)
    assert len(by_volume) == 9 and all(len(s) == 1 for s in by_volume.values())
    assert {s for splits in by_volume.values() for s in splits} == {"train", "val", "test"}


def test_header_errors_name_the_file(folder):
    case = folder / "RETOUCH" / "RETOUCH-TrainingSet-Topcon" / "TRAIN050"
    text = (case / "oct.mhd").read_text()
    (case / "oct.mhd").write_text(text.replace("MET_UCHAR", "MET_COMPLEX"))
    with pytest.raises(DataError, match="ElementType"):
        retouch.read(folder)
    (case / "oct.mhd").write_text(text)
    (case / "oct.raw").write_bytes((case / "oct.raw").read_bytes()[:-5])
    with pytest.raises(DataError, match="oct.raw: .* bytes"):
        retouch.read(folder)


def test_no_training_volume_is_an_error(tmp_path):
    (tmp_path / "RETOUCH-TestSet-Cirrus" / "TEST001").mkdir(parents=True)
    with pytest.raises(DataError, match="no RETOUCH training volumes"):
        retouch.read(tmp_path)

"""Miniature RETOUCH in its raw layout: ``RETOUCH-TrainingSet-<Vendor>/TRAIN<nnn>/`` with ``oct.mhd``/``oct.raw``
and ``reference.mhd``/``reference.raw`` for three vendors (Spectralis stored as 16-bit big-endian, the others as
8-bit), and one test-set volume without a reference. Every volume has four B-scans of 32 x 48 whose reference
slices are fixed (tests state them by hand): slice 0 none, slice 1 one IRF region, slice 2 two SRF regions,
slice 3 a large PED. ``seed`` only varies the B-scans' pixels.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from focus_eval.synth.modalities import oct_bscan
from focus_eval.synth.raw_common import ImageFn, image_labels

SHAPE = (4, 32, 48)  # B-scans, depth, width
CASES = {"Cirrus": ("TRAIN001", "TRAIN002", "TRAIN003"), "Spectralis": ("TRAIN025", "TRAIN026", "TRAIN027"),
         "Topcon": ("TRAIN049", "TRAIN050", "TRAIN051")}


def reference() -> np.ndarray:
    ref = np.zeros(SHAPE, dtype=np.uint8)
    ref[1, 10:13, 20:24] = 1  # one IRF region: 12 of 1,536 voxels (0.8%: medium)
    ref[2, 20:22, 5:8] = 2  # two SRF regions, 12 voxels in all (medium)
    ref[2, 20:22, 30:33] = 2
    ref[3, 24:32, 0:48] = 3  # PED over a quarter of the slice (large)
    return ref


def _write(case: Path, name: str, volume: np.ndarray, element: str, big: bool) -> None:
    z, y, x = volume.shape
    case.mkdir(parents=True, exist_ok=True)
    (case / f"{name}.raw").write_bytes(volume.astype(volume.dtype.newbyteorder(">" if big else "<")).tobytes())
    (case / f"{name}.mhd").write_text(
        f"ObjectType = Image\nNDims = 3\nBinaryData = True\nBinaryDataByteOrderMSB = {big}\n"
        f"DimSize = {x} {y} {z}\nElementSpacing = 0.01 0.004 0.05\nElementType = {element}\n"
        f"ElementDataFile = {name}.raw\n", encoding="utf-8")


def _volume(vendor: str, case: str, seed: int) -> np.ndarray:
    slices = [np.asarray(oct_bscan(image_labels("retouch", f"{case}/{z}", case, seed)["seed"], width=SHAPE[2],
                                   height=SHAPE[1]), dtype=np.uint16) for z in range(SHAPE[0])]
    volume = np.stack(slices)
    return (volume * 64).astype(np.uint16) if vendor == "Spectralis" else volume.astype(np.uint8)


def write(folder: Path, seed: int, image: ImageFn) -> None:
    root = Path(folder) / "RETOUCH"
    for vendor, cases in CASES.items():
        for case in cases:
            where = root / f"RETOUCH-TrainingSet-{vendor}" / case
            volume = _volume(vendor, case, seed)
            _write(where, "oct", volume, "MET_USHORT" if vendor == "Spectralis" else "MET_UCHAR",
                   big=vendor == "Spectralis")
            _write(where, "reference", reference(), "MET_UCHAR", big=False)
    test = root / "RETOUCH-TestSet-Cirrus" / "TEST001"
    _write(test, "oct", _volume("Cirrus", "TEST001", seed), "MET_UCHAR", big=False)

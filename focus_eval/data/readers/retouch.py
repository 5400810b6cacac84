"""Reader for RETOUCH (Bogunovic et al. 2019, "RETOUCH: the retinal OCT fluid detection and segmentation
benchmark and challenge", IEEE TMI 38:1858-1874): macular OCT volumes of three vendors' devices, one folder per
volume. The training release extracts to ``RETOUCH-TrainingSet-<Vendor>/TRAIN<nnn>/`` (vendor Cirrus,
Spectralis or Topcon) holding ``oct.mhd`` + ``oct.raw`` (the volume) and ``reference.mhd`` + ``reference.raw``
(a voxel label map: 0 background, 1 intraretinal fluid (IRF), 2 subretinal fluid (SRF), 3 pigment epithelial
detachment (PED)). The test release (``RETOUCH-TestSet-<Vendor>/TEST<nnn>/``) has no reference and is not read;
its volumes are counted in a warning. Folders are found at any depth.

A ``.mhd`` file is a plain-text MetaImage header (``key = value`` lines); the reader takes ``NDims`` (3),
``DimSize`` (x y z: B-scan width, depth, number of B-scans), ``ElementType`` (MET_UCHAR, MET_CHAR, MET_USHORT,
MET_SHORT, MET_UINT, MET_INT, MET_FLOAT), ``ElementDataFile`` (beside the header), ``HeaderSize`` (bytes to skip,
default 0) and ``BinaryDataByteOrderMSB`` / ``ElementByteOrderMSB``, and reads the raw file with numpy.

Each B-scan (one z index) becomes one image: it is written once as an 8-bit PNG (the volume scaled from its
minimum to its maximum) under ``focus_slices/<Vendor>/<case>/<z>.png`` inside the dataset folder, and reused
afterwards; the folder must be writable on the first read. Labels per B-scan, from the same slice of the
reference: ``findings`` (irf, srf, ped: 1 when the slice has any voxel of the label), ``lesion_size`` and
``lesion_count`` (the lesion geometry rules of ``data.lesion_geometry``; no quadrants: a B-scan has no optic disc).
The patient is the volume (one eye of one patient); no split is published for the training release, so the
loader's seeded, volume-grouped 60/20/20 split applies. Modality "oct".
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
from PIL import Image

from focus_eval.data.lesion_geometry import lesion_fields
from focus_eval.data.matching import add_image, usable_file
from focus_eval.data.records import DatasetLoad
from focus_eval.data.spec import ReaderSpec
from focus_eval.errors import DataError

LESIONS = {"irf": 1, "srf": 2, "ped": 3}
SLICES = "focus_slices"

SPEC = ReaderSpec(
    name="retouch",
    targets=(),
    group_key="volume (TRAIN<nnn>: one eye of one patient)",
    modality="oct",
    label_rules={
        "findings": "irf / srf / ped: 1 when the B-scan's slice of reference.raw has any voxel labelled 1 / 2 / 3",
        "lesion_size": "the share of the slice's voxels with the label, binned as data.lesion_geometry.SIZE_BINS",
        "lesion_count": "connected regions of the label in the slice, binned as data.lesion_geometry.COUNT_BINS",
    },
)

_TYPES = {"MET_UCHAR": "u1", "MET_CHAR": "i1", "MET_USHORT": "u2", "MET_SHORT": "i2", "MET_UINT": "u4",
          "MET_INT": "i4", "MET_FLOAT": "f4"}
_CASE = re.compile(r"^TRAIN\d+$", re.IGNORECASE)
_VENDOR = re.compile(r"RETOUCH-(Training|Test)Set-(\w+)$", re.IGNORECASE)


def read_header(path: Path) -> dict[str, str]:
    header = {}
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if line.strip():
            if "=" not in line:
                raise DataError(f"{path.name}: line {n} is not 'key = value'", file=str(path), row=n)
            key, value = line.split("=", 1)
            header[key.strip()] = value.strip()
    return header


def read_volume(path: Path) -> np.ndarray:
    """The volume a ``.mhd`` header describes, as a (z, y, x) array: B-scans along the first axis."""
    header = read_header(path)
    where = str(path)
    if header.get("NDims", "3") != "3":
        raise DataError(f"{path.name}: NDims {header.get('NDims')} (a volume needs 3)", file=where)
    try:
        x, y, z = (int(v) for v in header["DimSize"].split())
        dtype = np.dtype(_TYPES[header["ElementType"]])
    except (KeyError, ValueError) as exc:
        raise DataError(f"{path.name}: DimSize (three numbers) and ElementType (one of {', '.join(_TYPES)}) are "
                        f"needed ({exc})", file=where) from None
    big = any(header.get(k, "False").lower() == "true" for k in ("BinaryDataByteOrderMSB", "ElementByteOrderMSB"))
    dtype = dtype.newbyteorder(">" if big else "<")
    data = path.parent / header.get("ElementDataFile", path.with_suffix(".raw").name)
    if not data.is_file() or data.resolve().parent != path.resolve().parent:
        raise DataError(f"{path.name}: data file {data.name} is missing beside the header", file=where)
    raw = data.read_bytes()[int(header.get("HeaderSize", "0") or 0):]
    if len(raw) != x * y * z * dtype.itemsize:
        raise DataError(f"{data.name}: {len(raw)} bytes, the header's {x} x {y} x {z} {header['ElementType']} "
                        f"needs {x * y * z * dtype.itemsize}", file=str(data))
    return np.frombuffer(raw, dtype=dtype).reshape(z, y, x)


def _cases(folder: Path) -> tuple[list[tuple[str, Path]], int]:
    """(vendor, case folder) of every training volume with a reference, and the number of test volumes."""
    cases, tests = [], 0
    for dirpath, dirnames, _ in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != SLICES)
        match = _VENDOR.search(Path(dirpath).name)
        if not match:
            continue
        for name in dirnames:
            case = Path(dirpath) / name
            if match.group(1).lower() == "test":
                tests += (case / "oct.mhd").is_file()
            elif _CASE.match(name) and (case / "reference.mhd").is_file():
                cases.append((match.group(2).capitalize(), case))
    return cases, tests


def _slices(folder: Path, vendor: str, case: Path, volume: np.ndarray) -> list[Path]:
    """The volume's B-scans as 8-bit PNG files, written where missing."""
    out = folder / SLICES / vendor / case.name
    out.mkdir(parents=True, exist_ok=True)
    low, high = float(volume.min()), float(volume.max())
    paths = []
    for z in range(volume.shape[0]):
        path = out / f"{z:03d}.png"
        if not path.is_file() or path.stat().st_size == 0:
            scaled = (volume[z].astype(np.float64) - low) / ((high - low) or 1.0) * 255.0
            Image.fromarray(np.round(scaled).astype(np.uint8), mode="L").save(path)
        paths.append(path)
    return paths


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    load = SPEC.new_load(folder)
    cases, tests = _cases(folder)
    if not cases:
        raise DataError(f"no RETOUCH training volumes under {folder}; expected RETOUCH-TrainingSet-<Vendor>/"
                        f"TRAIN<nnn>/ with oct.mhd and reference.mhd", file=str(folder))
    root = folder.resolve()
    for vendor, case in cases:
        volume, reference = read_volume(case / "oct.mhd"), read_volume(case / "reference.mhd")
        if volume.shape != reference.shape:
            raise DataError(f"{case.name}: reference {reference.shape} and volume {volume.shape} differ",
                            file=str(case / "reference.mhd"))
        for z, path in enumerate(_slices(folder, vendor, case, volume)):
            image_id = f"{vendor}/{case.name}/{z:03d}"
            fields = lesion_fields({name: reference[z] == value for name, value in LESIONS.items()})
            del fields["lesion_quadrants"]
            fields.update(patient_id=f"{vendor}/{case.name}", modality="oct",
                          extra={"vendor": vendor, "volume": case.name, "bscan": z})
            add_image(load, root, usable_file(folder, path, case / "oct.mhd", z, image_id), image_id, fields)
    if tests:
        load.warnings.append(f"{tests} test-set volume(s) without a reference are not read")
    return SPEC.finish_load(load, {f"{v}/{c.name}": str((c / "reference.mhd").relative_to(folder))
                                   for v, c in cases}, vendors=sorted({v for v, _ in cases}))

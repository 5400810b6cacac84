"""Miniature OCTDL in its raw layout: ``OCTDL/<CLASS>/<file_name>.jpg`` B-scans of the seven classes and
``OCTDL_labels.csv`` beside the folder (``file_name`` without extension, ``disease``, ``subcategory``,
``condition``, ``patient_id``, ``eye`` OD/OS, ``sex``, ``year``); patients with several B-scans, one patient with
scans of two classes, and one label row whose image is missing. The patients are chosen so that the seeded
patient split puts normal and abnormal scans in both val and test.

Labels and file names are fixed (tests state them by hand); ``seed`` only varies the pictures, drawn by
``focus_eval.synth.modalities.oct_bscan``.
"""

from __future__ import annotations

from pathlib import Path

from focus_eval.synth.modalities import oct_bscan
from focus_eval.synth.raw_common import ImageFn, image_labels

HEADER = "file_name,disease,subcategory,condition,patient_id,eye,sex,year,image_width,image_hight"
# (file_name, disease, subcategory, patient_id, eye, sex); the patient of a row determines its split
ROWS = [
    ("amd_1001_1", "AMD", "MNV", 1, "OD", "M"), ("amd_1001_2", "AMD", "MNV", 1, "OD", "M"),
    ("amd_1002_1", "AMD", "Drusen", 2, "OS", "F"), ("amd_1003_1", "AMD", "MNV", 3, "OS", "F"),
    ("dme_1004_1", "DME", "", 4, "OD", "M"), ("dme_1005_1", "DME", "", 5, "OS", "F"),
    ("erm_1006_1", "ERM", "", 6, "OD", "F"), ("erm_1003_1", "ERM", "", 3, "OD", "F"),
    ("no_1007_1", "NO", "", 7, "OD", "M"), ("no_1007_2", "NO", "", 7, "OS", "M"),
    ("no_1008_1", "NO", "", 8, "OS", "F"), ("no_1009_1", "NO", "", 9, "OD", "M"),
    ("rao_1010_1", "RAO", "", 10, "OS", "M"), ("rvo_1011_1", "RVO", "BRVO", 11, "OD", "F"),
    ("vid_1012_1", "VID", "MH", 12, "OS", "M"), ("vid_1013_1", "VID", "VMT", 13, "OD", "F"),
    ("no_1020_1", "NO", "", 20, "OS", "F"), ("no_1015_1", "NO", "", 15, "OD", "M"),
    ("amd_1016_1", "AMD", "Drusen", 16, "OD", "M"), ("dme_1017_1", "DME", "", 17, "OS", "F"),
    ("rvo_1018_1", "RVO", "CRVO", 18, "OS", "M"), ("no_1021_1", "NO", "", 21, "OD", "F"),
]
MISSING = {"vid_1012_1"}


def write(folder: Path, seed: int, image: ImageFn) -> None:
    root = Path(folder)
    lines = [HEADER]
    for name, disease, subcategory, patient, eye, sex in ROWS:
        lines.append(f"{name},{disease},{subcategory},{'normal' if disease == 'NO' else disease},{patient},{eye},"
                     f"{sex},2021,128,64")
        if name in MISSING:
            continue
        path = root / "OCTDL" / disease / f"{name}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        oct_bscan(image_labels("octdl", name, str(patient), seed)["seed"]).save(path, format="JPEG", quality=90)
    (root / "OCTDL_labels.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")

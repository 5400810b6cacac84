"""The synthetic datasets ``synth_desktop`` and ``synth_mobile``: sampled patients, their labels, and rendered
photographs, written in the raw layout that ``focus_eval.data.readers.synth`` reads."""

from __future__ import annotations

import csv
import io
import json
import math
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np

from focus_eval.data.readers.synth import CONTRAST_COLUMN, IMAGES_DIR, LABELS_FILE, LESION_COLUMNS, MANIFEST_FILE
from focus_eval.errors import FocusError
from focus_eval.files import atomic_write_bytes, atomic_write_text
from focus_eval.synth.render import FundusSpec, render_fundus

VERSION = 2  # 2: lesion counts and contrast in labels.csv, graded difficulty, screening prevalence
DATASET_DEVICES = {"synth_desktop": "desktop", "synth_mobile": "mobile"}
IMAGE_SIZES = {"desktop": 256, "mobile": 224}
PATIENT_PREFIXES = {"synth_desktop": "d", "synth_mobile": "m"}
# Share of patients per ICDR grade of the worse eye: a diabetic screening population (about a third with any
# retinopathy, few with sight-threatening disease), still holding every grade in a few hundred images.
DR_LEVELS = {"desktop": (0.66, 0.13, 0.11, 0.06, 0.04), "mobile": (0.68, 0.13, 0.10, 0.05, 0.04)}
DME_BY_GRADE = (0.0, 0.08, 0.3, 0.45, 0.5)  # chance that an eye of this grade has macular edema
GLAUCOMA_PATIENTS = 0.22
# Lesions drawn per ICDR grade, (low, high) per kind: ranges overlap between neighbouring grades, and mild
# retinopathy may show a single microaneurysm, so grading is not a matter of counting.
LESION_RANGES: dict[int, dict[str, tuple[int, int]]] = {
    0: {},
    1: {"microaneurysm": (1, 6), "dot_haemorrhage": (0, 1)},
    2: {"microaneurysm": (2, 8), "dot_haemorrhage": (0, 4), "blot_haemorrhage": (0, 1), "exudate_cluster": (0, 1),
        "cotton_wool": (0, 1)},
    3: {"microaneurysm": (5, 14), "dot_haemorrhage": (4, 10), "blot_haemorrhage": (2, 6),
        "flame_haemorrhage": (1, 3), "exudate_cluster": (1, 4), "cotton_wool": (1, 3)},
    4: {"microaneurysm": (5, 14), "dot_haemorrhage": (4, 10), "blot_haemorrhage": (2, 6),
        "flame_haemorrhage": (1, 3), "exudate_cluster": (1, 4), "cotton_wool": (1, 3), "new_vessels": (1, 2),
        "preretinal_haemorrhage": (0, 1)},
}
LESION_CONTRAST = (0.3, 0.85)  # lesion opacity per image, uniform: from barely visible to plain
INADEQUATE_IMAGES = 0.17  # about one in six, enough for the quality metrics of a small test split
MIN_IMAGES = 10


@dataclass
class SynthImage:
    """One row of ``labels.csv``; field names and order are the file's columns (the reader's COLUMNS, then a
    count per lesion kind drawn, then the lesion contrast)."""

    image: str
    patient: str
    eye: str
    icdr: int
    dme: int
    cdr: float
    glaucoma: int
    age: int
    sex: str
    quality: str
    device: str
    microaneurysms: int = 0
    dot_haemorrhages: int = 0
    blot_haemorrhages: int = 0
    flame_haemorrhages: int = 0
    preretinal_haemorrhages: int = 0
    exudates: int = 0
    cotton_wool: int = 0
    new_vessels: int = 0
    lesion_contrast: float = 1.0

    def spec(self) -> FundusSpec:
        lesions = tuple((kind, getattr(self, column)) for kind, column in LESION_COLUMNS.items())
        return FundusSpec(dr_grade=self.icdr, dme=bool(self.dme), cdr=self.cdr, laterality=self.eye,
                          quality=self.quality, device=self.device, size=IMAGE_SIZES[self.device],
                          age=self.age, sex=self.sex, lesions=lesions, lesion_contrast=self.lesion_contrast)


def write_synthetic(out: Path, n: int = 200, seed: int = 0, workers: int = 1) -> dict[str, Path]:
    """Write ``out/synth_desktop`` and ``out/synth_mobile`` with ``n`` images each; returns name -> folder.
    A folder already written with the same ``n`` and ``seed`` is kept as it is."""
    return {name: write_dataset(Path(out) / name, name, n, seed, workers) for name in DATASET_DEVICES}


def write_dataset(folder: Path, name: str, n: int, seed: int, workers: int = 1) -> Path:
    if name not in DATASET_DEVICES:
        raise FocusError(f"unknown synthetic dataset {name!r}; expected one of {sorted(DATASET_DEVICES)}")
    manifest = {"dataset": name, "device": DATASET_DEVICES[name], "n": n, "seed": seed, "version": VERSION}
    rows = sample_images(name, n, seed)
    folder = Path(folder)
    if _up_to_date(folder, manifest, rows):
        return folder
    (folder / IMAGES_DIR).mkdir(parents=True, exist_ok=True)
    jobs = [(str(folder / IMAGES_DIR / row.image), row.spec(), _render_seed(name, seed, i))
            for i, row in enumerate(rows)]
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            list(pool.map(_render_to_file, jobs, chunksize=16))
    else:
        for job in jobs:
            _render_to_file(job)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=[f.name for f in fields(SynthImage)], lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(asdict(row) for row in rows)
    atomic_write_text(folder / LABELS_FILE, buffer.getvalue())
    # written last: a folder with a manifest is complete
    atomic_write_text(folder / MANIFEST_FILE, json.dumps(manifest, indent=2) + "\n")
    return folder


def sample_images(name: str, n: int, seed: int) -> list[SynthImage]:
    """The label rows of one synthetic dataset: ceil(n / 2) patients with two eyes each (the last patient has
    one eye when n is odd). Class shares are met exactly, then shuffled, so that small datasets still hold
    positives of every target."""
    if n < MIN_IMAGES:
        raise FocusError(f"a synthetic dataset needs at least {MIN_IMAGES} images, got {n}")
    if seed < 0:
        raise FocusError(f"the seed must be a non-negative integer, got {seed}")
    device = DATASET_DEVICES[name]
    rng = np.random.default_rng([seed, list(DATASET_DEVICES).index(name)])
    patients = math.ceil(n / 2)
    levels = _quota(DR_LEVELS[device], patients, rng)
    glaucoma = _quota((1 - GLAUCOMA_PATIENTS, GLAUCOMA_PATIENTS), patients, rng)
    sexes = _quota((0.5, 0.5), patients, rng)
    inadequate = set(np.nonzero(_quota((1 - INADEQUATE_IMAGES, INADEQUATE_IMAGES), n, rng))[0].tolist())
    rows: list[SynthImage] = []
    for p in range(patients):
        patient = f"{PATIENT_PREFIXES[name]}{p + 1:04d}"
        age = int(np.clip(round(rng.normal(60 if glaucoma[p] else 56, 14)), 20, 90))
        worse = "OD" if rng.random() < 0.5 else "OS"
        for eye in ("OD", "OS"):
            if len(rows) == n:
                break
            grade = _eye_grade(int(levels[p]), eye == worse, rng)
            has_glaucoma = int(glaucoma[p] and (eye == worse or rng.random() < 0.75))
            rows.append(SynthImage(
                image=f"{patient}_{eye}.jpg", patient=patient, eye=eye, icdr=grade,
                dme=int(rng.random() < DME_BY_GRADE[grade]), cdr=_cup(bool(glaucoma[p]), bool(has_glaucoma), rng),
                glaucoma=has_glaucoma, age=age, sex=("male", "female")[int(sexes[p])],
                quality="inadequate" if len(rows) in inadequate else "adequate", device=device,
                **_lesions(grade, rng)))
    return rows


def _quota(shares: tuple[float, ...], count: int, rng: np.random.Generator) -> np.ndarray:
    """Category indices in exact proportion to ``shares`` (largest remainder), in random order."""
    raw = np.array(shares) / sum(shares) * count
    counts = np.floor(raw).astype(int)
    remainders = np.round(raw - counts, 9)  # rounded so that equal shares tie exactly and the lower index wins
    for i in np.argsort(-remainders, kind="stable")[: count - counts.sum()]:
        counts[i] += 1
    return rng.permutation(np.repeat(np.arange(len(shares)), counts))


def _eye_grade(level: int, worse: bool, rng: np.random.Generator) -> int:
    """Both eyes of a diabetic patient tend to share a grade; the fellow eye is at most one grade better."""
    if worse or level == 0 or rng.random() < 0.6:
        return level
    return level - 1


def _lesions(grade: int, rng: np.random.Generator) -> dict:
    """The lesion counts (SynthImage columns) and contrast of one eye of ``grade``."""
    counts = {LESION_COLUMNS[kind]: int(rng.integers(low, high + 1))
              for kind, (low, high) in LESION_RANGES[grade].items()}
    contrast = round(float(rng.uniform(*LESION_CONTRAST)), 2) if grade else 1.0
    return {**counts, CONTRAST_COLUMN: contrast}


def _cup(patient_glaucoma: bool, eye_glaucoma: bool, rng: np.random.Generator) -> float:
    """Vertical cup-to-disc ratios that overlap between glaucomatous and healthy eyes, as in clinics."""
    if eye_glaucoma:
        return round(float(rng.uniform(0.55, 0.88)), 2)
    if patient_glaucoma:  # the fellow eye of a glaucoma patient often has a borderline cup
        return round(float(rng.uniform(0.45, 0.62)), 2)
    if rng.random() < 0.12:  # large physiological cups exist in healthy eyes
        return round(float(rng.uniform(0.5, 0.68)), 2)
    return round(float(rng.uniform(0.15, 0.52)), 2)


def _render_seed(name: str, seed: int, index: int) -> int:
    return (seed * len(DATASET_DEVICES) + list(DATASET_DEVICES).index(name)) * 1_000_000 + index


def _render_to_file(job: tuple[str, FundusSpec, int]) -> None:
    path, spec, seed = job
    buffer = io.BytesIO()
    render_fundus(spec, seed).save(buffer, format="JPEG", quality=95)
    atomic_write_bytes(path, buffer.getvalue())


def _up_to_date(folder: Path, manifest: dict, rows: list[SynthImage]) -> bool:
    try:
        written = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (written == manifest and (folder / LABELS_FILE).is_file()
            and all((folder / IMAGES_DIR / row.image).is_file() for row in rows))
